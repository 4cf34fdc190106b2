package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hangingPluginKubeconfig is the lab's kubeconfig with a user whose
// credential plugin hangs, and a child of its own with it; the plugin writes
// both pids into dir.
func hangingPluginKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	plugin := filepath.Join(dir, "plugin.sh")
	script := fmt.Sprintf(`#!/bin/sh
echo $$ > %[1]q/plugin.tmp && mv %[1]q/plugin.tmp %[1]q/plugin
sleep 300 &
echo $! > %[1]q/child.tmp && mv %[1]q/child.tmp %[1]q/child
wait
`, dir)
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: plugged
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}
contexts:
- name: lab
  context: {cluster: lab, user: plugged, namespace: default}
current-context: lab
`, theLab.Server, plugin)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// startPlugin starts the plugin binary; the function it returns waits for it.
func startPlugin(t *testing.T, args ...string) (*exec.Cmd, func() result) {
	t.Helper()
	cmd := exec.Command(plugin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "NO_COLOR=")
	// A credential plugin left running holds stderr open: Wait must not
	// wait for it once the plugin binary has ended.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	return cmd, func() result {
		t.Helper()
		defer timer.Stop()
		return resultOf(t, cmd.Wait(), &out, &errOut, args)
	}
}

// A credential plugin that hangs: the run ends at --timeout, says it waited
// for the plugin and never contacted the cluster, and neither the plugin nor
// its child outlives it; the same after Ctrl-C, within a second or so.
func TestHangingCredentialPlugin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		stop  func(*exec.Cmd)
		want  string
		bound time.Duration
	}{
		{"timeout", []string{"list", "-A", "--timeout", "3s"}, nil, "timed out: --timeout 3s, the bound on the whole run, expired while waiting for the credential plugin", 15 * time.Second},
		{"Ctrl-C", []string{"list", "-A"}, func(c *exec.Cmd) { _ = c.Process.Signal(os.Interrupt) }, "interrupted while waiting for the credential plugin", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kc := hangingPluginKubeconfig(t, dir)
			began := time.Now()
			cmd, wait := startPlugin(t, append([]string{"--kubeconfig", kc}, tc.args...)...)
			pluginPid, childPid := readPid(t, filepath.Join(dir, "plugin")), readPid(t, filepath.Join(dir, "child"))
			stopped := time.Now()
			if tc.stop != nil {
				tc.stop(cmd)
			} else {
				stopped = began
			}
			res := wait()
			took := time.Since(stopped)
			t.Logf("exit %d %s after the start or the signal; stderr %s", res.code, took.Round(time.Millisecond), res.stderr)
			if res.code != 1 || took > tc.bound || !strings.Contains(res.stderr, tc.want) || !strings.Contains(res.stderr, "no request reached the cluster") || strings.Contains(res.stderr, "cannot reach") {
				t.Errorf("exit %d after %s, stderr %q; want exit 1 within %s saying %q", res.code, took.Round(time.Millisecond), res.stderr, tc.bound, tc.want)
			}
			deadline := time.Now().Add(10 * time.Second)
			for processAlive(pluginPid) || processAlive(childPid) {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pluginPid, syscall.SIGKILL)
					_ = syscall.Kill(childPid, syscall.SIGKILL)
					t.Fatalf("10s after the run, the credential plugin (alive %t) or its child (alive %t) still runs", processAlive(pluginPid), processAlive(childPid))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Ctrl-C ends a run within a second: here a wait on an object that stays.
func TestInterruptEndsAWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if err := env.Namespace(ctx, "interrupt"); err != nil {
		t.Fatal(err)
	}
	if err := env.ConfigMapWithFinalizer(ctx, "interrupt", "held", "e2e.example.com/hold"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = env.Client.CoreV1().ConfigMaps("interrupt").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{})
	}()
	cmd, wait := startPlugin(t, "--kubeconfig", theLab.Kubeconfig, "wait", "configmap/held", "-n", "interrupt", "--timeout", "5m")
	time.Sleep(3 * time.Second) // watching by now
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	res := wait()
	took := time.Since(sent)
	t.Logf("exit %d %s after SIGINT; stderr %s", res.code, took.Round(time.Millisecond), res.stderr)
	if res.code != 1 || took > 3*time.Second || !strings.HasPrefix(res.stderr, "error: interrupted") || strings.Count(res.stderr, "\n") != 1 {
		t.Errorf("exit %d %s after SIGINT, stderr %q; want exit 1 within a second or so, 'error: interrupted'", res.code, took.Round(time.Millisecond), res.stderr)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s was never written: the credential plugin did not start", file)
	return 0
}

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
