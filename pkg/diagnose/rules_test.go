package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Every catalogue row's code picks a finalizer rule; only FinalizerPending
// rows may have no specific one (the generic FinalizerPending speaks).
func TestFinalizerRulesFollowTheCatalogue(t *testing.T) {
	for _, row := range catalog.Finalizers() {
		if _, ok := catalog.Lookup(row.Code); !ok {
			t.Errorf("row %s: code %s is not catalogued", row.Name, row.Code)
		}
		if _, ok := finalizerRules[row.Code]; !ok {
			t.Errorf("row %s: no rule for code %s", row.Name, row.Code)
		}
	}
	// A third-party finalizer needs its owner's liveness, foregroundDeletion its dependents.
	third := heldObject("ConfigMap", "configmaps", "x", time.Minute, "acme.io/keep")
	if !Needs(third).Has(OwnerEvidence | AdmissionEvidence) {
		t.Errorf("third-party finalizer: needs %b", Needs(third))
	}
	fg := heldObject("ConfigMap", "configmaps", "y", time.Minute, "foregroundDeletion")
	if e := Needs(fg); !e.Has(DependentEvidence) || e.Has(OwnerEvidence) {
		t.Errorf("foregroundDeletion: needs %b", e)
	}
	if e := Needs(heldObject("ConfigMap", "configmaps", "z", time.Minute)); e != 0 {
		t.Errorf("no finalizer: needs %b", e)
	}
}

// Class a: an object held only by its own metadata.finalizers is
// FinalizerPending whatever its kind — a Namespace whose spec.finalizers the
// namespace controller has already emptied included.
func TestOwnFinalizersHoldEveryKind(t *testing.T) {
	finished := func(ns *corev1.Namespace) *corev1.Namespace {
		ns.Spec.Finalizers = nil // the namespace controller is done: content gone
		ns.Finalizers = []string{"platform.acme.io/cleanup"}
		return ns
	}
	pod := stopped(terminatingPod(10*time.Minute, 0), corev1.PodSucceeded)
	pod.Finalizers = []string{"acme.io/drain"}
	cases := []struct {
		name   string
		target *observed.Target
		code   string
		text   string
	}{
		{"namespace, content gone, conditions False", namespaceTarget(finished(terminatingNamespace(10*time.Minute, allConditions()...))),
			"FinalizerPending", "platform.acme.io/cleanup"},
		{"pod after the kubelet's final delete", target(pod, "pods", func(t *observed.Target) { t.Pod = pod }), "FinalizerPending", "acme.io/drain"},
		{"custom resource", heldObject("Widget", "widgets.example.com", "w", 10*time.Minute, "acme.io/keep"), "FinalizerPending", "acme.io/keep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snapOf(tc.target)
			s.Nodes["node-1"], s.Leases["node-1"] = node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second)
			it := Diagnose(s).Items[0]
			top := it.Causes[0]
			if top.Code != tc.code || top.Severity != report.Critical || !strings.Contains(top.Summary, tc.text) || !it.Stuck {
				t.Fatalf("top = %s %s %q stuck %t; want %s critical naming %s", top.Code, top.Severity, top.Summary, it.Stuck, tc.code, tc.text)
			}
			if !strings.Contains(top.Remediation[len(top.Remediation)-1].Command, `"op":"test"`) {
				t.Errorf("the removal must test the one finalizer first: %q", top.Remediation[len(top.Remediation)-1].Command)
			}
		})
	}
}

// A namespace's own spec.finalizers entry other than the namespace
// controller's is removed through the finalize subresource.
func TestNamespaceSpecFinalizerOfAnotherController(t *testing.T) {
	ns := terminatingNamespace(10*time.Minute, allConditions()...)
	ns.Spec.Finalizers = []corev1.FinalizerName{"openshift.io/origin"}
	s := snap(ns)
	s.Controllers = &observed.Controllers{}
	it := Diagnose(s).Items[0]
	top := it.Causes[0]
	if top.Code != "FinalizerPending" || !strings.Contains(top.Summary, "openshift.io/origin") {
		t.Fatalf("top = %s %q", top.Code, top.Summary)
	}
	if cmd := top.Remediation[len(top.Remediation)-1].Command; !strings.Contains(cmd, "/finalize") || !strings.Contains(cmd, `-= ["openshift.io/origin"]`) {
		t.Errorf("command: %q", cmd)
	}
}

func namespaceTarget(ns *corev1.Namespace) *observed.Target {
	return target(ns, "namespaces", func(t *observed.Target) { t.Namespace = ns })
}

func TestCausesRankSeverityThenRootThenConfidence(t *testing.T) {
	c := func(code catalog.Code, sev report.Severity, conf float64) report.Cause {
		return report.Cause{Code: string(code), Severity: sev, Confidence: conf}
	}
	cases := []struct {
		name        string
		first, then report.Cause
	}{
		{"severity first", c(catalog.GracePeriodOverrun, report.Critical, 0.1), c(catalog.NodeUnreachable, report.Warning, 1)},
		{"root before symptom", c(catalog.NodeUnreachable, report.Warning, 0.1), c(catalog.ContainersStillRunning, report.Warning, 1)},
		{"then confidence", c(catalog.FinalizerPending, report.Warning, 0.9), c(catalog.FinalizerPending, report.Warning, 0.5)},
	}
	for _, tc := range cases {
		if !causeLess(tc.first, tc.then) || causeLess(tc.then, tc.first) {
			t.Errorf("%s: %s should rank before %s", tc.name, tc.first.Code, tc.then.Code)
		}
	}
}

// listedFinalizers reads metadata.finalizers as GetFinalizers does, on
// objects a hostile cluster or snapshot may hold.
func TestListedFinalizersAsGetFinalizers(t *testing.T) {
	for _, obj := range []map[string]any{
		{},
		{"metadata": "not a map"},
		{"metadata": map[string]any{}},
		{"metadata": map[string]any{"finalizers": "a.io/x"}},
		{"metadata": map[string]any{"finalizers": []any{}}},
		{"metadata": map[string]any{"finalizers": []any{"a.io/x", "b.io/y"}}},
		{"metadata": map[string]any{"finalizers": []any{"a.io/x", 7}}},
		{"metadata": map[string]any{"finalizers": []any{nil}}},
	} {
		u := &unstructured.Unstructured{Object: obj}
		var got []string
		for _, f := range listedFinalizers(u) {
			got = append(got, f.(string))
		}
		if want := u.GetFinalizers(); !slices.Equal(got, want) {
			t.Errorf("%v: %q, GetFinalizers %q", obj, got, want)
		}
	}
}
