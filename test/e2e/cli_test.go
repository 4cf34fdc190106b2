package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Bad input gets one clear line on stderr and exit code 1.
func TestBadInput(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown context", []string{"--kubeconfig", theLab.Kubeconfig, "--context", "nope", "list"}, `the kubeconfig has no context "nope" (--context); its contexts: lab, lab-nobody`},
		{"no cluster in the kubeconfig", []string{"--kubeconfig", empty, "why", "pod/web-0"}, "no cluster to ask: --kubeconfig " + empty + " names none"},
		{"unknown type", []string{"--kubeconfig", theLab.Kubeconfig, "why", "nosuchthings/x"}, `the server doesn't have a resource type "nosuchthings"`},
		{"missing object", []string{"--kubeconfig", theLab.Kubeconfig, "why", "pod/nope", "-n", "default"}, `pods "nope" not found in namespace "default"`},
		{"unreachable server", []string{"--kubeconfig", theLab.Kubeconfig, "--server", "https://127.0.0.1:1", "list"}, "cannot reach the cluster"},
		{"rejected credentials", []string{"--kubeconfig", theLab.Kubeconfig, "--token", "expired", "list"}, "rejected the credentials"},
		{"bad flag", []string{"why", "--no-such-flag"}, "unknown flag: --no-such-flag (see 'kubectl terminating why --help')"},
		{"bad output format", []string{"--kubeconfig", theLab.Kubeconfig, "list", "-o", "xml"}, `unknown output format "xml": -o takes wide, json, yaml`},
		{"mixed argument forms", []string{"--kubeconfig", theLab.Kubeconfig, "why", "pods", "pod/x"}, "no need to specify a resource type"},
		{"missing kubeconfig", []string{"--kubeconfig", "/nonexistent/kubeconfig", "list"}, "/nonexistent/kubeconfig"},
		{"forgotten verb", []string{"--kubeconfig", theLab.Kubeconfig, "pod/web-0", "-n", "shop"}, `did you mean "kubectl terminating why pod/web-0 --kubeconfig=` + theLab.Kubeconfig + ` --namespace=shop"?`},
		{"misspelt verb", []string{"--kubeconfig", theLab.Kubeconfig, "wyh", "pod/web-0"}, `unknown command "wyh": did you mean why?`},
		{"misspelt type", []string{"--kubeconfig", theLab.Kubeconfig, "why", "pdo/web-0", "-n", "default"}, `the server doesn't have a resource type "pdo"; did you mean poddisruptionbudgets or pods?`}, // pdb, po
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if res.code != 1 || len(lines) != 1 || !strings.Contains(res.stderr, tc.want) || !strings.HasPrefix(res.stderr, "error: ") {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q", res.code, res.stderr, tc.want)
			}
			if strings.Contains(res.stderr, "goroutine") || res.stdout != "" {
				t.Errorf("stdout %q stderr %q", res.stdout, res.stderr)
			}
		})
	}
}

// Issue 39: no accidental all-clear. A namespace that is not being deleted
// is diagnosed by what is being deleted in it (exit 2 for a stuck pod; it
// was "is not being deleted", exit 0); one with nothing in it says so; a
// namespace that does not exist is an error; an empty namespace's report
// says what is being deleted elsewhere.
func TestObjectNotBeingDeleted(t *testing.T) {
	t.Parallel()
	busy, quiet := namespace(t, "allclear-busy"), namespace(t, "allclear-quiet")
	settle(t, heldByFinalizer(t, busy, "held-0", "example.com/hold"))

	res := run(t, "why", "ns/"+busy)
	if res.code != 2 || !strings.Contains(res.stdout, "pod/held-0 -n "+busy) ||
		res.stderr != "namespace/"+busy+" is not being deleted (no metadata.deletionTimestamp); being deleted in it: 1 object\n" {
		t.Errorf("why ns/%s: exit %d stdout %q stderr %q", busy, res.code, res.stdout, res.stderr)
	}
	res = run(t, "why", "ns/"+quiet)
	if res.code != 0 || res.stdout != "" || res.stderr != "namespace/"+quiet+" is not being deleted (no metadata.deletionTimestamp), nor is anything in it\n" {
		t.Errorf("why ns/%s: exit %d stdout %q stderr %q", quiet, res.code, res.stdout, res.stderr)
	}
	res = run(t, "why", "-n", quiet+"-typo")
	if res.code != 1 || res.stdout != "" || res.stderr != "error: namespace \""+quiet+"-typo\" not found\n" {
		t.Errorf("why -n %s-typo: exit %d stdout %q stderr %q", quiet, res.code, res.stdout, res.stderr)
	}
	// held-0 at least is being deleted elsewhere.
	res = run(t, "list", "-n", quiet)
	elsewhere := regexp.MustCompile(`^No terminating objects found in ` + quiet + ` namespace\.\nElsewhere: [1-9][0-9]* pods? being deleted in [1-9][0-9]* other namespaces?(, [1-9][0-9]* other namespaces? being deleted)? \(kubectl terminating list -A\)\.\n$`)
	if res.code != 0 || res.stdout != "" || !elsewhere.MatchString(res.stderr) {
		t.Errorf("list -n %s: exit %d stdout %q stderr %q", quiet, res.code, res.stdout, res.stderr)
	}
	// Asked about configmaps: pods elsewhere are not what was asked about.
	res = run(t, "list", "configmaps", "-n", quiet)
	if res.code != 0 || res.stdout != "" || res.stderr != "No terminating objects found in "+quiet+" namespace.\n" {
		t.Errorf("list configmaps -n %s: exit %d stdout %q stderr %q", quiet, res.code, res.stdout, res.stderr)
	}
}

func TestOutputFormats(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "formats")
	heldByFinalizer(t, ns, "held-0", "example.com/hold")

	y := run(t, "list", "-n", ns, "-o", "yaml")
	var r report
	if err := yaml.Unmarshal([]byte(y.stdout), &r); err != nil || r.Kind != "TerminationReport" || len(r.Items) != 1 {
		t.Fatalf("-o yaml: %v %+v\n%s", err, r, y.stdout)
	}
	if f := r.Items[0].Finalizers; len(f) != 1 || f[0] != "example.com/hold" {
		t.Errorf("finalizers = %v", f)
	}
	if d := r.Items[0].Causes[0].Docs; !strings.HasSuffix(d, "/docs/causes.md#"+strings.ToLower(r.Items[0].Causes[0].Code)) {
		t.Errorf("docs = %q", d)
	}
	jp := run(t, "list", "-n", ns, "-o", "jsonpath={.items[0].causes[0].code}")
	if jp.stdout != "FinalizerPending" {
		t.Errorf("-o jsonpath = %q", jp.stdout)
	}
	gt := run(t, "list", "-n", ns, "-o", "go-template={{range .items}}{{.object.name}}{{end}}")
	if gt.stdout != "held-0" {
		t.Errorf("-o go-template = %q", gt.stdout)
	}
	wide := run(t, "list", "-n", ns, "-o", "wide")
	table := run(t, "list", "-n", ns)
	for _, col := range []string{"NAME", "TERMINATING", "SEVERITY", "TOP CAUSE"} {
		if !strings.Contains(table.stdout, col) {
			t.Errorf("table lacks column %s:\n%s", col, table.stdout)
		}
	}
	if strings.Contains(table.stdout, "NAMESPACE") || !strings.Contains(run(t, "list", "-A").stdout, "NAMESPACE") {
		t.Errorf("NAMESPACE belongs to -A only:\n%s", table.stdout)
	}
	for _, col := range []string{"OVERDUE", "GRACE", "STUCK", "CONFIDENCE", "NODE", "SUMMARY"} {
		if !strings.Contains(wide.stdout, col) || strings.Contains(table.stdout, col) {
			t.Errorf("column %s should be in -o wide only", col)
		}
	}
	if strings.Contains(table.stdout, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal: %q", table.stdout)
	}
	if !strings.Contains(table.stdout, "held-0") || !strings.Contains(table.stdout, "FinalizerPending") {
		t.Errorf("table:\n%s", table.stdout)
	}
	// kubectl's habits: comma-separated types, --no-headers, nothing found on stderr.
	if res := run(t, "list", "pods,configmaps", "-n", ns, "--no-headers"); !strings.HasPrefix(res.stdout, "pod/held-0 ") || strings.Count(res.stdout, "\n") != 1 {
		t.Errorf("list pods,configmaps --no-headers: exit %d\n%s", res.code, res.stdout)
	}
	// What is being deleted in other namespaces (other tests') may follow.
	if res := run(t, "list", "configmaps", "-n", ns); res.code != 0 || res.stdout != "" || !strings.HasPrefix(res.stderr, "No terminating objects found in "+ns+" namespace.\n") {
		t.Errorf("nothing found: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	if res := run(t, "list", "pods", "-n", ns, "-o", "name", "--field-selector", "spec.nodeName="+liveNode); res.stdout != "pod/held-0\n" {
		t.Errorf("--field-selector on its node: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	if res := run(t, "list", "pods", "-n", ns, "--field-selector", "spec.nodeName=nowhere"); res.code != 0 || res.stdout != "" {
		t.Errorf("--field-selector elsewhere: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	if res := run(t, "list", "-n", ns, "-o", "name", "--sort-by", ".object.name"); res.stdout != "pod/held-0\n" {
		t.Errorf("--sort-by: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	if res := run(t, "why", "pod/held-0", "-n", ns, "-v", "6"); !strings.Contains(res.stderr, `verb="GET" url="https://127.0.0.1:`) || !strings.Contains(res.stderr, `status="200 OK"`) {
		t.Errorf("-v 6 logs the requests on stderr: %s", res.stderr)
	}
	if res := run(t, "version", "-o", "json"); res.code != 0 || !strings.Contains(res.stdout, `"goVersion"`) {
		t.Errorf("version -o json: exit %d %s", res.code, res.stdout)
	}
	grouped := run(t, "list", "-n", ns, "--group-by", "finalizer")
	if rows := strings.Split(strings.TrimSpace(grouped.stdout), "\n"); len(rows) != 2 || !strings.HasPrefix(rows[0], "FINALIZER ") ||
		!strings.HasPrefix(strings.Join(strings.Fields(rows[1]), " "), "example.com/hold 1 ") || !strings.HasSuffix(rows[1], " pod/held-0 -n "+ns) {
		t.Errorf("--group-by finalizer: exit %d\n%s", grouped.code, grouped.stdout)
	}
}

// The plugin is found by kubectl on PATH, as krew installs it.
func TestRunsAsKubectlPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Symlink(plugin, filepath.Join(dir, "kubectl-terminating")); err != nil {
		t.Fatal(err)
	}
	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	list := exec.Command(kubectl, "plugin", "list")
	list.Env = append(os.Environ(), "PATH="+path)
	out, _ := list.CombinedOutput()
	if !strings.Contains(string(out), "kubectl-terminating") {
		t.Errorf("kubectl plugin list:\n%s", out)
	}
	version := exec.Command(kubectl, "terminating", "version")
	version.Env = append(os.Environ(), "PATH="+path)
	out, err := version.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kubectl-terminating v") {
		t.Errorf("kubectl terminating version: %v\n%s", err, out)
	}
	why := exec.Command(kubectl, "terminating", "why", "ns/default", "--kubeconfig", theLab.Kubeconfig)
	why.Env = append(os.Environ(), "PATH="+path)
	if out, err := why.CombinedOutput(); err != nil || !strings.Contains(string(out), "not being deleted") {
		t.Errorf("kubectl terminating why: %v\n%s", err, out)
	}
	explain := exec.Command(kubectl, "terminating", "explain", "FinalizerPending")
	explain.Env = append(os.Environ(), "PATH="+path)
	if out, err := explain.CombinedOutput(); err != nil || !strings.Contains(string(out), "\nWhy it blocks\n") || strings.Contains(string(out), "**") || !strings.Contains(string(out), "causes.md#finalizerpending") {
		t.Errorf("kubectl terminating explain FinalizerPending: %v\n%s", err, out)
	}
}

// TAB after `kubectl terminating`: kubectl (1.26+) runs the
// kubectl_complete-terminating helper the release archives ship, which asks
// the plugin; names and namespaces come from the lab.
func TestCompletionThroughKubectl(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "tabs")
	if err := env.RunningPod(ctx, scenario.PodSpec(ns, "tab-0", liveNode)); err != nil {
		t.Fatal(err)
	}
	helper, err := filepath.Abs("../../hack")
	if err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{filepath.Dir(plugin), helper, filepath.Dir(kubectl), os.Getenv("PATH")}, string(os.PathListSeparator))
	complete := func(args ...string) string {
		cmd := exec.Command(kubectl, append([]string{"__complete", "terminating"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+theLab.Kubeconfig)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl __complete terminating %v: %v", args, err)
		}
		return string(out)
	}
	if out := complete("why", "-n", ns, "pod/"); !strings.Contains(out, "pod/tab-0\n") {
		t.Errorf("pod/<TAB>:\n%s", out)
	}
	if out := complete("list", "-n", "tab"); !strings.Contains(out, ns+"\n") {
		t.Errorf("-n <TAB>:\n%s", out)
	}
	if out := complete("list", "--context", ""); !strings.Contains(out, "lab-nobody\n") {
		t.Errorf("--context <TAB>:\n%s", out)
	}
}
