package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A paused object is left alone by its controller, its deletion included,
// whatever the operator: an annotation named paused under any prefix
// (Cluster API's, Crossplane's), unless "false", or spec.paused true. Its
// live controller is then no reason to wait: critical, unpause first.
func TestPausedObjectIsLeftAlone(t *testing.T) {
	healthy := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 1}}}
	for _, tc := range []struct {
		name    string
		mark    func(u *unstructured.Unstructured)
		field   string
		command string
	}{
		{"Cluster API's annotation, any value", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"cluster.x-k8s.io/paused": ""}) },
			"metadata.annotations[cluster.x-k8s.io/paused]", "kubectl annotate widgets.example.com w1 cluster.x-k8s.io/paused- -n shop"},
		{"Crossplane's annotation", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"crossplane.io/paused": "true"})
		},
			"metadata.annotations[crossplane.io/paused]", "kubectl annotate widgets.example.com w1 crossplane.io/paused- -n shop"},
		{"spec.paused", func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, true, "spec", "paused") },
			"spec.paused", `kubectl patch widgets.example.com w1 -n shop --type=merge -p '{"spec":{"paused":false}}'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Being deleted: why.
			u := widget(10*time.Minute, "finalizer.widget.io")
			tc.mark(u)
			s := snap(u)
			s.Controllers = healthy
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if it.Severity != report.Critical || c.Code != "FinalizerPending" ||
				c.Summary != "the controller that removes finalizer.widget.io looks healthy, but the object is paused ("+tc.field+"): a controller leaves a paused object alone, its deletion included" {
				t.Errorf("why: %s %s %q", it.Severity, c.Code, c.Summary)
			}
			if c.Remediation[0].ID != "unpause" || c.Remediation[0].Command != tc.command {
				t.Errorf("first step %+v, want %s", c.Remediation[0], tc.command)
			}
			// Not deleted yet: preflight.
			notDeleted(u)
			s = snap(u)
			s.Controllers = healthy
			fc := Preflight(s).Items[0]
			if !fc.Stuck || fc.Severity != report.Critical || !strings.Contains(fc.Causes[0].Summary, "its controller looks alive, but the object is paused ("+tc.field+")") ||
				!slices.Contains(stepIDs(fc.Causes[0]), "unpause-before") {
				t.Errorf("preflight: %s %+v", fc.Severity, fc.Causes)
			}
		})
	}
	// "false" pauses nothing.
	u := widget(10*time.Minute, "finalizer.widget.io")
	u.SetAnnotations(map[string]string{"crossplane.io/paused": "false"})
	s := snap(u)
	s.Controllers = healthy
	if c := Diagnose(s).Items[0].Causes[0]; strings.Contains(c.Summary, "paused") || c.Severity == report.Critical {
		t.Errorf("paused=false: %s %q", c.Severity, c.Summary)
	}
	// No workload found by the finalizer's words (often a controller named
	// unlike it: the acceptance run's capa-controller-manager): the pause is
	// certain, the absence a guess; the pause first, then finding the owner.
	u.SetAnnotations(map[string]string{"crossplane.io/paused": "true"})
	s = snap(u)
	s.Controllers = &observed.Controllers{}
	if c := Diagnose(s).Items[0].Causes[0]; c.Severity != report.Critical || c.Summary != "the object is paused (metadata.annotations[crossplane.io/paused]): a controller leaves a paused object alone, its deletion included" ||
		!slices.Equal(stepIDs(c)[:2], []string{"unpause", "find-owner"}) {
		t.Errorf("no controller found: %s %q %v", c.Severity, c.Summary, stepIDs(c))
	}
	// Its controller down (no ready replica): that comes first, paused or not.
	s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 0}}}
	if c := Diagnose(s).Items[0].Causes[0]; !strings.Contains(c.Summary, "has no ready replica") {
		t.Errorf("controller down: %q", c.Summary)
	}
}

// Before a deletion, a live controller that reports a failure about the
// object now would meet it again in the cleanup: the deletion may stick
// (warning, exit 2), the controller's words quoted; with nothing said, it
// would remove its finalizer.
func TestPreflightTheControllerSaysWhy(t *testing.T) {
	healthy := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 1}}}
	build := func(events []corev1.Event, conditions ...map[string]any) report.Item {
		u := notDeleted(heldWith("finalizer.widget.io", conditions...))
		s := snap(u)
		s.Controllers = healthy
		s.Events = map[types.UID][]corev1.Event{"uid-w1": events}
		return Preflight(s).Items[0]
	}
	if it := build(nil); it.Stuck || it.Severity != report.Info {
		t.Errorf("nothing said: %s %v", it.Severity, codes(it))
	}
	for _, it := range []report.Item{
		build([]corev1.Event{warning("FailedBuildModel", "Failed build model due to NoCredentialProviders: no valid providers in chain", 3*time.Minute)}),
		build(nil, cond("Synced", "False", "ReconcileError", "Failed build model due to NoCredentialProviders: no valid providers in chain")),
	} {
		c := it.Causes[0]
		if !it.Stuck || it.Severity != report.Warning || c.Code != "FinalizerPending" ||
			!strings.Contains(c.Summary, "its controller looks alive but reports a failure about the object now, ") ||
			!strings.Contains(c.Summary, ": Failed build model due to NoCredentialProviders") ||
			!slices.Equal(stepIDs(c), []string{"describe-object", "fix-what-it-reports-before"}) {
			t.Errorf("%s %q %v", it.Severity, c.Summary, stepIDs(c))
		}
	}
}

// pausedBy reads the annotations in place: it finds what it found through
// GetAnnotations, a null value read as "" as GetAnnotations has it.
func TestPausedByReadsAnnotationsAsGetAnnotations(t *testing.T) {
	for _, c := range []struct {
		annotations any
		want        pause
		paused      bool
	}{
		{nil, pause{}, false},
		{map[string]any{}, pause{}, false},
		{map[string]any{"a": "b", "cluster.x-k8s.io/paused": ""}, pause{field: "metadata.annotations[cluster.x-k8s.io/paused]", annotation: "cluster.x-k8s.io/paused"}, true},
		{map[string]any{"crossplane.io/paused": "False"}, pause{}, false},
		{map[string]any{"z/paused": "true", "a/paused": "yes"}, pause{field: "metadata.annotations[a/paused]", value: "yes", annotation: "a/paused"}, true},
		{map[string]any{"x/paused": nil}, pause{field: "metadata.annotations[x/paused]", annotation: "x/paused"}, true},
	} {
		md := map[string]any{"name": "o"}
		if c.annotations != nil {
			md["annotations"] = c.annotations
		}
		got, paused := pausedBy(&unstructured.Unstructured{Object: map[string]any{"metadata": md}})
		if got != c.want || paused != c.paused {
			t.Errorf("%v: got %+v %v, want %+v %v", c.annotations, got, paused, c.want, c.paused)
		}
	}
}
