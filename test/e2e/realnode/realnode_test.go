package realnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/realnode"
)

// The lab and the real node the suite shares.
var (
	theLab *lab.Lab
	node   *realnode.Node
	client *kubernetes.Clientset
	plugin string
)

// TestMain starts a lab of its own (its own ports and directory, so it never
// meets the main e2e suite's) and a real node in it, and stops both at the
// end, on failure and on an interrupt. The suite runs only when asked
// (REALNODE_E2E=1, as `make e2e-realnode` sets): it needs root and cgroups,
// and says so plainly when the machine lacks them.
func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if os.Getenv("REALNODE_E2E") != "1" {
		fmt.Println("realnode: NOT RUN: the real-node suite runs only with `make e2e-realnode` (REALNODE_E2E=1)")
		return 0
	}
	root, _ := filepath.Abs("../../..")
	labBin := envOr("LAB_BIN_DIR", filepath.Join(root, ".lab", "bin"))
	nodeBin := envOr("REALNODE_BIN_DIR", filepath.Join(labBin, "realnode"))
	plugin = envOr("PLUGIN_BIN", filepath.Join(root, "bin", "kubectl-terminating"))
	// A run killed outright (SIGKILL, a panic) never ran Stop: tear its node
	// down first, its kernel settings written back.
	recovered, err := realnode.Recover(filepath.Join(os.TempDir(), "ktrn-*", "node", realnode.StateFile))
	for _, r := range recovered {
		fmt.Println("realnode: tore down a node an earlier run left:", r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode: NOT RUN: tearing down what an earlier run left:", err)
		return 1
	}
	if err := realnode.Preflight(nodeBin); err != nil {
		fmt.Fprintln(os.Stderr, "realnode: NOT RUN:", err)
		return 1
	}
	for _, f := range []string{plugin, filepath.Join(labBin, "kube-apiserver")} {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(os.Stderr, "realnode: NOT RUN: %s is missing: run `make build lab-bin`\n", f)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "ktrn-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	ctx := context.Background()
	start := time.Now()
	theLab, err = lab.Start(ctx, lab.Options{BinDir: labBin, Dir: filepath.Join(dir, "lab")})
	if err != nil {
		fmt.Fprintf(os.Stderr, "realnode: starting the lab: %v (logs in %s)\n", err, dir)
		return 1
	}
	defer theLab.Stop()
	labUp := time.Since(start)
	// An interrupt tears the node down before the process goes.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	stopOnce := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(os.Stderr, "realnode: %v: tearing the node down\n", s)
			if node != nil {
				if err := node.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, "realnode:", err)
				}
			}
			theLab.Stop()
			os.Exit(1)
		case <-stopOnce:
		}
	}()
	defer close(stopOnce)
	start = time.Now()
	node, err = realnode.Start(ctx, theLab, realnode.Options{BinDir: nodeBin, Dir: filepath.Join(dir, "node"), Name: "realnode-1"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "realnode: starting the real node: %v (logs in %s)\n", err, dir)
		return 1
	}
	ready := time.Since(start)
	if client, err = realnode.Clientset(theLab); err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	info := corev1.NodeSystemInfo{}
	if n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err == nil {
		info = n.Status.NodeInfo
	}
	fmt.Printf("realnode: lab up in %s, node %s (%s, netns %s, kubelet %s, %s) Ready in %s; logs in %s\n",
		labUp.Round(100*time.Millisecond), node.Name, node.IP, node.NetNS, info.KubeletVersion, info.ContainerRuntimeVersion,
		ready.Round(100*time.Millisecond), dir)
	code := m.Run()
	start = time.Now()
	if err := node.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "realnode: tearing the node down:", err)
		code = 1
	} else {
		fmt.Printf("realnode: node torn down in %s, the machine as it was (kernel settings written back: %s)\n",
			time.Since(start).Round(100*time.Millisecond), strings.Join(node.Restored, ", "))
	}
	if err := realnode.CheckNetworkRule(filepath.Join(dir, "lab"), filepath.Join(dir, "node")); err != nil {
		fmt.Fprintln(os.Stderr, "realnode: the network rule:", err)
		code = 1
	}
	if code == 0 && os.Getenv("REALNODE_KEEP") == "" {
		_ = os.RemoveAll(dir) // kept after a failure, or with REALNODE_KEEP=1
	}
	return code
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// until polls cond every 250 ms until it holds, failing the test after timeout.
func until(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: last error %v", timeout, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// namespace makes a namespace whose default service account exists (the
// admission of a pod needs it).
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "the default service account of "+name, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return name
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the plugin as a user would, against the lab.
func run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", theLab.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the plugin %v: %v", args, err)
	}
	return r
}

type report struct {
	Items []struct {
		Stuck    bool   `json:"stuck"`
		Severity string `json:"severity"`
		Causes   []struct {
			Code    string `json:"code"`
			Summary string `json:"summary"`
		} `json:"causes"`
	} `json:"items"`
}

// TestRealNodeNormalDeletion: a pod on the real node, deleted, is reported
// progressing while the kubelet shuts it down, then gone.
func TestRealNodeNormalDeletion(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-normal")
	grace, no := int64(30), false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName: node.Name, TerminationGracePeriodSeconds: &grace,
			// kube-controller-manager publishes no kube-root-ca.crt in the
			// lab: a service-account volume would never mount.
			AutomountServiceAccountToken: &no, EnableServiceLinks: &no,
			Containers: []corev1.Container{{
				Name: "app", Image: realnode.TestImage, ImagePullPolicy: corev1.PullNever,
				// On SIGTERM it takes a few seconds to exit, well inside its grace period.
				Command: []string{"/bin/sh", "-c", "trap 'sleep 4; exit 0' TERM; while true; do sleep 1; done"},
			}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	until(t, 90*time.Second, "pod web-0 Running", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running := p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return running, fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	t.Logf("web-0 Running in %s", time.Since(start).Round(100*time.Millisecond))
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{}); err != nil || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Fatalf("web-0 is not run by the real node's containerd: %v", err)
	}

	start = time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container takes about 4 s to exit: the pod is terminating, and
	// progressing, for that long.
	res := run(t, "why", "pod/web-0", "-n", ns, "-o", "json")
	var r report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("why during the deletion (%s after the DELETE): exit %d, not a JSON report: %v\n%s%s", time.Since(start), res.code, err, res.stdout, res.stderr)
	}
	if res.code != 0 || len(r.Items) != 1 || r.Items[0].Stuck {
		t.Errorf("why during the deletion: exit %d, report %+v; want exit 0 and one item, not stuck", res.code, r)
	} else {
		t.Logf("why during the deletion: %s, causes %+v", r.Items[0].Severity, r.Items[0].Causes)
	}

	until(t, 60*time.Second, "pod web-0 gone", func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("web-0 gone %s after its DELETE", time.Since(start).Round(100*time.Millisecond))

	res = run(t, "why", "pod/web-0", "-n", ns)
	if res.code != 1 || !strings.Contains(res.stderr, `pods "web-0" not found`) {
		t.Errorf("why after the deletion: exit %d, stderr %q; want exit 1, not found", res.code, res.stderr)
	}
	res = run(t, "why", "pod/web-0", "-n", ns, "--ignore-not-found", "-o", "json")
	r = report{}
	if err := json.Unmarshal([]byte(res.stdout), &r); res.code != 0 || err != nil || len(r.Items) != 0 {
		t.Errorf("why --ignore-not-found after the deletion: exit %d, %d items (%v)", res.code, len(r.Items), err)
	}
}
