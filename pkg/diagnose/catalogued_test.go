package diagnose

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
)

// Every report a rule makes, in every test of this package and from every
// snapshot fixture, names only causes the catalogue knows, each documented
// in docs/causes.md (as `explain` prints it) and linked there, each step
// graded with a riskLevel, the first with a command to run (at least a
// read-only look), each command that runs on a node labelled with it
// (report.Step.Node). TestMain checks the reports of every unit case:
// Diagnose shows them to check (diagnosed), and a report that breaks these
// rules fails the run, naming the test line that made it.

// cataloguing is what a code must have: a catalogue entry and a docs entry,
// whose remediation declares every step the rules give (by its id).
type cataloguing struct {
	known, documented func(catalog.Code) bool
	declared          func(catalog.Code, string) bool
}

// catalogued is the real catalogue (pkg/catalog/causes.yaml, embedded).
var catalogued = cataloguing{
	known:      func(c catalog.Code) bool { _, ok := catalog.Lookup(c); return ok },
	documented: func(c catalog.Code) bool { _, ok := catalog.Describe(c); return ok },
	declared:   func(c catalog.Code, id string) bool { _, ok := catalog.StepOf(c, id); return ok },
}

// uncatalogued lists what is wrong with a report's causes, nested ones
// included, and notes the grades its steps have (gradedByRules).
func uncatalogued(r report.Report) []string {
	eachCause(r.Items, func(_ report.Item, c report.Cause) {
		for _, s := range c.Remediation {
			givenByRules.Store(givenKey(catalog.Code(c.Code), s.ID), true)
		}
	})
	return catalogued.problems(r)
}

// eachCause visits every cause of the items, nested ones included.
func eachCause(items []report.Item, visit func(report.Item, report.Cause)) {
	for _, it := range items {
		for _, c := range it.Causes {
			visit(it, c)
			eachCause(c.BlockedBy, visit)
		}
	}
}

func (cat cataloguing) problems(r report.Report) []string {
	var out []string
	eachCause(r.Items, func(it report.Item, c report.Cause) {
		name := it.Object.Resource + "/" + it.Object.Name
		code := catalog.Code(c.Code)
		if !cat.known(code) {
			out = append(out, fmt.Sprintf("%s: code %q is not in the catalogue", name, c.Code))
		} else if !cat.documented(code) {
			out = append(out, fmt.Sprintf("%s: code %s has no entry in docs/causes.md", name, c.Code))
		}
		for _, missing := range unnamed(c) {
			out = append(out, fmt.Sprintf("%s: %s does not name its %s (about: %+v)", name, c.Code, missing, c.About))
		}
		if !slices.Equal(c.Evidence, report.Lines(c.Facts)) {
			out = append(out, fmt.Sprintf("%s: %s: its evidence %q is not its facts' lines %q", name, c.Code, c.Evidence, report.Lines(c.Facts)))
		}
		if c.Docs != catalog.DocsURL(code) {
			out = append(out, fmt.Sprintf("%s: %s links %q, not its docs entry", name, c.Code, c.Docs))
		}
		if len(c.Remediation) == 0 || c.Remediation[0].Command == "" {
			out = append(out, fmt.Sprintf("%s: %s: the first step has no command to run: %+v", name, c.Code, c.Remediation[:min(1, len(c.Remediation))]))
		}
		for _, s := range c.Remediation {
			switch {
			case s.RiskLevel.Weight() == 0:
				out = append(out, fmt.Sprintf("%s: %s: step %q has riskLevel %q", name, c.Code, s.Action, s.RiskLevel))
			case cat.documented(code) && !cat.declared(code, s.ID):
				out = append(out, fmt.Sprintf("%s: %s: step %q (id %q) is not a step of the code's entry in the catalogue (causes.yaml)", name, c.Code, s.Action, s.ID))
			case strings.ContainsAny(s.Action+s.Risk, "{}"):
				out = append(out, fmt.Sprintf("%s: %s: step %s leaves an argument unfilled: %q", name, c.Code, s.ID, s.Action+" / "+s.Risk))
			}
			if s.Node == "" && runsOnANode(s.Command) {
				out = append(out, fmt.Sprintf("%s: %s: step %q runs on a node it does not name: %s", name, c.Code, s.Action, s.Command))
			}
		}
	})
	return out
}

// nodePrograms are the programs a suggested command runs on a node, not
// where kubectl runs.
var nodePrograms = []string{"journalctl", "crictl", "systemctl", "findmnt"}

// runsOnANode says whether a command, or a part of its pipelines, runs one
// of nodePrograms.
func runsOnANode(command string) bool {
	for _, part := range strings.FieldsFunc(command, func(r rune) bool { return r == '|' || r == ';' }) {
		if words := strings.Fields(part); len(words) > 0 && slices.Contains(nodePrograms, words[0]) {
			return true
		}
	}
	return false
}

// givenByRules holds a givenKey for each step a rule gave a cause of a
// code, in the reports checked: a step the catalogue declares and no rule
// gives is as wrong as the reverse (TestMain).
var givenByRules sync.Map

func givenKey(c catalog.Code, id string) string { return string(c) + " " + id }

// notGiven lists the catalogue's steps that no rule gave in the reports
// checked.
func notGiven() []string {
	var out []string
	for _, c := range catalog.Codes() {
		for _, s := range catalog.Remedies(c) {
			if _, ok := givenByRules.Load(givenKey(c, s.ID)); !ok {
				out = append(out, fmt.Sprintf("the catalogue (causes.yaml) declares step %s of %s (%q), which no rule gave in the tests", s.ID, c, s.Action))
			}
		}
	}
	return out
}

// unnamed lists the fields of report.About that the catalogue says identify
// a cause of c's code and that c leaves empty: grouping would then lump
// together objects held by different blockers.
func unnamed(c report.Cause) []string {
	e, _ := catalog.Lookup(catalog.Code(c.Code))
	var out []string
	for _, f := range []struct {
		id   catalog.Identity
		name string
		set  bool
	}{
		{catalog.ByNode, "node", c.About.Node != ""},
		{catalog.ByFinalizer, "finalizers", len(c.About.Finalizers) > 0},
		{catalog.ByObject, "object", c.About.Object != nil && c.About.Object.Name != ""},
		{catalog.ByWebhook, "webhook", c.About.Webhook != ""},
	} {
		if e.Identity.Has(f.id) && !f.set {
			out = append(out, f.name)
		}
	}
	return out
}

var checked struct {
	sync.Mutex
	reports  int
	problems []string
}

// check is diagnosed in this package's tests: it records what is wrong with
// a report and where in the tests it was made.
func check(s *observed.Snapshot, r report.Report, forecast bool) {
	problems := uncatalogued(r)
	if !forecast {
		problems = append(problems, checkVerdicts(s, r)...)
	}
	checked.Lock()
	defer checked.Unlock()
	checked.reports++
	if len(problems) == 0 {
		return
	}
	where := "outside the tests"
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.File, "_test.go") {
			fn := f.Function[strings.LastIndex(f.Function, "/")+1:] // diagnose.TestX.func2
			_, fn, _ = strings.Cut(fn, ".")
			where = fmt.Sprintf("%s:%d (%s)", filepath.Base(f.File), f.Line, fn)
			break
		}
		if !more {
			break
		}
	}
	for _, p := range problems {
		checked.problems = append(checked.problems, where+": "+p)
	}
}

func TestMain(m *testing.M) {
	diagnosed = check
	code := m.Run()
	checked.Lock()
	defer checked.Unlock()
	if flag.Lookup("test.run").Value.String() == "" { // every test ran: every rule's grades are in
		checked.problems = append(checked.problems, notGiven()...)
	}
	if len(checked.problems) > 0 {
		fmt.Fprintf(os.Stderr, "--- FAIL: reports of %d Diagnose calls checked against the catalogue: %d problem(s)\n", checked.reports, len(checked.problems))
		for _, p := range checked.problems {
			fmt.Fprintln(os.Stderr, "    "+p)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Every code a rule emits on the gallery's snapshots (pkg/cmd's fixtures,
// saved from the lab) is catalogued, documented and linked, every step graded.
func TestRulesEmitOnlyCataloguedCodes(t *testing.T) {
	files, err := filepath.Glob("../cmd/testdata/snapshots/*.json.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshot fixtures: %v", err)
	}
	codes := map[string]bool{}
	for _, f := range files {
		saved, err := snapfile.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r := Diagnose(saved.Snapshot)
		for _, p := range uncatalogued(r) {
			t.Errorf("%s: %s", filepath.Base(f), p)
		}
		eachCause(r.Items, func(_ report.Item, c report.Cause) { codes[c.Code] = true })
	}
	t.Logf("%d fixtures, %d codes emitted", len(files), len(codes))
}

// The check catches each omission once: a code missing from the catalogue,
// a catalogued code missing from docs/causes.md (the docs without the
// emitted code's entry), a stale docs link, an ungraded step, a step graded
// as no step of the code's docs entry is, a first step with no command, a
// cause with no step, a node-side command that does
// not name its node, a cause that
// does not name what identifies it (catalog.Identity), nested or not;
// and every Diagnose of this package's tests is checked.
func TestCataloguedCheckCatchesOmissions(t *testing.T) {
	good := Diagnose(snap(terminatingPod(10*time.Minute, 30)))
	if p := uncatalogued(good); len(p) > 0 || len(good.Items[0].Causes) == 0 {
		t.Fatalf("a pod's report: %v %+v", p, good.Items)
	}
	emitted := catalog.Code(good.Items[0].Causes[0].Code)
	undocumented := catalogued
	undocumented.documented = func(c catalog.Code) bool { return c != emitted && catalogued.documented(c) }
	undeclared := catalogued
	undeclared.declared = func(catalog.Code, string) bool { return false }
	for _, tc := range []struct {
		name  string
		cat   cataloguing
		spoil func(c *report.Cause)
		want  string
	}{
		{"uncatalogued code", catalogued, func(c *report.Cause) { c.Code = "NodeVanished"; c.Docs = catalog.DocsURL("NodeVanished") }, `code "NodeVanished" is not in the catalogue`},
		{"undocumented code", undocumented, func(*report.Cause) {}, "code " + string(emitted) + " has no entry in docs/causes.md"},
		{"stale docs link", catalogued, func(c *report.Cause) { c.Docs = "" }, "not its docs entry"},
		{"ungraded step", catalogued, func(c *report.Cause) { c.Remediation[0].RiskLevel = "" }, `has riskLevel ""`},
		{"a step the catalogue does not declare", undeclared, func(c *report.Cause) { c.Remediation = c.Remediation[:1] }, "is not a step of the code's entry in the catalogue"},
		{"an argument left unfilled", catalogued, func(c *report.Cause) { c.Remediation[0].Action += " {finalizer}" }, "leaves an argument unfilled"},
		{"first step without a command", catalogued, func(c *report.Cause) { c.Remediation[0].Command = "" }, "the first step has no command to run"},
		{"evidence that is not its facts", catalogued, func(c *report.Cause) { c.Evidence = append(c.Evidence, "said twice") }, "is not its facts' lines"},
		{"no step", catalogued, func(c *report.Cause) { c.Remediation = nil }, "the first step has no command to run"},
		{"node-side command without its node", catalogued, func(c *report.Cause) {
			c.Remediation[0].Command, c.Remediation[0].Node = "kubectl get nodes; journalctl -u kubelet", ""
		}, "runs on a node it does not name"},
		{"unnamed node", catalogued, func(c *report.Cause) {
			c.Code, c.Docs, c.About = "NodeUnreachable", catalog.DocsURL("NodeUnreachable"), report.About{}
			c.Remediation = []report.Step{step(catalog.NodeUnreachable, "check-node", "kubectl get node n")}
		},
			"NodeUnreachable does not name its node"},
		{"unnamed finalizer", catalogued, func(c *report.Cause) {
			c.Code, c.Docs, c.About = "FinalizerPending", catalog.DocsURL("FinalizerPending"), report.About{Node: "n"}
			c.Remediation = []report.Step{step(catalog.FinalizerPending, "read-object", "kubectl get pod p -o yaml")}
		}, "FinalizerPending does not name its finalizers"},
		{"nested", catalogued, func(c *report.Cause) {
			nested := good.Items[0]
			nested.Causes = []report.Cause{{Code: "NodeVanished", Docs: catalog.DocsURL("NodeVanished"), Remediation: c.Remediation}}
			c.BlockedBy = []report.Item{nested}
		}, `code "NodeVanished" is not in the catalogue`},
	} {
		r := Diagnose(snap(terminatingPod(10*time.Minute, 30)))
		tc.spoil(&r.Items[0].Causes[0])
		if p := tc.cat.problems(r); len(p) != 1 || !strings.Contains(p[0], tc.want) {
			t.Errorf("%s: %q, want one problem with %q", tc.name, p, tc.want)
		}
	}

	checked.Lock()
	before := checked.reports
	checked.Unlock()
	Diagnose(snap(terminatingPod(time.Minute, 30)))
	checked.Lock()
	after := checked.reports
	checked.Unlock()
	if after != before+1 {
		t.Errorf("Diagnose's report was not checked (%d checks before, %d after)", before, after)
	}
}
