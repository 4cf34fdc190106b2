package e2e

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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The lab every test shares, and the built plugin the tests run as a user would.
var (
	theLab   *lab.Lab
	env      *scenario.Env
	plugin   string
	kubectl  string
	labBins  string
	liveNode = "kwok-1"
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	root, _ := filepath.Abs("../..")
	plugin = envOr("PLUGIN_BIN", filepath.Join(root, "bin", "kubectl-terminating"))
	binDir := envOr("LAB_BIN_DIR", filepath.Join(root, ".lab", "bin"))
	labBins = binDir
	kubectl = filepath.Join(binDir, "kubectl")
	for _, f := range []string{plugin, kubectl, filepath.Join(binDir, "kube-apiserver")} {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s is missing: run `make build lab-bin` (make test does)\n", f)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "kubectl-terminating-lab-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx := context.Background()
	start := time.Now()
	theLab, err = lab.Start(ctx, lab.Options{BinDir: binDir, Dir: dir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the lab: %v (logs in %s)\n", err, dir)
		return 1
	}
	// Always tear down, also on an interrupt (the lab's processes die with us anyway: Pdeathsig).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		theLab.Stop()
		_ = stopVersionLabs(false)
		scenario.RemoveTestHosts()
		os.Exit(130)
	}()
	defer theLab.Stop()
	defer scenario.RemoveTestHosts() // the fake kubelets' and APIs' network namespaces
	fmt.Printf("e2e: lab up at %s in %s\n", theLab.Server, time.Since(start).Round(time.Millisecond))
	if env, err = scenario.NewEnv(theLab.Kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := env.LiveNode(ctx, liveNode); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code := m.Run()
	if err := stopVersionLabs(code == 0); err != nil { // the version matrix's labs (versions_test.go)
		fmt.Fprintln(os.Stderr, "e2e: FAIL:", err)
		code = 1
	}
	if code == 0 {
		subset := flag.Lookup("test.run").Value.String() != ""
		if err := checkReadOnly(theLab.AuditLog, subset); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: FAIL: read-only check:", err)
			code = 1
		}
		if err := checkNetworkRule(dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: FAIL: network rule:", err)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: lab logs kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	return code
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// result is one run of the built plugin.
type result struct {
	stdout, stderr string
	code           int
}

// prose is a screen's words on one line: what a person reads, however the
// plugin wrapped it (to 80 columns off a terminal).
func (r result) prose() string { return strings.Join(strings.Fields(r.stdout), " ") }

// run runs the plugin against the lab as its administrator.
func run(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, append([]string{"--kubeconfig", theLab.Kubeconfig}, args...)...)
}

func runWith(t *testing.T, args ...string) result {
	t.Helper()
	return runColumns(t, 0, args...)
}

// runColumns runs the plugin with $COLUMNS set (0: unset, the default
// screens: 80 columns).
func runColumns(t *testing.T, cols int, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	columns := ""
	if cols > 0 {
		columns = strconv.Itoa(cols)
	}
	cmd.Env = append(os.Environ(), "NO_COLOR=", "COLUMNS="+columns)
	return resultOf(t, cmd.Run(), &out, &errOut, args)
}

// resultOf is a finished command's outcome; failing to run it at all fails the test.
func resultOf(t *testing.T, err error, out, errOut *bytes.Buffer, what any) result {
	t.Helper()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", what, err)
	}
	return r
}

// The report as a runbook reads it: parsed from JSON, not from the plugin's types.
type report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []item `json:"items"`
	Skipped    []skip `json:"skipped"`
	Complete   *bool  `json:"complete"`
	Server     *struct {
		GitVersion string `json:"gitVersion"`
	} `json:"server"`
}

type item struct {
	Object struct {
		APIVersion, Kind, Resource, Namespace, Name, UID string
	} `json:"object"`
	DeletionTimestamp  string   `json:"deletionTimestamp"`
	GracePeriodSeconds int64    `json:"gracePeriodSeconds"`
	TerminatingSeconds int64    `json:"terminatingSeconds"`
	OverdueSeconds     int64    `json:"overdueSeconds"`
	Finalizers         []string `json:"finalizers"`
	Stuck              bool     `json:"stuck"`
	Forecast           bool     `json:"forecast"`
	Severity           string   `json:"severity"`
	Causes             []cause  `json:"causes"`
	Checks             []check  `json:"checks"`
	Skipped            []skip   `json:"skipped"`
	ContentsRead       *struct {
		Index bool
		Types int
		Why   string
	} `json:"contentsRead"`
}

type cause struct {
	Code        string   `json:"code"`
	Severity    string   `json:"severity"`
	Confidence  float64  `json:"confidence"`
	Summary     string   `json:"summary"`
	Evidence    []string `json:"evidence"`
	Facts       []fact   `json:"facts"`
	Remediation []struct {
		ID, Action, Command, Risk, RiskLevel string
	} `json:"remediation"`
	BlockedBy []item `json:"blockedBy"`
	Docs      string `json:"docs"`
	Forecast  bool   `json:"forecast"`
}

// fact is one piece of evidence as data (since v0.6).
type fact struct {
	Text, Field, Value, Reason, Quote string
	Object                            *struct{ Kind, Namespace, Name string }
	At                                *string
}

type check struct{ Name, Status, Detail string }

type skip struct{ Check, Reason, Detail string }

// diagnose runs the plugin with -o json and parses the report.
func diagnose(t *testing.T, args ...string) (report, result) {
	t.Helper()
	return diagnoseIn(t, theLab.Kubeconfig, args...)
}

// diagnoseIn is diagnose in the lab of kubeconfig (a release of the matrix).
func diagnoseIn(t *testing.T, kubeconfig string, args ...string) (report, result) {
	t.Helper()
	res := runWith(t, append([]string{"--kubeconfig", kubeconfig}, append(args, "-o", "json")...)...)
	var r report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("plugin %v: exit %d, output is not a JSON report: %v\nstdout: %s\nstderr: %s", args, res.code, err, res.stdout, res.stderr)
	}
	if r.APIVersion != "terminating.kubectl.io/v1alpha1" || r.Kind != "TerminationReport" {
		t.Fatalf("report apiVersion/kind = %s/%s", r.APIVersion, r.Kind)
	}
	return r, res
}

// only returns the one item of a report, failing otherwise.
func only(t *testing.T, r report) item {
	t.Helper()
	if len(r.Items) != 1 {
		t.Fatalf("want 1 item, got %d: %+v", len(r.Items), r.Items)
	}
	return r.Items[0]
}

func codesOf(it item) []string {
	var out []string
	for _, c := range it.Causes {
		out = append(out, c.Code)
	}
	return out
}

func hasEvidence(c cause, fragment string) bool {
	for _, e := range c.Evidence {
		if strings.Contains(e, fragment) {
			return true
		}
	}
	return false
}

func checkStatus(it item, name string) string {
	for _, c := range it.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return "<missing>"
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.Namespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

// settle waits until an object's deadline is further back than the plugin's
// settle time (30 s), after which a pending finalizer or a slow kubelet counts as stuck.
// heldByFinalizer runs a pod on the kwok node, deletes it and waits until
// the fake kubelet's final grace-0 DELETE is admitted (state D): the pod
// stays for its finalizer. It returns the deletion's deadline.
func heldByFinalizer(t *testing.T, ns, name, finalizer string) time.Time {
	t.Helper()
	ctx := context.Background()
	pod := scenario.PodSpec(ns, name, liveNode)
	pod.Finalizers = []string{finalizer}
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, name, 1); err != nil {
		t.Fatal(err)
	}
	deadline, err := env.WaitFinalDelete(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return deadline
}

// settle waits until deadline is 31 s behind: what was deleted then is
// past the 30 s in which what remains is progress. For a namespace's
// leftovers, pass the moment DeleteNamespace returned (the namespace
// controller writes its conditions after deleting the content), not the
// namespace's own DELETE: on a loaded machine the controller starts seconds
// later, and leftovers it deleted 29 s ago are still progress.
func settle(t *testing.T, deadline time.Time) {
	t.Helper()
	if d := time.Until(deadline.Add(31 * time.Second)); d > 0 {
		time.Sleep(d)
	}
}

func deleteOpts(grace *int64) metav1.DeleteOptions {
	return metav1.DeleteOptions{GracePeriodSeconds: grace}
}

// pastDeadline waits until the pod's deletion deadline is a second behind.
func pastDeadline(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.WaitPod(context.Background(), ns, name, "past its deadline", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && time.Now().After(p.DeletionTimestamp.Add(time.Second))
	}); err != nil {
		t.Fatal(err)
	}
}

// expectChecks checks lines of the reclaim checklist: name -> status.
func expectChecks(t *testing.T, it item, want map[string]string) {
	t.Helper()
	for name, status := range want {
		if got := checkStatus(it, name); got != status {
			t.Errorf("check %q = %s, want %s", name, got, status)
		}
	}
}

// expectEvidence checks that a cause's evidence holds each fragment.
func expectEvidence(t *testing.T, c cause, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !hasEvidence(c, f) {
			t.Errorf("evidence lacks %q: %q", f, c.Evidence)
		}
	}
}

// podOnDeadNode runs a pod (grace period 1 s) on a node that then dies, and
// waits until the node lifecycle controller marks the node unreachable.
func podOnDeadNode(t *testing.T, ns, pod, node string) {
	t.Helper()
	ctx := context.Background()
	if err := env.DyingNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	p := scenario.PodSpec(ns, pod, node)
	one := int64(1)
	p.Spec.TerminationGracePeriodSeconds = &one
	if err := env.RunOnDyingNode(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNodeUnreachable(ctx, node); err != nil {
		t.Fatal(err)
	}
}
