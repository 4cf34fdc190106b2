//go:build unix

package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// The test binary plays the plugin's binary: the guard (GuardArg) and, for
// TestGuardKillsThePluginWhenThePluginsProcessDies, the process that runs
// a credential plugin and dies.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		os.Exit(RunGuard(os.Args[2:]))
	}
	if kc := os.Getenv("KUBE_TEST_PARENT_KUBECONFIG"); kc != "" {
		clients, err := guardedClients(kc)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_, err = clients.Typed.Discovery().ServerVersion() // waits on the plugin
		fmt.Fprintln(os.Stderr, "the plugin returned:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func guardedClients(kubeconfig string) (*Clients, error) {
	flags := genericclioptions.NewConfigFlags(false)
	m := Tune(flags, "kubectl-terminating/test")
	m.GuardExec = true
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.AddFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", kubeconfig}); err != nil {
		return nil, err
	}
	return New(flags)
}

// execKubeconfig writes a kubeconfig whose user gets its credential from
// the plugin script (client-go reads a user's credentials only for https).
func execKubeconfig(t *testing.T, server, script string) string {
	t.Helper()
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, server, plugin)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// Under the guard the plugin is what it was: its credential reaches the
// server, it sees the ExecCredential, and not the guard's own variable.
func TestGuardedPluginGivesItsCredential(t *testing.T) {
	auth := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "env")
	kc := execKubeconfig(t, srv.URL, fmt.Sprintf(`env > %q
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"guarded-token"}}'
`, out))
	clients, err := guardedClients(kc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients.Typed.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	if got := <-auth; got != "Bearer guarded-token" {
		t.Errorf("Authorization %q", got)
	}
	env, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "KUBERNETES_EXEC_INFO=") || strings.Contains(string(env), guardParentEnv) {
		t.Errorf("the plugin's environment:\n%s", env)
	}
}

// A plugin that hangs, and a child of its own, do not outlive the process
// that ran them, even one killed with SIGKILL (which nothing can catch).
func TestGuardKillsThePluginWhenThePluginsProcessDies(t *testing.T) {
	pids := t.TempDir()
	kc := execKubeconfig(t, "https://127.0.0.1:1", fmt.Sprintf(`echo $$ > %[1]q/plugin.tmp && mv %[1]q/plugin.tmp %[1]q/plugin
sleep 300 &
echo $! > %[1]q/child.tmp && mv %[1]q/child.tmp %[1]q/child
wait
`, pids))
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), "KUBE_TEST_PARENT_KUBECONFIG="+kc)
	parent.Stderr = os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	plugin, child := readPid(t, filepath.Join(pids, "plugin")), readPid(t, filepath.Join(pids, "child"))
	if !alive(plugin) || !alive(child) {
		t.Fatalf("the plugin (%d) or its child (%d) is not running", plugin, child)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(plugin) || alive(child) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(plugin, syscall.SIGKILL)
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("10s after its process died, the plugin (alive %t) or its child (alive %t) still runs", alive(plugin), alive(child))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if b, err := os.ReadFile(file); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s was never written: the plugin did not start", file)
	return 0
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: kill(0) said it exists
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
