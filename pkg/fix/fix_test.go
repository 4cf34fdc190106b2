package fix

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

var widget = report.ObjectRef{APIVersion: "example.com/v1", Kind: "Widget", Resource: "widgets.example.com", Namespace: "shop", Name: "w1", UID: "uid-w1"}

// held is a widget held by a third-party finalizer, its controller in the
// given state, with the report's usual steps: bring it back, then remove.
func held(controller string, finalizers ...string) report.Item {
	it := report.Item{Object: widget, ResourceVersion: "41", Stuck: true, Severity: report.Critical, Finalizers: finalizers}
	for _, f := range finalizers {
		it.Causes = append(it.Causes, report.Cause{Code: "FinalizerPending", Severity: report.Critical, About: report.About{Finalizers: []string{f}, Controller: controller},
			Remediation: []report.Step{
				{Action: "Find the controller and bring it back", RiskLevel: report.RiskLow},
				{Action: "Only if that controller is gone for good: remove " + f, Command: "kubectl patch ...", RiskLevel: report.RiskHigh, Risk: "high: skips the cleanup",
					Apply: &report.Action{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: f, ResourceVersion: "41"}},
			}})
	}
	return it
}

func TestPlan(t *testing.T) {
	high := Limits{MaxRisk: report.RiskHigh}
	for _, tc := range []struct {
		name    string
		item    report.Item
		limits  Limits
		steps   int
		refused string
		human   bool
	}{
		{"a finalizer whose controller is gone", held("gone", "example.com/cleanup"), high, 1, "", false},
		{"one step per cause, in order", held("gone", "example.com/a", "example.com/b"), high, 2, "", false},
		{"a live controller is left to finish", held("alive", "example.com/cleanup"), high, 0, "looks alive", false},
		{"unless the person allows it", held("alive", "example.com/cleanup"), Limits{MaxRisk: report.RiskHigh, AllowLiveController: true}, 1, "", false},
		{"a step riskier than allowed", held("gone", "example.com/cleanup"), Limits{MaxRisk: report.RiskLow}, 0, "high risk, above --max-risk low (high: skips the cleanup); --max-risk high would plan it", false},
		{"an object not stuck is left alone", func() report.Item {
			it := held("gone", "example.com/cleanup")
			it.Stuck = false
			it.Severity = report.Info
			return it
		}(), high, 0, "not stuck", false},
		{"a cause only a person can act on", report.Item{Object: widget, Stuck: true, Causes: []report.Cause{{Code: "NodeUnreachable", Remediation: []report.Step{
			{Action: "look", RiskLevel: report.RiskNone}, {Action: "Power the node off", Command: "", RiskLevel: report.RiskDestructive}}}}}, high, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := MakePlan(report.Report{Items: []report.Item{tc.item}}, tc.limits)
			got := p.Targets[0]
			if len(got.Steps) != tc.steps || !strings.Contains(got.Refused, tc.refused) || (got.Human != nil) != tc.human {
				t.Errorf("steps %d, refused %q, human %v", len(got.Steps), got.Refused, got.Human)
			}
			for _, s := range got.Steps {
				if !strings.Contains(s.LeavesBehind, "left as it is") {
					t.Errorf("what the step leaves behind is not said: %q", s.LeavesBehind)
				}
			}
			var b strings.Builder
			if err := WritePlan(&b, p, 0); err != nil || !strings.Contains(b.String(), p.Digest) {
				t.Errorf("plan text %q (%v)", b.String(), err)
			}
		})
	}
}

// The digest changes with what the plan is for (a resourceVersion) and
// what it sends, and only then.
// Issue 39: a plan that sends nothing for an object says why once, in the
// plan; the record under it points there (it printed the reason twice).
func TestRefusalIsSaidOnce(t *testing.T) {
	p := MakePlan(report.Report{Items: []report.Item{held("gone", "example.com/cleanup")}}, Limits{MaxRisk: report.RiskLow})
	rec := Runner{}.Run(context.Background(), p, "")
	var b strings.Builder
	if err := WritePlan(&b, p, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecord(&b, rec, 0); err != nil {
		t.Fatal(err)
	}
	reason := p.Targets[0].Refused
	if out := b.String(); reason == "" || strings.Count(out, reason) != 1 || !strings.Contains(out, ": not applied (not planned: the reason is above)") {
		t.Errorf("the reason %q is not said once:\n%s", reason, out)
	}
}

func TestDigest(t *testing.T) {
	limits := Limits{MaxRisk: report.RiskHigh}
	plan := func(mutate func(*report.Item)) string {
		it := held("gone", "example.com/cleanup")
		if mutate != nil {
			mutate(&it)
		}
		return MakePlan(report.Report{Items: []report.Item{it}}, limits).Digest
	}
	base := plan(nil)
	if plan(nil) != base {
		t.Fatal("the same plan, two digests")
	}
	if plan(func(it *report.Item) { it.Causes[0].Summary = "reworded" }) != base {
		t.Error("a summary is not part of what is sent")
	}
	for name, mutate := range map[string]func(*report.Item){
		"resourceVersion": func(it *report.Item) { it.ResourceVersion = "42" },
		"finalizer":       func(it *report.Item) { it.Causes[0].Remediation[1].Apply.Finalizer = "example.com/other" },
		"uid":             func(it *report.Item) { it.Object.UID = "uid-w2" },
	} {
		if plan(mutate) == base {
			t.Errorf("a changed %s keeps the digest", name)
		}
	}
}

func fakeWidgets(objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"})
	for _, o := range objs {
		if _, err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	}
	return dyn
}

func widgetObject(finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("shop")
	u.SetName("w1")
	u.SetUID("uid-w1")
	u.SetResourceVersion("41")
	u.SetFinalizers(finalizers)
	return u
}

// A removal is one JSON patch that tests the uid, the resourceVersion and
// the finalizer's index before removing it; a dry run says so to the server.
func TestSendRemovesOneFinalizerOnAFreshRead(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		dyn := fakeWidgets(widgetObject("example.com/a", "example.com/cleanup"))
		var patch []byte
		var opts metav1.PatchOptions
		dyn.PrependReactor("patch", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.PatchActionImpl)
			patch, opts = p.GetPatch(), p.PatchOptions
			return false, nil, nil
		})
		s := Sender{Dynamic: dyn, DryRun: dryRun, Now: time.Now}
		sent, refused := s.Send(context.Background(), report.Action{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: "example.com/cleanup", ResourceVersion: "41"})
		var ops []map[string]string
		if err := json.Unmarshal(patch, &ops); err != nil || !sent.OK || refused != "" {
			t.Fatalf("dry run %v: %+v, patch %s", dryRun, sent, patch)
		}
		want := []string{"test /metadata/uid uid-w1", "test /metadata/resourceVersion 41", "test /metadata/finalizers/1 example.com/cleanup", "remove /metadata/finalizers/1 "}
		for i, op := range ops {
			if got := op["op"] + " " + op["path"] + " " + op["value"]; i >= len(want) || got != want[i] {
				t.Errorf("op %d: %q", i, got)
			}
		}
		if dryRun != (len(opts.DryRun) == 1) || sent.Request != string(patch) {
			t.Errorf("dry run %v: options %+v, recorded %q", dryRun, opts, sent.Request)
		}
	}
	// Gone already, or the finalizer already removed: nothing sent, no failure.
	dyn := fakeWidgets(widgetObject("example.com/a"))
	s := Sender{Dynamic: dyn, Now: time.Now}
	if sent, refused := s.Send(context.Background(), report.Action{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: "example.com/cleanup", ResourceVersion: "41"}); !sent.OK || refused != "" || !strings.Contains(sent.Answer, "already done") {
		t.Errorf("%+v", sent)
	}
	// Not the object or the version planned, or no identity at all: nothing sent.
	other := widget
	other.UID = "uid-old"
	for _, tc := range []struct {
		action report.Action
		want   string
	}{
		{report.Action{Verb: report.ActionRemoveFinalizer, Object: other, Finalizer: "example.com/a", ResourceVersion: "41"}, "is another object now"},
		{report.Action{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: "example.com/a", ResourceVersion: "40"}, "changed since the step was decided (resourceVersion 41, decided on 40)"},
		{report.Action{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: "example.com/a"}, "does not name the object's uid and resourceVersion"},
	} {
		if sent, refused := s.Send(context.Background(), tc.action); sent.OK || !strings.Contains(refused, tc.want) {
			t.Errorf("%+v: %+v, refused %q", tc.action, sent, refused)
		}
	}
}

// The runner stops with success when the object is gone, goes on when the
// next planned cause is the new top, and stops on a cause it did not foresee.
func TestRunJudgesEachStepByANewDiagnosis(t *testing.T) {
	two := held("gone", "example.com/a", "example.com/b")
	plan := MakePlan(report.Report{Items: []report.Item{two}}, Limits{MaxRisk: report.RiskHigh})
	afterA := held("gone", "example.com/b")
	unforeseen := afterA
	unforeseen.Causes = []report.Cause{{Code: "AdmissionWebhookDenied", Summary: "a webhook refuses the update"}}
	for _, tc := range []struct {
		name   string
		after  []report.Report
		result string
		sent   int
	}{
		{"both removed, then gone", []report.Report{{Items: []report.Item{two}}, {Items: []report.Item{afterA}}, {}}, Gone, 2},
		{"a cause the plan did not foresee", []report.Report{{Items: []report.Item{two}}, {Items: []report.Item{unforeseen}}}, Changed, 1},
		{"gone before the first step", []report.Report{{}}, Gone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeWidgets(widgetObject("example.com/a", "example.com/b"))
			calls := 0
			r := Runner{Sender: Sender{Dynamic: dyn, Now: time.Now}, Poll: time.Millisecond, Limits: Limits{MaxRisk: report.RiskHigh},
				Diagnose: func(context.Context) (report.Report, error) {
					calls++
					return tc.after[min(calls, len(tc.after))-1], nil
				}}
			rec := r.Run(context.Background(), plan, "digest")
			if got := rec.Outcomes[0]; got.Result != tc.result || len(rec.Sent) != tc.sent {
				t.Errorf("%s (%s), %d sent", got.Result, got.Detail, len(rec.Sent))
			}
		})
	}
	// Not confirmed: nothing is sent.
	rec := Runner{Sender: Sender{Dynamic: fakeWidgets(), Now: time.Now}}.Run(context.Background(), plan, "")
	if len(rec.Sent) != 0 || rec.Outcomes[0].Result != NotApplied {
		t.Errorf("unconfirmed: %+v", rec)
	}
}

// A cause held by other objects (a CRD's instances) is answered by their
// own steps, each a request on that object; a blocker whose controller is
// alive is left to it.
func TestPlanFollowsBlockers(t *testing.T) {
	instance := func(name, controller string) report.Item {
		it := held(controller, "example.com/cleanup")
		it.Object.Name, it.Object.UID = name, "uid-"+name
		it.Causes[0].Remediation[1].Apply.Object = it.Object
		return it
	}
	crd := report.Item{Object: report.ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions.apiextensions.k8s.io", Name: "widgets.example.com", UID: "uid-crd"},
		Stuck: true, Causes: []report.Cause{{Code: "CRDInstancesRemaining", Remediation: []report.Step{{Action: "resolve the instances", RiskLevel: report.RiskNone}},
			BlockedBy: []report.Item{instance("w1", "gone"), instance("w2", "alive"), instance("w3", "down")}}}}
	p := MakePlan(report.Report{Items: []report.Item{crd}}, Limits{MaxRisk: report.RiskHigh})
	var got []string
	for _, s := range p.Targets[0].Steps {
		got = append(got, s.Cause+" "+s.Step.Apply.Object.Name)
	}
	if strings.Join(got, ",") != "CRDInstancesRemaining w1,CRDInstancesRemaining w3" || p.Targets[0].Refused != "" {
		t.Errorf("steps %v, refused %q", got, p.Targets[0].Refused)
	}
}

// A dead node is tainted out of service by one JSON patch that tests its
// uid and resourceVersion and keeps its other taints; a node already
// tainted is left as it is.
func TestSendTaintsANodeOutOfService(t *testing.T) {
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	node := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": "node-dead", "uid": "uid-node", "resourceVersion": "7"},
		"spec":     map[string]any{"taints": []any{map[string]any{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{nodes: "NodeList"})
	if _, err := dyn.Resource(nodes).Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := Sender{Dynamic: dyn, Now: time.Now}
	ref := report.ObjectRef{APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: "node-dead", UID: "uid-node"}
	sent, _ := s.Send(context.Background(), report.Action{Verb: report.ActionTaintOutOfService, Object: ref, ResourceVersion: "7"})
	if !sent.OK || !strings.Contains(sent.Request, `"path":"/metadata/resourceVersion","value":"7"`) {
		t.Fatalf("%+v", sent)
	}
	got, _ := dyn.Resource(nodes).Get(context.Background(), "node-dead", metav1.GetOptions{})
	taints, _, _ := unstructured.NestedSlice(got.Object, "spec", "taints")
	if len(taints) != 2 || taints[1].(map[string]any)["key"] != outOfService || taints[1].(map[string]any)["effect"] != "NoExecute" {
		t.Errorf("taints %v", taints)
	}
	if again, _ := s.Send(context.Background(), report.Action{Verb: report.ActionTaintOutOfService, Object: ref, ResourceVersion: "7"}); !again.OK || !strings.Contains(again.Answer, "already done") {
		t.Errorf("twice: %+v", again)
	}
}

// Where the fix stops on an object still held, the record's text says so
// and prints the object's new diagnosis.
func TestRecordShowsWhereItStopped(t *testing.T) {
	it := held("gone", "example.com/b")
	it.Causes[0].Summary = "held by example.com/b"
	rec := Record{Outcomes: []Outcome{{Object: widget, Result: Changed, Detail: "FinalizerPending: held by example.com/b", Diagnosis: &it}},
		Sent: []Sent{{Verb: report.ActionRemoveFinalizer, Object: widget, Finalizer: "example.com/a", Answer: "applied", OK: true}}}
	var b strings.Builder
	if err := WriteRecord(&b, rec, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sent: remove finalizer example.com/a from widget.example.com/w1 -n shop: applied", "widget.example.com/w1 -n shop: changed", "Where the fix stopped", "FinalizerPending"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("record lacks %q:\n%s", want, b.String())
		}
	}
}

// What a removal leaves behind is named from the object where it says it
// (the fields of its status and spec the cause quotes).
func TestLeavesBehindNamesWhatTheObjectSays(t *testing.T) {
	it := held("gone", "service.kubernetes.io/load-balancer-cleanup")
	it.Causes[0].Facts = []report.Fact{report.FieldFact("spec.type", "LoadBalancer"), report.FieldFact("status.loadBalancer.ingress", "203.0.113.7"),
		report.Noted("finalizer ...: removed by ..."), {Text: "node n1: spec.taints [x]", Field: "spec.taints", Object: &report.ObjectRef{Kind: "Node", Name: "n1"}}}
	p := MakePlan(report.Report{Items: []report.Item{it}}, Limits{MaxRisk: report.RiskHigh})
	got := p.Targets[0].Steps[0].LeavesBehind
	if !strings.Contains(got, "the object says: spec.type: LoadBalancer; status.loadBalancer.ingress: 203.0.113.7") || !strings.Contains(got, "cloud load balancer") ||
		strings.Contains(got, "taints") { // another object's field is not what this one says

		t.Errorf("leaves behind %q", got)
	}
}
