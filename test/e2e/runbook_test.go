package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The runbook scripts of docs/runbooks.md, run as an operator would: `kubectl
// terminating` found by kubectl on PATH, against the lab.
const runbooks = "../../docs/runbooks"

// runbook runs one script with the lab's kubectl and the plugin on PATH.
func runbook(t *testing.T, env []string, script string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path, err := filepath.Abs(filepath.Join(runbooks, script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "sh", append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+theLab.Kubeconfig, "NO_COLOR=",
		"PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = t.TempDir()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return resultOf(t, cmd.Run(), &out, &errOut, script)
}

// runSuggested runs a command the plugin suggested, as an operator pasting it
// would: in sh, with the lab's kubectl and the plugin on PATH.
func runSuggested(t *testing.T, command string) result {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+theLab.Kubeconfig, "NO_COLOR=",
		"PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return resultOf(t, cmd.Run(), &out, &errOut, command)
}

func TestRunbooksAreInTheDocs(t *testing.T) {
	doc, err := os.ReadFile(runbooks + ".md")
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob(filepath.Join(runbooks, "*.sh"))
	if len(scripts) != 5 {
		t.Fatalf("scripts: %v", scripts)
	}
	for _, s := range scripts {
		body, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, body) {
			t.Errorf("docs/runbooks.md does not show %s as it is", filepath.Base(s))
		}
	}
}

func TestRunbookDrainNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const node = "kwok-drain"
	ns := namespace(t, "drained")
	if err := env.LiveNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	held := scenario.PodSpec(ns, "held-0", node)
	held.Finalizers = []string{"drain.tidy.io/flush"}
	for _, p := range []*corev1.Pod{scenario.PodSpec(ns, "plain-0", node), held} {
		if err := env.RunningPod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// A DaemonSet's pod stays on the drained node (as on every real node):
	// the runbook does not wait for it.
	if err := env.DaemonSetOn(ctx, ns, "agent", node); err != nil {
		t.Fatal(err)
	}
	res := runbook(t, nil, "drain-node.sh", node, "20s")
	if res.code != 2 || !strings.Contains(res.stdout, "pod/plain-0 deleted") || !strings.Contains(res.stdout, "FinalizerPending") ||
		!strings.Contains(res.stdout, "drain.tidy.io/flush") || strings.Contains(res.stdout+res.stderr, "pod/agent-") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
}

func TestRunbookDeleteNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := namespace(t, "runbook-empty")
	if res := runbook(t, nil, "delete-namespace.sh", empty, "1m"); res.code != 0 || !strings.Contains(res.stdout, "namespace "+empty+" deleted") {
		t.Errorf("empty namespace: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
	preview := namespace(t, "runbook-preview")
	if err := env.Controller(ctx, preview, "web", ""); err != nil { // a workload, nothing that holds a deletion
		t.Fatal(err)
	}
	if res := runbook(t, nil, "teardown-preview.sh", preview, "1m"); res.code != 0 || !strings.Contains(res.stdout, "namespace "+preview+" deleted") {
		t.Errorf("teardown of a preview environment: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}

	held := namespace(t, "runbook-held")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Finalizers: []string{"ledger.tidy.io/archive"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(held).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Preflight first: the teardown runbook refuses, deleting nothing, with
	// the cause that why gives once it is deleted anyway (below).
	res := runbook(t, nil, "teardown-preview.sh", held, "15s")
	if want := "namespace " + held + " not deleted: its deletion would stick: FinalizerPending: once deleted, 1 object (configmap/ledger) would wait for finalizer ledger.tidy.io/archive, and no controller"; res.code != 2 || !strings.HasPrefix(res.stderr, want) {
		t.Errorf("teardown of a held namespace: exit %d, want 2 and %q\nstdout %s\nstderr %s", res.code, want, res.stdout, res.stderr)
	}
	if ns, err := env.Client.CoreV1().Namespaces().Get(ctx, held, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("the refused teardown deleted nothing: %v %v", err, ns.DeletionTimestamp)
	}
	dir := t.TempDir()
	page, reportFile := filepath.Join(dir, "page"), filepath.Join(dir, "report.json")
	res = runbook(t, []string{"PAGE_CMD=tee " + page, "REPORT=" + reportFile}, "delete-namespace.sh", held, "15s")
	paged, _ := os.ReadFile(page)
	if res.code != 2 || !strings.HasPrefix(string(paged), "namespace "+held+" stuck Terminating after 15s: FinalizerPending: ") ||
		!strings.Contains(string(paged), "ledger.tidy.io/archive") {
		t.Errorf("held namespace: exit %d, paged %q\nstderr %s", res.code, paged, res.stderr)
	}
	var r report
	if data, err := os.ReadFile(reportFile); err != nil || json.Unmarshal(data, &r) != nil || len(r.Items) != 1 || r.Items[0].Object.Name != held {
		t.Errorf("report file: %v %+v", err, r)
	}
}

func TestRunbookNightlyReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "nightly")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forgotten", Finalizers: []string{"nightly.tidy.io/export"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "forgotten", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	out := filepath.Join(t.TempDir(), "stuck.json")
	res := runbook(t, nil, "nightly-report.sh", "30s", out)
	if res.code != 2 || !strings.Contains(res.stdout, "TOP CAUSE") || !strings.Contains(res.stdout, "forgotten") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
	}
	var r report
	data, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(data, &r) != nil {
		t.Fatalf("report %s: %v", out, err)
	}
	found := false
	for _, it := range r.Items {
		found = found || (it.Object.Namespace == ns && it.Object.Name == "forgotten" && it.Stuck)
		if !it.Stuck || it.TerminatingSeconds < 30 {
			t.Errorf("%s/%s: stuck %t, terminating %ds: --stuck-only --older-than 30s", it.Object.Namespace, it.Object.Name, it.Stuck, it.TerminatingSeconds)
		}
	}
	if !found {
		t.Errorf("configmap %s/forgotten is not in the report", ns)
	}
}
