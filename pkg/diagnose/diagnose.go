// Package diagnose turns a Snapshot into ranked findings. It is pure: no I/O,
// no clock but Snapshot.Now, so the same rules run on a live cluster, a dump
// and in table-driven tests.
package diagnose

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kubeversion"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Diagnose builds the report for every target of the snapshot, most severe first.
func Diagnose(s *observed.Snapshot) report.Report {
	r := reportOf(s, diagnoseTarget)
	if diagnosed != nil {
		diagnosed(s, r, false)
	}
	return r
}

// Verdicts is Diagnose for a report that shows each item's verdict alone
// (list's tables): the same items in the same order, each cause with its
// code, severity, confidence, summary and what it is about, but none with
// the evidence it read or its remediation, and no item with its timeline.
// Building those was half the judgement of three thousand held objects
// (a sixth of list -A's CPU over them). This package's
// tests hold every report Diagnose makes in them to the one Verdicts makes
// of the same snapshot (checkVerdicts).
func Verdicts(s *observed.Snapshot) report.Report {
	return reportOf(s, func(s *observed.Snapshot, t *observed.Target) report.Item { return diagnoseAt(s, t, 0, true) })
}

// reportOf is the report of every target of the snapshot, each judged by
// judge, most severe first.
func reportOf(s *observed.Snapshot, judge func(*observed.Snapshot, *observed.Target) report.Item) report.Report {
	r := report.Report{
		APIVersion:  report.APIVersion,
		Kind:        report.Kind,
		GeneratedAt: metav1.NewTime(s.Now),
		Items:       []report.Item{},
		Skipped:     s.Skipped,
	}
	r.Items = make([]report.Item, len(s.Targets))
	defer whileJudging(s)()
	// On every CPU: a judgement reads the snapshot and writes nothing shared,
	// and a list -A of thousands of held objects judges each.
	parallel.Run("the diagnosis", runtime.GOMAXPROCS(0), len(s.Targets), func(i int) { r.Items[i] = judge(s, s.Targets[i]) })
	SortItems(r.Items)
	r.Complete = len(r.Incomplete()) == 0
	r.NotApplicable = s.NotServed
	if len(s.Targets) > 0 {
		r.Server = serverOf(s)
	}
	return r
}

// serverOf says which release the verdicts were made for, and what they
// assume of it.
func serverOf(s *observed.Snapshot) *report.Server {
	srv := &report.Server{Assumptions: []string{}}
	if s.Server != nil {
		srv.GitVersion = s.Server.GitVersion
	}
	for _, g := range kubeversion.Gates {
		srv.Assumptions = append(srv.Assumptions, g.On(minorOf(s)).Why)
	}
	return srv
}

// minorOf is the server's minor version, 0 when unknown.
func minorOf(s *observed.Snapshot) int {
	if s.Server == nil {
		return 0
	}
	return kubeversion.Minor(s.Server.GitVersion)
}

// diagnosed, when set (by this package's tests, which check every report
// they make), is shown each report Diagnose and Preflight return, with the
// snapshot it judged and whether it forecasts (Preflight's); nil otherwise.
var diagnosed func(s *observed.Snapshot, r report.Report, forecast bool)

// SortItems orders items most severe first, then longest overdue, then by
// name. It sorts their indices and moves each item once: the items are
// large, and a sort that compared and swapped them whole took a tenth of
// list -A's judgement over 3,000 held objects.
func SortItems(items []report.Item) {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &items[i], &items[j]
		return cmp.Or(cmp.Compare(b.Severity.Weight(), a.Severity.Weight()), cmp.Compare(b.OverdueSeconds, a.OverdueSeconds),
			strings.Compare(a.Object.Namespace, b.Object.Namespace), strings.Compare(a.Object.Resource, b.Object.Resource),
			strings.Compare(a.Object.Name, b.Object.Name))
	})
	sorted := make([]report.Item, len(items))
	for k, i := range order {
		sorted[k] = items[i]
	}
	copy(items, sorted)
}

func diagnoseTarget(s *observed.Snapshot, t *observed.Target) report.Item {
	return diagnoseAt(s, t, 0, false)
}

// nested diagnoses t where the diagnosis of an object at parent's depth nests
// it. Nesting stops at observed.MaxDepth, so no graph of targets, however it
// loops, makes the diagnosis recurse without end.
func nested(s *observed.Snapshot, t *observed.Target, parent timing) report.Item {
	if parent.depth >= observed.MaxDepth {
		return report.Item{Object: t.Ref, Causes: []report.Cause{}, Skipped: []report.Skip{{Check: "diagnosis of " + report.Name(t.Ref),
			Reason: observed.SkipError, Detail: fmt.Sprintf("nested deeper than %d levels", observed.MaxDepth)}}}
	}
	return diagnoseAt(s, t, parent.depth+1, parent.verdictOnly)
}

// diagnoseAt judges t, nested depth levels deep in the report, for its
// verdict alone when verdictOnly (Verdicts).
func diagnoseAt(s *observed.Snapshot, t *observed.Target, depth int, verdictOnly bool) report.Item {
	tm := timingOf(t.Object, s.Now)
	tm.depth, tm.verdictOnly = depth, verdictOnly
	item := itemOf(t)
	item.GracePeriodSeconds = tm.grace
	item.TerminatingSeconds = seconds(tm.terminating)
	item.OverdueSeconds = seconds(tm.overdue)
	if !verdictOnly {
		item.Timeline = timelineOf(s, t, tm)
	}
	if !tm.deadline.IsZero() { // being deleted: its deletionTimestamp
		item.DeletionTimestamp = metav1.NewTime(tm.deadline)
	}

	x := subjectOf(s, t, tm)
	causes := explainTarget(x)
	if x.pod != nil {
		item.Checks = podChecks(t.Pod, tm, *x.pod)
		item.Node = t.Pod.Spec.NodeName
	}
	if len(causes) == 0 && tm.overdue > 0 {
		causes = append(causes, incomplete(t, tm))
	}
	rank(causes)
	if tm.remaining > 0 {
		causes = forecast(t.Ref, causes, tm)
	}
	if verdictOnly {
		withoutDetail(causes)
	}
	item.Causes = documented(causes)
	if len(causes) > 0 {
		item.Severity = causes[0].Severity
	}
	item.Stuck = tm.overdue > 0 && item.Severity.Weight() > report.Info.Weight()
	return item
}

// itemOf is what an item says of t as read, whatever its verdict.
func itemOf(t *observed.Target) report.Item {
	item := report.Item{Object: t.Ref, Finalizers: t.Object.GetFinalizers(), ResourceVersion: t.Object.GetResourceVersion(), Skipped: t.Skipped}
	if t.Contents != nil && t.Contents.Read.Types > 0 {
		read := t.Contents.Read
		item.ContentsRead = &read
	}
	return item
}

// rank orders causes most likely root first (causeLess).
func rank(causes []report.Cause) {
	sort.SliceStable(causes, func(i, j int) bool { return causeLess(causes[i], causes[j]) })
}

// documented writes what each cause derives from its code and facts: its
// docs link and its evidence lines.
func documented(causes []report.Cause) []report.Cause {
	for i := range causes {
		causes[i].Docs = catalog.DocsURL(catalog.Code(causes[i].Code))
		causes[i].Evidence = report.Lines(causes[i].Facts)
	}
	return causes
}

// withoutDetail leaves causes their verdicts alone: no evidence, no
// remediation (what rules built of them anyway).
func withoutDetail(causes []report.Cause) {
	for i := range causes {
		causes[i].Facts, causes[i].Remediation = nil, nil
	}
}

// incomplete is the honest answer when nothing explains an overdue object.
func incomplete(t *observed.Target, tm timing) report.Cause {
	evidence := []report.Fact{report.FieldFact("metadata.deletionTimestamp", fmt.Sprintf("%s (%s ago)", tm.deadline.UTC().Format(time.RFC3339), report.HumanDuration(tm.overdue)))}
	for _, sk := range t.Skipped {
		evidence = append(evidence, report.Noted(fmt.Sprintf("not read: %s (%s)", sk.Check, sk.Reason)))
	}
	return cause(catalog.DiagnosisIncomplete, settling(report.Warning, tm), 0.3,
		fmt.Sprintf("%s is %s past its deletion deadline and no rule explains why", t.Ref.Kind, report.HumanDuration(tm.overdue)),
		evidence,
		step(catalog.DiagnosisIncomplete, "read-events", kubectl(t.Ref.Namespace, "get", "events", "--field-selector", "involvedObject.uid="+t.Ref.UID)))
}

func cause(code catalog.Code, sev report.Severity, confidence float64, summary string, evidence []report.Fact, steps ...report.Step) report.Cause {
	return report.Cause{
		Code:        string(code),
		Severity:    sev,
		Confidence:  confidence,
		Summary:     summary,
		Facts:       evidence,
		Remediation: steps,
	}
}

// aboutNode names node as what causes are about, where their rule left it
// unnamed (a pod's rules all speak of the pod's node).
func aboutNode(causes []report.Cause, node string) []report.Cause {
	for i := range causes {
		if causes[i].About.Node == "" {
			causes[i].About.Node = node
		}
	}
	return causes
}

// ofFinalizers names the finalizers causes explain, where their rule left
// them unnamed (a finalizer's rule speaks of that finalizer).
func ofFinalizers(causes []report.Cause, names ...string) []report.Cause {
	for i := range causes {
		if len(causes[i].About.Finalizers) == 0 {
			causes[i].About.Finalizers = names
		}
	}
	return causes
}

// Remediation steps are declared in the catalogue (pkg/catalog/causes.yaml),
// each with its id, its action and what it risks; a rule names the step and
// fills in the arguments and the command.

// step is the remediation step id of code's catalogue entry, to run
// command: its action and risk with each {name} filled from args (name,
// value pairs). An id the catalogue does not declare gives a step with no
// risk level, which the tests catch (TestEveryStepIsCatalogued).
func step(code catalog.Code, id, command string, args ...string) report.Step {
	s, _ := catalog.StepOf(code, id)
	if len(args) == 0 { // most steps: nothing to fill in
		return report.Step{ID: id, Action: s.Action, Command: command, Risk: s.Risk, RiskLevel: s.Level}
	}
	return report.Step{ID: id, Action: fillIn(s.Action, args), Command: command, Risk: fillIn(s.Risk, args), RiskLevel: s.Level}
}

// fillIn replaces each {name} of template with its value in args (name,
// value pairs), in one pass: a value that holds "{name}" (cluster text)
// stays as it is. Unknown names stay too. (A strings.Replacer did the same,
// building its tables anew for each of thousands of steps.)
func fillIn(template string, args []string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			break
		}
		b.WriteString(template[:open])
		if value, ok := argument(args, template[open+1:open+end]); ok {
			b.WriteString(value)
			template = template[open+end+1:]
		} else { // not a name: keep the brace, read on after it
			b.WriteByte('{')
			template = template[open+1:]
		}
	}
	b.WriteString(template)
	return b.String()
}

// argument is the value of name in args (name, value pairs).
func argument(args []string, name string) (string, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == name {
			return args[i+1], true
		}
	}
	return "", false
}

// onTheNode is a step whose command runs on the node (journalctl, crictl,
// systemctl), not where kubectl does: it is shown "on node NAME: $ ...".
func onTheNode(node string, s report.Step) report.Step {
	s.Node = node
	return s
}

// settling downgrades a warning to info while the object is within settleTime
// of its deadline: controllers have not had their chance yet.
func settling(sev report.Severity, tm timing) report.Severity {
	if sev == report.Warning && tm.overdue < settleTime {
		return report.Info
	}
	return sev
}

// settleTime is how long after its deadline an object may still be cleaned
// up normally (controllers and the kubelet act within seconds).
const settleTime = 30 * time.Second

// NextVerdictTime is when the verdict of a diagnosed object may next change
// with time alone, no object changing: its deletion deadline, the settle
// time past it, the pod GC's delay past it (the rules' thresholds measured
// from the deadline), or when a cause's verdict lapses (Cause.Until: a
// controller seen at work that writes no more). Zero when all have passed.
func NextVerdictTime(it report.Item, now time.Time) time.Time {
	var next time.Time
	soonest := func(at time.Time) {
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, c := range it.Causes {
		soonest(c.Until)
	}
	if !it.DeletionTimestamp.IsZero() {
		for _, past := range []time.Duration{0, settleTime, podGCDelay} {
			soonest(it.DeletionTimestamp.Add(past))
		}
	}
	return next
}

// causeLess orders two causes: more severe first, then closer to the root
// (the catalogue's depth), then more confident.
func causeLess(a, b report.Cause) bool {
	if wa, wb := a.Severity.Weight(), b.Severity.Weight(); wa != wb {
		return wa > wb
	}
	da, _ := catalog.Lookup(catalog.Code(a.Code))
	db, _ := catalog.Lookup(catalog.Code(b.Code))
	if da.Depth != db.Depth {
		return da.Depth < db.Depth
	}
	return a.Confidence > b.Confidence
}

// agree is one when n is 1, else many: the word (a verb, a pronoun) that
// agrees with a count printed by report.Count ("1 pod is", "2 pods are").
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
