package realnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

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
// (REALNODE_E2E=1, as `make e2e-realnode` sets, or auto, as `make test`
// does): it needs root and cgroups, and says so plainly when the machine
// lacks them: a failure with 1, a pass with auto.
func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	mode := os.Getenv("REALNODE_E2E")
	if mode != "1" && mode != "auto" {
		fmt.Println("realnode: NOT RUN: the real-node suite runs only with `make e2e-realnode` or `make test` (REALNODE_E2E=1 or auto)")
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
		if mode == "auto" {
			return 0 // said plainly; make test goes on where no node can run
		}
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
	// An interrupt tears the node down before the process goes, and so does
	// go test's -timeout, which panics without running a defer: half a
	// minute before it, the node goes and the suite fails, saying why (a
	// node left up stays until the next run's Recover).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	var timeout <-chan time.Time
	if t := testTimeout(); t > time.Minute {
		timeout = time.After(t - 30*time.Second) // go test's clock starts later, in m.Run
	}
	stopOnce := make(chan struct{})
	go func() {
		why := ""
		select {
		case s := <-sig:
			why = s.String()
		case <-timeout:
			why = "the suite is about to reach go test's -timeout (" + testTimeout().String() + ")"
		case <-stopOnce:
			return
		}
		fmt.Fprintf(os.Stderr, "realnode: %s: tearing the node down\n", why)
		if node != nil {
			if err := node.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "realnode:", err)
			}
		}
		theLab.Stop()
		os.Exit(1)
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

// testTimeout is go test's -timeout (0: none).
func testTimeout() time.Duration {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
			return d
		}
	}
	return 0
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
		Checks []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"checks"`
		Skipped []struct{ Check, Reason, Detail string } `json:"skipped"`
	} `json:"items"`
}

// diagnosis runs why on one pod, -o json, and returns its exit code and
// its one item (failing the test on anything else).
func diagnosis(t *testing.T, ns, pod string, flags ...string) (int, report) {
	t.Helper()
	res := run(t, append([]string{"why", "pod/" + pod, "-n", ns, "-o", "json"}, flags...)...)
	var r report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil || len(r.Items) != 1 || len(r.Items[0].Causes) == 0 {
		t.Fatalf("why pod/%s %v: exit %d, not a report of one diagnosed item (%v)\n%s%s", pod, flags, res.code, err, res.stdout, res.stderr)
	}
	top := r.Items[0].Causes[0]
	t.Logf("why pod/%s %v: exit %d, %s %s: %s", pod, flags, res.code, r.Items[0].Severity, top.Code, top.Summary)
	return res.code, r
}

// askingTheKubelet runs why on one pod with --kubelet: the real kubelet's
// /pods and /stats/summary through the apiserver's node proxy. Both must
// answer (nothing skipped): each row the kubelet decides says so.
func askingTheKubelet(t *testing.T, ns, pod string) (int, report) {
	t.Helper()
	code, r := diagnosis(t, ns, pod, "--kubelet")
	if len(r.Items[0].Skipped) > 0 {
		t.Errorf("--kubelet: reads skipped %+v; want the real kubelet's /pods and /stats/summary read", r.Items[0].Skipped)
	}
	return code, r
}

// detail is the detail of a checklist row.
func (r report) detail(name string) string {
	for _, c := range r.Items[0].Checks {
		if c.Name == name {
			return c.Detail
		}
	}
	return ""
}

// fromKubelet fails the test unless each named row was decided by the
// kubelet (its detail quotes it) and says what is wanted.
func fromKubelet(t *testing.T, r report, want map[string]string) {
	t.Helper()
	for name, says := range want {
		if d := r.detail(name); !strings.Contains(d, "kubelet on "+node.Name) || !strings.Contains(d, says) {
			t.Errorf("check %q: %q; want the kubelet's word, %q", name, d, says)
		}
	}
}

// checks are a report's checklist rows, name to status.
func (r report) checks() map[string]string {
	out := map[string]string{}
	for _, c := range r.Items[0].Checks {
		out[c.Name] = c.Status
	}
	return out
}

// expectChecks fails the test unless each named row has its status.
func expectChecks(t *testing.T, r report, want map[string]string) {
	t.Helper()
	got := r.checks()
	for name, status := range want {
		if got[name] != status {
			t.Errorf("check %q is %q, want %q (all: %v)", name, got[name], status, got)
		}
	}
}

// podOn is a pod the real node runs: busybox running script, with grace
// seconds to stop and finalizers.
func podOn(ns, name string, grace int64, script string, finalizers ...string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers},
		Spec: corev1.PodSpec{
			NodeName: node.Name, TerminationGracePeriodSeconds: &grace,
			// kube-controller-manager publishes no kube-root-ca.crt in the
			// lab: a service-account volume would never mount.
			AutomountServiceAccountToken: &no, EnableServiceLinks: &no,
			Containers: []corev1.Container{{
				Name: "app", Image: realnode.TestImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

// running creates pod and waits until the real node's containerd runs it.
func running(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	until(t, 90*time.Second, "pod "+pod.Name+" Running", func() (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			// The kubelet refused it (an admission or eviction): waiting longer would not help.
			t.Fatalf("%s failed: reason %q, message %q", pod.Name, p.Status.Reason, p.Status.Message)
		}
		running := p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return running, fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	t.Logf("%s Running in %s", pod.Name, time.Since(start).Round(100*time.Millisecond))
	if p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Fatalf("%s is not run by the real node's containerd: %v", pod.Name, err)
	}
}

// exitsOnTERM is a container that exits as soon as it is told to stop.
const exitsOnTERM = "trap 'exit 0' TERM; while true; do sleep 1; done"

// terminal waits until the kubelet has written the pod's terminal phase.
func terminal(t *testing.T, ns, name string) {
	t.Helper()
	until(t, 60*time.Second, name+" in a terminal phase", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, fmt.Errorf("phase %s", p.Status.Phase)
	})
}

// stuck runs why on the pod until it judges it stuck (exit 2), and returns
// that report.
func stuck(t *testing.T, ns, name string, timeout time.Duration) report {
	t.Helper()
	var r report
	until(t, timeout, name+" judged stuck", func() (bool, error) {
		var code int
		code, r = diagnosis(t, ns, name)
		return code == 2, fmt.Errorf("exit %d, %+v", code, r.Items[0].Causes)
	})
	return r
}

// stopKubelet stops the node's kubelet; restart starts it again, once (the
// test defers it, and may call it before).
func stopKubelet(t *testing.T) (restart func()) {
	node.StopKubelet()
	return once(func() {
		if err := node.StartKubelet(context.Background()); err != nil {
			t.Errorf("restarting the kubelet: %v", err)
		}
	})
}

// once runs f on its first call only: a cleanup a test defers and may also
// call early. (Not sync.OnceFunc, which turns a t.Fatal's Goexit inside f
// into a panic.)
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// nodeUnknown waits until the node lifecycle controller marks the node
// Unknown (its lease ran out), since.
func nodeUnknown(t *testing.T, since time.Time) { nodeReadyBecomes(t, corev1.ConditionUnknown, since) }

// nodeReadyBecomes waits until the node's Ready condition has status, since.
func nodeReadyBecomes(t *testing.T, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := context.Background()
	until(t, 90*time.Second, "node "+node.Name+" Ready="+string(status), func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == status, fmt.Errorf("Ready=%s", c.Status)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
	t.Logf("node %s Ready=%s, %s after the kubelet stopped or came back", node.Name, status, time.Since(since).Round(100*time.Millisecond))
}

// lifecycleWritesDone waits for the node lifecycle controller's writes
// after the node went Unknown: the unreachable taint on the node (NoSchedule
// only: the lab's one node down is a zone's full disruption, where no
// NoExecute taint is added) and Ready=False on the pod. Until then a plan
// naming their versions can go stale before it is confirmed.
func lifecycleWritesDone(t *testing.T, ns, pod string) {
	t.Helper()
	ctx := context.Background()
	until(t, 60*time.Second, "the node lifecycle controller's taint and pod status", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == corev1.TaintNodeUnreachable
		}) {
			return false, fmt.Errorf("taints %v", n.Spec.Taints)
		}
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionFalse, fmt.Errorf("pod Ready=%s", c.Status)
			}
		}
		return false, fmt.Errorf("pod has no Ready condition")
	})
}

// unreachableWithKubelet runs why --kubelet on a pod whose node is Unknown
// and whose kubelet does not answer: NodeUnreachable, exit 2, as without
// --kubelet, the kubelet's reads skipped for reason, within the per-node
// timeout rather than the run's.
func unreachableWithKubelet(t *testing.T, ns, pod, reason string) {
	t.Helper()
	asked := time.Now()
	code, r := diagnosis(t, ns, pod, "--kubelet")
	took := time.Since(asked)
	skipped := slices.ContainsFunc(r.Items[0].Skipped, func(s struct{ Check, Reason, Detail string }) bool {
		return s.Check == "nodes/"+node.Name+"/proxy/pods" && s.Reason == reason
	})
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "NodeUnreachable" || !skipped || took > 30*time.Second {
		t.Errorf("--kubelet, the kubelet not answering: exit %d, top %s, skipped %+v, took %s; want exit 2, NodeUnreachable, the reads skipped as %s within the per-node timeout",
			code, top.Code, r.Items[0].Skipped, took, reason)
	} else {
		t.Logf("--kubelet, the kubelet not answering: %s, skipped %+v", took.Round(100*time.Millisecond), r.Items[0].Skipped)
	}
}

// gone waits until the pod is deleted.
func gone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	until(t, timeout, "pod "+name+" gone", func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// TestRealNodeNormalDeletion: a pod on the real node, deleted, is reported
// progressing while the kubelet shuts it down, then gone.
func TestRealNodeNormalDeletion(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-normal")
	// On SIGTERM it takes a few seconds to exit, well inside its grace period.
	running(t, podOn(ns, "web-0", 30, "trap 'sleep 8; exit 0' TERM; while true; do sleep 1; done"))

	start := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container takes about 8 s to exit: the pod is terminating, and
	// progressing, for that long, as the API and the kubelet both say.
	code, r := diagnosis(t, ns, "web-0")
	if code != 0 || r.Items[0].Stuck {
		t.Errorf("why during the deletion (%s after the DELETE): exit %d, report %+v; want exit 0, not stuck", time.Since(start), code, r)
	} else {
		t.Logf("why during the deletion: %s, causes %+v", r.Items[0].Severity, r.Items[0].Causes)
	}
	if code, r = askingTheKubelet(t, ns, "web-0"); code != 0 || r.Items[0].Stuck {
		t.Errorf("why --kubelet during the deletion (%s after the DELETE): exit %d, report %+v; want exit 0, not stuck", time.Since(start), code, r)
	}

	gone(t, ns, "web-0", 60*time.Second)
	t.Logf("web-0 gone %s after its DELETE", time.Since(start).Round(100*time.Millisecond))

	res := run(t, "why", "pod/web-0", "-n", ns)
	if res.code != 1 || !strings.Contains(res.stderr, `pods "web-0" not found`) {
		t.Errorf("why after the deletion: exit %d, stderr %q; want exit 1, not found", res.code, res.stderr)
	}
	res = run(t, "why", "pod/web-0", "-n", ns, "--ignore-not-found", "-o", "json")
	r = report{}
	if err := json.Unmarshal([]byte(res.stdout), &r); res.code != 0 || err != nil || len(r.Items) != 0 {
		t.Errorf("why --ignore-not-found after the deletion: exit %d, %d items (%v)", res.code, len(r.Items), err)
	}
}

// TestRealNodeSIGTERMIgnored: a container that ignores SIGTERM keeps its pod
// inside its grace period (info, exit 0: nothing is wrong yet, the checklist
// says the containers are pending) after the kubelet has sent it; the
// kubelet kills it at the deadline and the pod goes, not before.
func TestRealNodeSIGTERMIgnored(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-sigterm")
	grace := 12 * time.Second
	running(t, podOn(ns, "stubborn-0", int64(grace/time.Second), "trap '' TERM; while true; do sleep 1; done"))
	start := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "stubborn-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "the kubelet's SIGTERM (its Killing event)", func() (bool, error) {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=stubborn-0,reason=Killing"})
		return err == nil && len(events.Items) > 0, err
	})
	code, r := diagnosis(t, ns, "stubborn-0")
	if top := r.Items[0].Causes[0]; code != 0 || r.Items[0].Stuck || top.Code != "WithinGracePeriod" || r.Items[0].Severity != "info" {
		t.Errorf("inside the grace period: exit %d, %+v; want exit 0, WithinGracePeriod (info)", code, r.Items[0])
	}
	expectChecks(t, r, map[string]string{"grace period over": "pending", "containers stopped": "pending", "node alive": "pass", "final delete admitted": "pending"})
	code, r = askingTheKubelet(t, ns, "stubborn-0")
	if top := r.Items[0].Causes[0]; code != 0 || top.Code != "WithinGracePeriod" {
		t.Errorf("--kubelet inside the grace period: exit %d, %+v; want exit 0, WithinGracePeriod", code, r.Items[0])
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pending"})
	fromKubelet(t, r, map[string]string{"containers stopped": "running: app", "cgroup sandbox removed": "reports the pod's cgroup"})
	gone(t, ns, "stubborn-0", grace+60*time.Second)
	if took := time.Since(start); took < grace {
		t.Errorf("gone %s after its DELETE, before its %s grace period ended: SIGTERM was not ignored", took, grace)
	} else {
		t.Logf("stubborn-0 killed at its deadline: gone %s after its DELETE (grace %s)", took.Round(100*time.Millisecond), grace)
	}
}

// TestRealNodePodFinalizer: the kubelet does all it does (containers
// stopped, terminal phase, its final grace-0 DELETE admitted) and the pod
// stays for a finalizer nobody removes: FinalizerPending, every kubelet row
// of the checklist passing but the finalizer's; gone once it is removed.
func TestRealNodePodFinalizer(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-finalizer")
	const hold = "e2e.example.com/hold"
	running(t, podOn(ns, "held-0", 5, exitsOnTERM, hold))
	if err := client.CoreV1().Pods(ns).Delete(ctx, "held-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, 60*time.Second, "the kubelet's final DELETE of held-0", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "held-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		final := p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
		return final && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), fmt.Errorf("phase %s, deletionGracePeriodSeconds %v", p.Status.Phase, p.DeletionGracePeriodSeconds)
	})
	r := stuck(t, ns, "held-0", 30*time.Second)
	if top := r.Items[0].Causes[0]; top.Code != "FinalizerPending" || !strings.Contains(top.Summary, hold) {
		t.Errorf("top cause %s: %s; want FinalizerPending naming %s", top.Code, top.Summary, hold)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "terminal phase reported": "pass", "final delete admitted": "pass",
		"node alive": "pass", "volumes unmounted": "pass", "finalizers cleared": "fail"})
	// The kubelet keeps the pod (its /pods lists it), with nothing left of it on the node.
	code, r := askingTheKubelet(t, ns, "held-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "FinalizerPending" {
		t.Errorf("--kubelet: exit %d, top cause %s; want exit 2, FinalizerPending", code, top.Code)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "cgroup sandbox removed": "pass", "final delete admitted": "pass"})
	fromKubelet(t, r, map[string]string{"containers stopped": "no container running", "cgroup sandbox removed": "no cgroup stats"})
	patch := []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"` + hold + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "held-0", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, ns, "held-0", 30*time.Second)
}

// TestRealNodeWebhookRefusesTheFinalDelete: a validating webhook whose
// backend has no endpoints, failurePolicy Fail, matching only the DELETE of
// a pod that has reached a terminal phase (the kubelet's final one, not the
// user's graceful one): the kubelet stops the containers, writes the
// terminal phase, and its final DELETE is refused on every sync.
// AdmissionWebhookDenied names the webhook; once it is deleted, the
// kubelet's next attempt goes through and the pod is gone.
func TestRealNodeWebhookRefusesTheFinalDelete(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-webhook")
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "nothing-runs-this"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail, none, path := admissionv1.Fail, admissionv1.SideEffectClassNone, "/validate"
	webhook := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-guard"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "guard.realnode.example.com",
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: "guard", Path: &path}},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Delete}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			MatchConditions:         []admissionv1.MatchCondition{{Name: "terminal-pods-only", Expression: `has(oldObject.status.phase) && oldObject.status.phase in ['Succeeded', 'Failed']`}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, webhook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove := once(func() {
		if err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhook.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	defer remove()

	running(t, podOn(ns, "pay-0", 5, exitsOnTERM))
	if err := client.CoreV1().Pods(ns).Delete(ctx, "pay-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the user's graceful DELETE (the webhook must not match it): %v", err)
	}
	terminal(t, ns, "pay-0")
	r := stuck(t, ns, "pay-0", 30*time.Second)
	if top := r.Items[0].Causes[0]; top.Code != "AdmissionWebhookDenied" || !strings.Contains(top.Summary, "guard.realnode.example.com") {
		t.Errorf("top cause %s: %s; want AdmissionWebhookDenied naming guard.realnode.example.com", top.Code, top.Summary)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "terminal phase reported": "pass", "final delete admitted": "fail", "finalizers cleared": "pass"})
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "pay-0", metav1.GetOptions{}); err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds == 0 {
		t.Errorf("the kubelet's final DELETE went through despite the webhook: %v", err)
	}
	// The kubelet has done everything but that DELETE, and still retries it.
	code, r := askingTheKubelet(t, ns, "pay-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "AdmissionWebhookDenied" {
		t.Errorf("--kubelet: exit %d, top cause %s; want exit 2, AdmissionWebhookDenied", code, top.Code)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "cgroup sandbox removed": "pass", "final delete admitted": "fail"})
	fromKubelet(t, r, map[string]string{"containers stopped": "no container running", "cgroup sandbox removed": "no cgroup stats"})
	remove()
	start := time.Now()
	gone(t, ns, "pay-0", 90*time.Second)
	t.Logf("pay-0 gone %s after the webhook was removed (the kubelet's next sync)", time.Since(start).Round(100*time.Millisecond))
}

// TestRealNodeRuntimeCannotKill: the pod's cgroup is frozen (the pod-level
// freezer), so the runtime can neither stop nor kill its container. The
// kubelet's StopContainer and StopPodSandbox time out (15 s each here, its
// runtimeRequestTimeout; 2 min by default) and it reports FailedKillPod
// naming both: ContainerKillFailed (critical), the container running in
// the API and in the kubelet's /pods. Thawed, the kubelet's next attempt
// kills it and the pod is gone.
func TestRealNodeRuntimeCannotKill(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-frozen")
	running(t, podOn(ns, "frozen-0", 2, exitsOnTERM))
	p, err := client.CoreV1().Pods(ns).Get(ctx, "frozen-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := realnode.FreezePod(string(p.UID)); err != nil {
		t.Fatal(err)
	}
	thaw := once(func() {
		if err := realnode.ThawPod(string(p.UID)); err != nil {
			t.Errorf("thawing frozen-0: %v", err)
		}
	})
	defer thaw()
	start := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "frozen-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var message string
	until(t, 3*time.Minute, "the kubelet's FailedKillPod event", func() (bool, error) {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=frozen-0,reason=FailedKillPod"})
		if err != nil || len(events.Items) == 0 {
			return false, err
		}
		message = events.Items[0].Message
		return true, nil
	})
	t.Logf("FailedKillPod %s after the DELETE: %s", time.Since(start).Round(100*time.Millisecond), message)
	if !strings.Contains(message, `"KillContainer"`) || !strings.Contains(message, `"KillPodSandbox"`) {
		t.Errorf("FailedKillPod names %q; want both KillContainer and KillPodSandbox", message)
	}
	code, r := diagnosis(t, ns, "frozen-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "ContainerKillFailed" || r.Items[0].Severity != "critical" {
		t.Errorf("the runtime unable to kill: exit %d, %+v; want exit 2, ContainerKillFailed (critical)", code, r.Items[0])
	}
	expectChecks(t, r, map[string]string{"grace period over": "pass", "node alive": "pass", "containers stopped": "fail", "final delete admitted": "pending"})
	code, r = askingTheKubelet(t, ns, "frozen-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "ContainerKillFailed" {
		t.Errorf("--kubelet: exit %d, top cause %s; want exit 2, ContainerKillFailed", code, top.Code)
	}
	fromKubelet(t, r, map[string]string{"containers stopped": "running: app", "cgroup sandbox removed": "reports the pod's cgroup"})
	thaw()
	start = time.Now()
	gone(t, ns, "frozen-0", 3*time.Minute)
	t.Logf("frozen-0 gone %s after it was thawed (the kubelet's next attempt)", time.Since(start).Round(100*time.Millisecond))
}

// TestRealNodeKubeletStopped: the kubelet stops (its containers run on
// under containerd) and a pod on the node is deleted. Once the node's lease
// runs out and the node lifecycle controller marks it Unknown, the report
// says NodeUnreachable (critical, exit 2: nothing on the node will finish
// the shutdown) with the node's own evidence. The kubelet comes back, runs
// the shutdown it missed, and the pod is gone.
func TestRealNodeKubeletStopped(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-kubelet")
	running(t, podOn(ns, "orphan-0", 5, exitsOnTERM))
	start := time.Now()
	restart := stopKubelet(t)
	defer restart()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "orphan-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeUnknown(t, start)
	code, r := diagnosis(t, ns, "orphan-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "NodeUnreachable" || r.Items[0].Severity != "critical" || !strings.Contains(top.Summary, node.Name) {
		t.Errorf("with the kubelet stopped: exit %d, %+v; want exit 2, NodeUnreachable (critical) naming %s", code, r.Items[0], node.Name)
	}
	expectChecks(t, r, map[string]string{"node alive": "fail", "containers stopped": "fail", "final delete admitted": "pending"})
	// --kubelet: nothing listens on the kubelet's port, and the node proxy
	// says so at once; the verdict is the same.
	unreachableWithKubelet(t, ns, "orphan-0", "Unreachable")
	restart()
	start = time.Now()
	gone(t, ns, "orphan-0", 90*time.Second)
	t.Logf("orphan-0 gone %s after the kubelet came back", time.Since(start).Round(100*time.Millisecond))
}

// TestRealNodeKubeletHangs: the kubelet's process is stopped (SIGSTOP): its
// port accepts connections nobody answers, so the apiserver's node proxy
// waits with no timeout of its own. The verdict is the same as for a
// kubelet that is gone (NodeUnreachable once the node is Unknown), and
// --kubelet costs the per-node timeout, its reads skipped as Timeout.
// Resumed, the kubelet runs the shutdown it missed.
func TestRealNodeKubeletHangs(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-hung")
	running(t, podOn(ns, "stalled-0", 5, exitsOnTERM))
	start := time.Now()
	if err := node.FreezeKubelet(); err != nil {
		t.Fatal(err)
	}
	resume := once(func() {
		if err := node.ThawKubelet(); err != nil {
			t.Errorf("resuming the kubelet: %v", err)
			return
		}
		nodeReadyBecomes(t, corev1.ConditionTrue, time.Now()) // for the tests after
	})
	defer resume()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "stalled-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeUnknown(t, start)
	unreachableWithKubelet(t, ns, "stalled-0", "Timeout")
	resume()
	start = time.Now()
	gone(t, ns, "stalled-0", 90*time.Second)
	t.Logf("stalled-0 gone %s after the kubelet was resumed", time.Since(start).Round(100*time.Millisecond))
}

// TestRealNodeBusyEmptyDir: a process on the node keeps a memory-backed
// emptyDir busy (its working directory inside the tmpfs). The kubelet stops
// the containers and writes the terminal phase, but its unmount fails
// ("target is busy") with no event and no trace in the API, and it sends no
// final DELETE. The report must not claim the volumes are unmounted, and
// must point at the volume teardown; once the process goes, the kubelet's
// retry unmounts it and the pod is gone.
func TestRealNodeBusyEmptyDir(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-emptydir")
	pod := podOn(ns, "scratch-0", 5, exitsOnTERM)
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	running(t, pod)
	p, err := client.CoreV1().Pods(ns).Get(ctx, "scratch-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	busy := exec.Command("sleep", "600")
	busy.Dir = filepath.Join(node.Dir, "kubelet", "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := busy.Start(); err != nil {
		t.Fatalf("keeping the emptyDir busy: %v", err)
	}
	free := once(func() {
		_ = busy.Process.Kill()
		_ = busy.Wait()
	})
	defer free()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "scratch-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminal(t, ns, "scratch-0")
	r := stuck(t, ns, "scratch-0", 60*time.Second)
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "scratch-0", metav1.GetOptions{}); err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds == 0 {
		t.Fatalf("the kubelet sent its final DELETE with the emptyDir busy: %v", err)
	}
	if top := r.Items[0].Causes[0]; top.Code != "VolumeTeardownPending" || !strings.Contains(top.Summary, "scratch") {
		t.Errorf("top cause %s: %s; want VolumeTeardownPending naming the emptyDir scratch", top.Code, top.Summary)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "terminal phase reported": "pass", "volumes unmounted": "unknown", "final delete admitted": "pending"})
	// With --kubelet: /pods lists the pod, /stats/summary no longer does
	// (it drops a pod's volumes with its cgroup), so the volume stays
	// unknown: never "unmounted" for a volume the kubelet has not reported.
	code, r := askingTheKubelet(t, ns, "scratch-0")
	if top := r.Items[0].Causes[0]; code != 2 || top.Code != "VolumeTeardownPending" || !strings.Contains(top.Summary, "scratch") {
		t.Errorf("--kubelet: exit %d, top cause %s: %s; want exit 2, VolumeTeardownPending naming scratch", code, top.Code, top.Summary)
	}
	expectChecks(t, r, map[string]string{"containers stopped": "pass", "volumes unmounted": "unknown", "cgroup sandbox removed": "pass"})
	fromKubelet(t, r, map[string]string{"containers stopped": "no container running", "cgroup sandbox removed": "no cgroup stats"})
	// What the report infers is what the kubelet says, in its log only.
	if log, err := os.ReadFile(filepath.Join(node.Dir, "logs", "kubelet.log")); err != nil || !strings.Contains(string(log), "target is busy") {
		t.Errorf("the kubelet's log does not say the unmount is busy (%v)", err)
	}
	free()
	start := time.Now()
	gone(t, ns, "scratch-0", 4*time.Minute) // the kubelet retries the unmount with a backoff of up to ~2 min
	t.Logf("scratch-0 gone %s after the emptyDir was freed", time.Since(start).Round(100*time.Millisecond))
}

// TestRealNodeOutOfService: the kubelet stops with a pod's containers still
// running, the pod is deleted, the node goes Unknown: the repair the report
// offers for a node that is down for good is the out-of-service taint.
// `fix` plans it at --max-risk destructive, applies it by the plan's digest,
// and the pod GC force-deletes the pod. The kubelet then comes back; the
// taint is removed and the node is Ready again for the tests after.
func TestRealNodeOutOfService(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "realnode-outofservice")
	running(t, podOn(ns, "fenced-0", 5, exitsOnTERM))
	start := time.Now()
	restart := stopKubelet(t)
	defer func() {
		restart()
		// The kubelet and the node lifecycle controller write the node too:
		// read it again on a conflict.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == corev1.TaintNodeOutOfService })
			_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Errorf("removing the out-of-service taint: %v", err)
		}
	}()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "fenced-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeUnknown(t, start)
	lifecycleWritesDone(t, ns, "fenced-0")
	stuck(t, ns, "fenced-0", 60*time.Second)

	args := []string{"fix", "pod/fenced-0", "-n", ns, "--max-risk", "destructive", "--settle", "90s"}
	var res result
	// The plan names the node's and the pod's resourceVersions: a write by
	// a controller between review and confirm is refused as a stale plan,
	// which a runbook answers by reviewing again. Once, so that a digest
	// that never holds still fails.
	for attempt := 1; ; attempt++ {
		review := run(t, args...)
		m := regexp.MustCompile(`Plan ([0-9a-f]{16}): 1 request`).FindStringSubmatch(review.stdout)
		if review.code != 1 || m == nil || !strings.Contains(review.stdout, "taint node/"+node.Name+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute") {
			t.Fatalf("the plan: exit %d\n%s%s", review.code, review.stdout, review.stderr)
		}
		start = time.Now()
		res = run(t, append(args, "--confirm", m[1], "-o", "json")...)
		if attempt == 2 || !strings.Contains(res.stderr, "the cluster changed since the plan was reviewed") {
			break
		}
		t.Logf("plan %s went stale before it was confirmed (%s): reviewing again", m[1], strings.TrimSpace(res.stderr))
	}
	var rec struct {
		Outcomes []struct {
			Result string `json:"result"`
		} `json:"outcomes"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rec); err != nil || res.code != 0 || len(rec.Outcomes) != 1 || rec.Outcomes[0].Result != "gone" {
		t.Fatalf("fix --confirm: exit %d (%v), want 0 and the pod gone\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctx, "fenced-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("fenced-0 still there after the fix: %v", err)
	}
	t.Logf("fenced-0 gone %s after the taint was sent (the pod GC's force delete)", time.Since(start).Round(100*time.Millisecond))
}
