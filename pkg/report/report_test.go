package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make golden` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run `make golden` if the change is intended)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// sample is a report with every field set.
func sample() Report {
	ts := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	pod := Item{
		Object:            ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "web-0", UID: "pod-uid"},
		DeletionTimestamp: ts, GracePeriodSeconds: 30, TerminatingSeconds: 630, OverdueSeconds: 600, Stuck: true, Severity: Critical, Node: "node-1",
		Causes: []Cause{{
			Code: "NodeUnreachable", Severity: Critical, Confidence: 0.9, Summary: "node node-1 stopped reporting",
			Evidence:    []string{"lease kube-node-lease/node-1: spec.renewTime 2026-11-22T11:50:00Z (10m ago, leaseDurationSeconds 40s)"},
			Remediation: []Step{{Action: "Check the node", Command: "kubectl get node node-1 -o wide", Risk: "none: read-only"}, {Action: "Force-delete", Command: "kubectl delete pod web-0 -n shop --grace-period=0 --force", Risk: "split brain"}},
		}},
		Checks:   []Check{{Name: "node alive", Status: Fail, Detail: "lease 10m old"}, {Name: "finalizers cleared", Status: Pass, Detail: "no metadata.finalizers"}},
		Skipped:  []Skip{{Check: "events", Reason: SkipForbidden, Detail: "events is forbidden"}},
		Timeline: []Moment{{Time: metav1.NewTime(ts.Add(-630 * time.Second)), Event: "deletion requested (grace period 30s)", DeletionRequest: true}, {Time: ts, Event: "grace period ends (metadata.deletionTimestamp)"}},
	}
	ns := Item{
		Object:            ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: "shop", UID: "ns-uid"},
		DeletionTimestamp: ts, TerminatingSeconds: 700, OverdueSeconds: 700, Stuck: true, Severity: Critical,
		Causes: []Cause{{Code: "PodStuckTerminating", Severity: Critical, Confidence: 0.8, Summary: "pod web-0 is stuck",
			Evidence: []string{"pods/web-0"}, Remediation: []Step{{Action: "Fix the pod", Risk: "none"}}, BlockedBy: []Item{pod, pod}}},
	}
	grace := Item{
		Object:            ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "batch-0", UID: "batch-uid"},
		DeletionTimestamp: ts, GracePeriodSeconds: 3600, TerminatingSeconds: 5, Severity: Info,
		Causes: []Cause{{Code: "WithinGracePeriod", Severity: Info, Confidence: 1, Summary: "inside its grace period: 59m55s left of 3600s",
			Evidence: []string{"metadata.deletionGracePeriodSeconds: 3600"}, Remediation: []Step{{Action: "Wait", Risk: "none"}}}},
	}
	return Report{APIVersion: APIVersion, Kind: Kind, GeneratedAt: ts, Items: []Item{ns, pod, grace},
		Skipped: []Skip{{Check: "list widgets.example.com", Reason: SkipForbidden, Detail: "forbidden"}}}
}

func TestRendering(t *testing.T) {
	r := sample()
	var list, wide, why, whyWide bytes.Buffer
	if err := WriteList(&list, r, Style{Namespaces: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteList(&wide, r, Style{Wide: true, Namespaces: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhy(&why, r, Style{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "list.golden", list.Bytes())
	golden(t, "list-wide.golden", wide.Bytes())
	golden(t, "why.golden", why.Bytes())
	if err := WriteWhy(&whyWide, r, Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "why-wide.golden", whyWide.Bytes())
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", append(data, '\n'))
	for _, out := range []string{list.String(), wide.String(), why.String()} {
		if strings.Contains(out, "\x1b[") {
			t.Errorf("colour without Style.Color: %q", out)
		}
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	var b bytes.Buffer
	if err := WriteList(&b, sample(), Style{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[") {
		t.Errorf("no colour codes with Style.Color")
	}
}

func TestEmptyReport(t *testing.T) {
	var b bytes.Buffer
	if err := WriteList(&b, Report{}, Style{}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "" {
		t.Errorf("an empty report prints nothing on stdout (the command says so on stderr), got %q", b.String())
	}
}

func TestName(t *testing.T) {
	cases := map[ObjectRef]string{
		{APIVersion: "v1", Kind: "Pod", Name: "a"}:                      "pod/a",
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "b"}:          "deployment.apps/b",
		{APIVersion: "example.com/v1alpha1", Kind: "Widget", Name: "c"}: "widget.example.com/c",
	}
	for ref, want := range cases {
		if got := Name(ref); got != want {
			t.Errorf("Name(%+v) = %q, want %q", ref, got, want)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	cases := map[time.Duration]string{
		// kubectl's AGE column, to the letter.
		0: "0s", 59 * time.Second: "59s", 90 * time.Second: "90s", 5*time.Minute + 30*time.Second: "5m30s", 15 * time.Minute: "15m",
		2*time.Hour + 10*time.Minute: "130m", 3*time.Hour + 10*time.Minute: "3h10m", 5 * 24 * time.Hour: "5d",
		1999 * time.Millisecond: "2s", // rounded, not truncated
	}
	for d, want := range cases {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// Thousands of objects held the same way make one block, concise: one
// diagnosis, a count and examples; -o wide keeps every one.
func TestConciseWhyStaysShort(t *testing.T) {
	held := func(name string) Item {
		return Item{Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "big", Name: name}, Stuck: true, Severity: Warning,
			OverdueSeconds: 600, Finalizers: []string{"acme.io/keep"},
			Causes: []Cause{{Code: "FinalizerPending", Severity: Warning, Summary: "configmap " + name + " waits for acme.io/keep",
				Evidence:    []string{"metadata.finalizers: [acme.io/keep]"},
				Remediation: []Step{{Action: "Bring back acme", Risk: "none", RiskLevel: RiskNone}, {Action: "Remove it", Command: "kubectl patch ...", Risk: "high: skips cleanup", RiskLevel: RiskHigh}}}}}
	}
	var nested, top []Item
	for i := range 3000 {
		nested = append(nested, held(fmt.Sprintf("o%04d", i)))
		top = append(top, held(fmt.Sprintf("o%04d", i)))
	}
	ns := Item{Object: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "big"}, Stuck: true, Severity: Warning, OverdueSeconds: 600,
		Causes: []Cause{{Code: "NamespaceFinalizersRemaining", Severity: Warning, Summary: "3000 objects wait for acme.io/keep", BlockedBy: nested}}}
	r := Report{Items: append([]Item{ns}, top...)}
	var concise, wide bytes.Buffer
	if err := WriteWhy(&concise, r, Style{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhy(&wide, r, Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(concise.String(), "\n")
	if lines > 20 || !strings.Contains(concise.String(), "3000 objects held the same way: configmap/o0000 -n big, configmap/o0001 -n big, configmap/o0002 -n big, +2997 more") ||
		!strings.Contains(concise.String(), "3000 objects (configmap/o0000, configmap/o0001, configmap/o0002, +2997 more)  warning FinalizerPending") ||
		!strings.Contains(concise.String(), "1 more step, up to risk high: -o wide") {
		t.Errorf("concise, %d lines:\n%s", lines, concise.String())
	}
	if n := strings.Count(wide.String(), "kubectl patch"); n != 6000 {
		t.Errorf("-o wide shows every object's steps: %d removal commands, want 6000", n)
	}
}

// A namespace's live scan names every type holding leftovers: concise shows
// the first lines of the top cause's evidence and says how many more -o wide
// shows.
func TestConciseEvidenceIsCapped(t *testing.T) {
	var evidence []string
	for i := range 50 {
		evidence = append(evidence, fmt.Sprintf("live scan: things%03d.example.com: 3 object(s) left", i))
	}
	r := Report{Items: []Item{{Object: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "big"}, Stuck: true, Severity: Critical,
		Causes: []Cause{{Code: "NamespaceControllerInactive", Severity: Critical, Summary: "no condition", Evidence: evidence}}}}}
	var concise, wide bytes.Buffer
	if err := WriteWhy(&concise, r, Style{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhy(&wide, r, Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(concise.String(), "live scan:"); n != conciseEvidence || !strings.Contains(concise.String(), "evidence: 42 more lines: -o wide") {
		t.Errorf("concise shows %d evidence lines:\n%s", n, concise.String())
	}
	if n := strings.Count(wide.String(), "live scan:"); n != 50 {
		t.Errorf("-o wide shows %d of the 50 evidence lines", n)
	}
}

// Objects held the same way are one block: grouping compares what their top
// cause is about (report.About), never its wording, so durations, counts and
// the objects' own names in the summaries do not split a block, and two
// blockers (two nodes) never share one, however alike the summaries read.
func TestHeldTheSameWayByWhatTheCauseIsAbout(t *testing.T) {
	pod := func(name, node, summary string, count int) Item {
		return Item{Object: ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name}, Stuck: true, Severity: Critical,
			Causes: []Cause{{Code: "NodeUnreachable", Severity: Critical, Summary: summary, About: About{Node: node, Count: count}}}}
	}
	groups := sameWay([]Item{
		pod("web-0", "node-a", "web-0: node node-a stopped reporting 3m38s ago (2 pods)", 2),
		pod("web-1", "node-a", "web-1: node node-a stopped reporting 45s ago (7 pods)", 7),
		pod("web-2", "node-b", "node stopped reporting", 0),
		pod("web-3", "node-c", "node stopped reporting", 0),
		pod("web-4", "node-a", "the kubelet on node-a is gone", 1),
	})
	var got []string
	for _, g := range groups {
		var names []string
		for _, it := range g {
			names = append(names, it.Object.Name)
		}
		got = append(got, strings.Join(names, ","))
	}
	if want := []string{"web-0,web-1,web-4", "web-2", "web-3"}; !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
}

// A list row names kind/name, and kind.group/name only where two groups
// share the kind, so six CRDs of one kind never print six identical rows.
func TestListNamesAmbiguousKindsWithTheirGroup(t *testing.T) {
	item := func(apiVersion, kind, name string) Item {
		return Item{Object: ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: "big", Name: name}, Causes: []Cause{{Code: "FinalizerPending"}}}
	}
	r := Report{Items: []Item{item("a.example.com/v1", "Thing", "obj-1"), item("b.example.com/v1", "Thing", "obj-1"),
		item("apps/v1", "Deployment", "web"), item("v1", "Pod", "web-0")}}
	var b bytes.Buffer
	if err := WriteList(&b, r, Style{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"thing.a.example.com/obj-1 ", "thing.b.example.com/obj-1 ", "deployment/web ", "pod/web-0 "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, b.String())
		}
	}
}

// --sort-by takes a JSONPath into the items, as kubectl's: numbers as numbers.
func TestSortBy(t *testing.T) {
	items := func() []Item {
		return []Item{
			{Object: ObjectRef{Name: "b"}, OverdueSeconds: 9, Causes: []Cause{{Code: "NodeUnreachable"}}},
			{Object: ObjectRef{Name: "c"}, OverdueSeconds: 100, Causes: []Cause{{Code: "FinalizerPending"}}},
			{Object: ObjectRef{Name: "a"}, OverdueSeconds: 10, Causes: []Cause{{Code: "AdmissionWebhookDenied"}}},
		}
	}
	names := func(its []Item) string {
		var out []string
		for _, it := range its {
			out = append(out, it.Object.Name)
		}
		return strings.Join(out, ",")
	}
	for expr, want := range map[string]string{".overdueSeconds": "b,a,c", ".object.name": "a,b,c", "{.causes[0].code}": "a,c,b"} {
		its := items()
		if err := SortBy(its, expr); err != nil || names(its) != want {
			t.Errorf("--sort-by %s: %v %s, want %s", expr, err, names(its), want)
		}
	}
	if err := SortBy(nil, "{.causes[0"); err == nil || !strings.Contains(err.Error(), "invalid --sort-by") {
		t.Errorf("a broken expression: %v", err)
	}
	// A field the items do not have is an error, not a silent no-op; fields
	// deep in the schema, maps and filters are accepted.
	for expr, bad := range map[string]bool{".foo": true, ".object.nmae": true, ".causes.code": true, ".overdueSeconds[0]": true,
		".causes[0].about.node": false, ".causes[0].blockedBy[0].object.name": false, ".deletionTimestamp": false, `.causes[?(@.code=="X")].severity`: false} {
		err := SortBy(items(), expr)
		if bad != (err != nil) || (bad && !strings.Contains(err.Error(), "invalid --sort-by")) {
			t.Errorf("--sort-by %s: %v, want an error %t", expr, err, bad)
		}
	}
}

// WriteJSON streams the items, yet writes the bytes json.Encoder writes for
// the whole report: with items, nested ones, none (`"items": []`), and more
// than a batch encoded at once.
func TestWriteJSONIsTheStandardEncoding(t *testing.T) {
	full := sample()
	if len(full.Items) < 2 {
		t.Fatalf("the sample report has %d items, want several", len(full.Items))
	}
	many := full
	many.Items = nil
	for len(many.Items) < 2*itemBatch+3 { // batches encoded at once, the last one short
		many.Items = append(many.Items, full.Items...)
	}
	for name, r := range map[string]Report{"items": full, "one item": {APIVersion: full.APIVersion, Kind: full.Kind, Items: full.Items[:1]}, "no items": {APIVersion: full.APIVersion, Kind: full.Kind, Items: []Item{}}, "batches": many} {
		var want, got bytes.Buffer
		e := json.NewEncoder(&want)
		e.SetIndent("", "    ")
		if err := e.Encode(r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: WriteJSON differs from json.Encoder:\n%s\nwant:\n%s", name, got.String(), want.String())
		}
	}
}

// A command that runs on a node, not where kubectl runs, says which node,
// concise and wide; its node's name is shown escaped, as all cluster text.
func TestNodeSideCommandsNameTheirNode(t *testing.T) {
	r := sample()
	r.Items = r.Items[1:2] // the pod
	r.Items[0].Causes[0].Remediation[0] = Step{Action: "Read the kubelet's log", Command: "journalctl -u kubelet", Node: "node-1\x1b[2J", Risk: "none: read-only", RiskLevel: RiskNone}
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteWhy(&b, r, Style{Wide: wide}); err != nil {
			t.Fatal(err)
		}
		if want := `on node node-1\x1b[2J: $ journalctl -u kubelet`; !strings.Contains(b.String(), want) {
			t.Errorf("wide %v: no %q in\n%s", wide, want, b.String())
		}
	}
}

func TestFirstFew(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c, d, e"},
		{[]string{"a", "b", "c", "d", "e", "f"}, "a, b, c, d, e, +1 more"},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, "a, b, c, d, e, +3 more"},
	} {
		if got := FirstFew(c.names); got != c.want {
			t.Errorf("FirstFew(%q) = %q, want %q", c.names, got, c.want)
		}
	}
}

// A cause ranked above a more confident one says why: the order is
// severity, then nearest the root, then confidence.
func TestRankAboveAMoreConfidentCauseIsExplained(t *testing.T) {
	cause := func(code string, sev Severity, conf float64) Cause {
		return Cause{Code: code, Severity: sev, Confidence: conf, Summary: code + " holds it"}
	}
	for _, tc := range []struct {
		causes []Cause
		want   []string
	}{
		{[]Cause{cause("A", Critical, 0.6), cause("B", Warning, 0.8)}, []string{"1. critical A (confidence 0.60; ranked above a 0.80 one: more severe)", "2. warning B (confidence 0.80)"}},
		{[]Cause{cause("A", Warning, 0.6), cause("B", Warning, 0.8)}, []string{"1. warning A (confidence 0.60; ranked above a 0.80 one: nearer the root)"}},
		{[]Cause{cause("A", Warning, 0.8), cause("B", Warning, 0.6)}, []string{"1. warning A (confidence 0.80): ", "2. warning B (confidence 0.60): "}},
	} {
		it := Item{Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c"}, Stuck: true, Severity: tc.causes[0].Severity, Causes: tc.causes}
		for _, wide := range []bool{false, true} {
			var out bytes.Buffer
			if err := WriteWhy(&out, Report{Items: []Item{it}}, Style{Wide: wide}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("wide %v: no %q in:\n%s", wide, w, out.String())
				}
			}
		}
	}
}

// Objects the cause's summary already names (as its rule records them,
// Cause.Names) are not listed again under "blocked by".
func TestHeldObjectsAreListedOnce(t *testing.T) {
	held := func(name string) Item {
		return Item{Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}, Stuck: true, Severity: Warning,
			Causes: []Cause{{Code: "FinalizerPending", Severity: Warning, Summary: "held by acme.io/keep"}}}
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"configmap/w-1", "configmap/w-2", "configmap/w-3"}, "└── the 3 objects above  warning FinalizerPending"},
		{[]string{"configmap/w-10", "configmap/w-2", "configmap/w-3"}, "└── 3 objects (configmap/w-1, configmap/w-2, configmap/w-3)"},
	} {
		summary := "3 objects are held (" + strings.Join(tc.names, ", ") + ")"
		ns := Item{Object: ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "ns"}, Stuck: true, Severity: Warning,
			Causes: []Cause{{Code: "FinalizerPending", Severity: Warning, Summary: summary, Names: tc.names, BlockedBy: []Item{held("w-1"), held("w-2"), held("w-3")}}}}
		var out bytes.Buffer
		if err := WriteWhy(&out, Report{Items: []Item{ns}}, Style{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("no %q in:\n%s", tc.want, out.String())
		}
	}
}

// A forecast (preflight) heads each object with what its deletion would do,
// and groups objects by how their deletion would be held, or by nothing
// found that would hold it: never "held the same way", as nothing is held.
func TestForecastScreens(t *testing.T) {
	clear := func(name string) Item {
		return Item{Object: ObjectRef{Kind: "Namespace", Resource: "namespaces", Name: name}, Forecast: true, Causes: []Cause{}}
	}
	held := Item{Object: ObjectRef{Kind: "Namespace", Resource: "namespaces", Name: "preview"}, Forecast: true, Stuck: true, Severity: Critical,
		Causes: []Cause{{Code: "FinalizerPending", Severity: Critical, Confidence: 0.6, Summary: "once deleted, ...", Forecast: true}}}
	var out strings.Builder
	if err := WriteWhy(&out, Report{Items: []Item{held, clear("a"), clear("b")}}, Style{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"namespace/preview  CRITICAL  not being deleted  its deletion WOULD STICK\n",
		"2 objects with nothing found that would hold their deletion: namespace/a, namespace/b\nnamespace/a  CLEAR  not being deleted  nothing found that would hold it\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "held the same way") || strings.Contains(out.String(), "Terminating") {
		t.Errorf("a forecast says nothing is held or Terminating:\n%s", out.String())
	}
	// A warning (a suspect, a failure its controller reports now) says the
	// deletion may stick, not that it would.
	held.Severity, held.Causes[0].Severity = Warning, Warning
	out.Reset()
	if err := WriteWhy(&out, Report{Items: []Item{held}}, Style{}); err != nil {
		t.Fatal(err)
	}
	if want := "namespace/preview  WARNING  not being deleted  its deletion MAY STICK\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("a warning's forecast: want %q:\n%s", want, out.String())
	}
}
