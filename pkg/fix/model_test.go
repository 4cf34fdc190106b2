package fix

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// modelRuns is how many random interleavings TestWritePathModel tries:
// make test runs the default with a fixed seed, make fuzz many more.
var (
	modelRuns = flag.Int("model-runs", 400, "random interleavings TestWritePathModel tries")
	modelSeed = flag.Uint64("model-seed", 35, "the seed of TestWritePathModel")
)

// The model's three writes, one of each verb, each with what justifies it:
// a widget's finalizer (its controller gone), a dead node's out-of-service
// taint (the node not Ready), an orphaned webhook configuration (its
// backend without endpoints).
var (
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	nodes   = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	hooks   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

type modelObject struct {
	gvr       schema.GroupVersionResource
	ref       report.ObjectRef
	justified func(*world) bool
}

var modelObjects = []modelObject{
	{widgets, report.ObjectRef{APIVersion: "example.com/v1", Kind: "Widget", Resource: "widgets.example.com", Namespace: "shop", Name: "w1"}, func(w *world) bool { return !w.controllerAlive }},
	{nodes, report.ObjectRef{APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: "node-1"}, func(w *world) bool { return !w.nodeReady }},
	{hooks, report.ObjectRef{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Resource: "validatingwebhookconfigurations", Name: "hook"}, func(w *world) bool { return !w.backendUp }},
}

// world is the model's cluster: the fake's objects, what justifies each
// write, and the log the invariant is checked against.
type world struct {
	dyn                                   *dynamicfake.FakeDynamicClient
	rng                                   *rand.Rand
	version, uids                         int
	controllerAlive, nodeReady, backendUp bool
	// planned is the identity each object had when the plan was made, or
	// that fix's own write left; moved when fix writes it.
	planned map[string]string // name -> uid/resourceVersion
	// schedule maps a point of the run ("diagnose 2", "get 1", "write 1")
	// to the mutation made there; log lists what happened, for a failure.
	schedule   map[string]string
	counts     map[string]int
	log        []string
	violations []string
	applied    int
}

func newWorld(t *testing.T, rng *rand.Rand) *world {
	w := &world{rng: rng, planned: map[string]string{}, schedule: map[string]string{}, counts: map[string]int{}}
	w.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgets: "WidgetList", nodes: "NodeList", hooks: "ValidatingWebhookConfigurationList"})
	for _, o := range modelObjects {
		if err := w.create(o); err != nil {
			t.Fatal(err)
		}
	}
	w.dyn.PrependReactor("*", "*", w.serve)
	return w
}

func (w *world) create(o modelObject) error {
	w.uids++
	w.version++
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(o.ref.APIVersion)
	u.SetKind(o.ref.Kind)
	u.SetNamespace(o.ref.Namespace)
	u.SetName(o.ref.Name)
	u.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", o.ref.Name, w.uids)))
	u.SetResourceVersion(fmt.Sprint(w.version))
	if o.gvr == widgets {
		u.SetFinalizers([]string{"gone.example.com/cleanup"})
	}
	if o.gvr == nodes {
		u.Object["spec"] = map[string]any{} // as the apiserver serves every Node
	}
	return w.dyn.Tracker().Create(o.gvr, u, o.ref.Namespace)
}

func (w *world) get(o modelObject) *unstructured.Unstructured {
	obj, err := w.dyn.Tracker().Get(o.gvr, o.ref.Namespace, o.ref.Name)
	if err != nil {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

func identity(u *unstructured.Unstructured) string {
	if u == nil {
		return "gone"
	}
	return string(u.GetUID()) + "/" + u.GetResourceVersion()
}

// at makes the mutation scheduled at a point of the run, if any.
func (w *world) at(kind string) {
	w.counts[kind]++
	point := fmt.Sprintf("%s %d", kind, w.counts[kind])
	if m, ok := w.schedule[point]; ok {
		w.mutate(point, m)
	}
}

// mutate changes the world as another client would.
func (w *world) mutate(point, m string) {
	w.log = append(w.log, point+": "+m)
	switch m {
	case "controller appears":
		w.controllerAlive = true
	case "node revives": // its kubelet writes the Node's status again
		w.nodeReady = true
		w.mutate(point, "touch node-1")
	case "backend up":
		w.backendUp = true
	default: // "recreate NAME", "touch NAME"
		for _, o := range modelObjects {
			u := w.get(o)
			if u == nil || (m != "recreate "+o.ref.Name && m != "touch "+o.ref.Name) {
				continue
			}
			if m == "touch "+o.ref.Name { // a new finalizer, a new webhook, a label: a new version
				w.version++
				u.SetResourceVersion(fmt.Sprint(w.version))
				u.SetLabels(map[string]string{"touched": fmt.Sprint(w.version)})
				_ = w.dyn.Tracker().Update(o.gvr, u, o.ref.Namespace)
				continue
			}
			_ = w.dyn.Tracker().Delete(o.gvr, o.ref.Namespace, o.ref.Name)
			_ = w.create(o)
		}
	}
}

// serve is the model's apiserver: reads as the fake's tracker answers
// them; writes applied only if their conditions hold (a JSON patch's tests,
// a delete's preconditions), each leaving a new resourceVersion. Before a
// write is applied, the invariant: the object is the one planned, at the
// version planned (or left by fix's own write), and what justified the
// write still holds.
func (w *world) serve(a k8stesting.Action) (bool, runtime.Object, error) {
	switch a.GetVerb() {
	case "get":
		w.at("get")
		return false, nil, nil
	case "patch", "delete":
	default:
		return false, nil, nil
	}
	w.at("write")
	var o modelObject
	for _, m := range modelObjects {
		if m.gvr == a.GetResource() {
			o = m
		}
	}
	before := w.get(o)
	if d, ok := a.(k8stesting.DeleteActionImpl); ok && before != nil {
		p := d.GetDeleteOptions().Preconditions
		if p == nil || p.UID == nil || p.ResourceVersion == nil {
			w.violations = append(w.violations, "a delete without uid and resourceVersion preconditions")
		} else if string(before.GetUID()) != string(*p.UID) || before.GetResourceVersion() != *p.ResourceVersion {
			return true, nil, fmt.Errorf("precondition failed")
		}
	}
	handled, ret, err := k8stesting.ObjectReaction(w.dyn.Tracker())(a)
	if err != nil || !handled {
		return handled, ret, err
	}
	// Applied: was it allowed?
	if got, want := identity(before), w.planned[o.ref.Name]; got != want {
		w.violations = append(w.violations, fmt.Sprintf("%s %s written at %s, planned on %s", a.GetVerb(), o.ref.Name, got, want))
	}
	if !o.justified(w) {
		w.violations = append(w.violations, fmt.Sprintf("%s %s written though what justified it changed", a.GetVerb(), o.ref.Name))
	}
	w.applied++
	if after := w.get(o); after != nil {
		w.version++
		after.SetResourceVersion(fmt.Sprint(w.version))
		_ = w.dyn.Tracker().Update(o.gvr, after, o.ref.Namespace)
		w.planned[o.ref.Name] = identity(after)
		return true, after, nil
	}
	return true, ret, nil
}

// diagnose is the model's rules: each object stuck while what justifies
// its write holds, with the step the real rules give it, for the object
// as it is now.
func (w *world) diagnose(context.Context) (report.Report, error) {
	w.at("diagnose")
	var r report.Report
	for _, o := range modelObjects {
		u := w.get(o)
		if u == nil || (o.gvr == widgets && len(u.GetFinalizers()) == 0) {
			continue // gone
		}
		ref := o.ref
		ref.UID = string(u.GetUID())
		action := &report.Action{Object: ref, ResourceVersion: u.GetResourceVersion()}
		it := report.Item{Object: ref, ResourceVersion: u.GetResourceVersion(), Stuck: true, Severity: report.Critical}
		c := report.Cause{Code: "FinalizerPending", Severity: report.Critical}
		switch o.gvr {
		case widgets:
			action.Verb, action.Finalizer = report.ActionRemoveFinalizer, "gone.example.com/cleanup"
			c.About.Controller = map[bool]string{true: "alive", false: "gone"}[w.controllerAlive]
		case nodes:
			action.Verb, c.Code = report.ActionTaintOutOfService, "NodeUnreachable"
			it.Stuck = !w.nodeReady
		case hooks:
			action.Verb, c.Code = report.ActionDelete, "AdmissionWebhookDenied"
			it.Stuck = !w.backendUp
		}
		c.Remediation = []report.Step{{Action: "the step", RiskLevel: report.RiskHigh, Apply: action}}
		it.Causes = []report.Cause{c}
		r.Items = append(r.Items, it)
	}
	return r, nil
}

// mutations are what other clients do meanwhile. "controller appears" and
// "backend up" change other objects than the one written (a Deployment, an
// EndpointSlice); "node revives" writes the Node's status too.
var mutations = []string{"recreate w1", "touch w1", "recreate node-1", "touch node-1", "recreate hook", "touch hook",
	"controller appears", "node revives", "backend up"}

// Issue 35: random interleavings of a plan, mutations of any object it
// writes (deleted and recreated, changed, its justification gone: the
// controller back, the node Ready, the backend up) at any point of the run
// (before it: the prompt or the time to --confirm; at each diagnosis, each
// read, each write), and the run. The invariant: no write reaches an object
// whose identity or justifying state changed since the plan; and with no
// mutation, every planned step is applied.
func TestWritePathModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(*modelSeed, 0))
	for run := range *modelRuns {
		w := newWorld(t, rng)
		plan := MakePlan(mustDiagnose(w), Limits{MaxRisk: report.RiskDestructive})
		for _, o := range modelObjects {
			w.planned[o.ref.Name] = identity(w.get(o))
		}
		if plan.Steps() != 3 {
			t.Fatalf("the model's plan sends %d requests, want 3: %+v", plan.Steps(), plan)
		}
		for range rng.IntN(3) {
			point := []string{"before", "diagnose", "get", "write"}[rng.IntN(4)]
			m := mutations[rng.IntN(len(mutations))]
			if (m == "controller appears" || m == "backend up") && (point == "get" || point == "write") {
				// Neither changes the object written: between the last
				// diagnosis and the write no request can see them (the
				// records' note on the write path says so).
				point = "diagnose"
			}
			if point == "before" {
				w.mutate(point, m)
				continue
			}
			w.schedule[fmt.Sprintf("%s %d", point, 1+rng.IntN(4))] = m
		}
		runner := Runner{Sender: Sender{Dynamic: w.dyn, Now: time.Now}, Limits: Limits{MaxRisk: report.RiskDestructive},
			Diagnose: w.diagnose, Poll: time.Nanosecond}
		rec := runner.Run(context.Background(), plan, "digest")
		if len(w.violations) > 0 {
			t.Fatalf("run %d (seed %d): %v\nmutations: %v\nrecord: %+v", run, *modelSeed, w.violations, w.log, rec.Outcomes)
		}
		if len(w.log) == 0 && w.applied != 3 {
			t.Fatalf("run %d: no mutation, %d of 3 steps applied: %+v", run, w.applied, rec.Outcomes)
		}
		for _, out := range rec.Outcomes {
			if !slices.Contains([]string{Gone, Progressing, Refused, StillStuck, Changed, Failed}, out.Result) {
				t.Errorf("run %d: outcome %q", run, out.Result)
			}
		}
	}
}

func mustDiagnose(w *world) report.Report {
	r, _ := w.diagnose(context.Background())
	w.counts["diagnose"] = 0 // the plan's own diagnosis is not a point of the run
	return r
}
