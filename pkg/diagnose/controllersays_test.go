package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// heldWith is a custom resource held 10 minutes by a finalizer, with status conditions.
func heldWith(finalizer string, conditions ...map[string]any) *unstructured.Unstructured {
	u := widget(10*time.Minute, finalizer)
	u.SetUID("uid-w1")
	var cs []any
	for _, c := range conditions {
		cs = append(cs, c)
	}
	if cs != nil {
		_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
	}
	return u
}

func cond(typ, status, reason, message string) map[string]any {
	c := map[string]any{"type": typ, "reason": reason, "message": message, "lastTransitionTime": now.Add(-5 * time.Minute).Format(time.RFC3339)}
	if status != "" {
		c["status"] = status
	}
	return c
}

func warning(reason, message string, age time.Duration) corev1.Event {
	e := event(reason, message, age)
	e.InvolvedObject.UID = "uid-w1"
	e.Source.Component = "some-controller"
	return e
}

// A live controller that cannot finish says why in the object: its failure
// conditions (whatever the operator's shape) and its Warning events are
// quoted, and make the finalizer's cause critical with what they say.
func TestTheControllerSaysWhy(t *testing.T) {
	healthy := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 1}}}
	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		events []corev1.Event
		want   string // in the summary; "" when nothing is said
	}{
		{"synced false with a reconcile error (Crossplane's shape)",
			heldWith("finalizer.widget.io", cond("Ready", "False", "Deleting", ""), cond("Synced", "False", "ReconcileError", "cannot delete bucket: AccessDenied")),
			nil, "Synced=False (ReconcileError): cannot delete bucket: AccessDenied"},
		{"a status-less DeletionError (Argo CD's shape)",
			heldWith("resources-finalizer.widget.io", cond("DeletionError", "", "", "failed to delete resources: the server has asked for the client to provide credentials")),
			nil, "DeletionError: failed to delete resources"},
		{"ready false with a failed reason (Flux's shape)",
			heldWith("finalizers.widget.io", cond("Ready", "False", "HealthCheckFailed", "timeout waiting for: [Deployment/apps/web status: 'InProgress']")),
			nil, "Ready=False (HealthCheckFailed): timeout waiting for"},
		{"a draining failure (Cluster API's shape)",
			heldWith("machine.widget.io", cond("DrainingSucceeded", "False", "DrainingFailed", "Cannot evict pod as it would violate the pod's disruption budget.")),
			nil, "DrainingSucceeded=False (DrainingFailed): Cannot evict pod"},
		{"a Warning event about the object",
			heldWith("finalizer.widget.io"),
			[]corev1.Event{warning("CannotDeleteExternalResource", "InvalidClientTokenId: the security token is invalid", 2*time.Minute)},
			"CannotDeleteExternalResource: InvalidClientTokenId"},
		{"the most recent of two Warning events",
			heldWith("finalizer.widget.io"),
			[]corev1.Event{warning("SyncFailed", "old failure", 30*time.Minute), warning("DeleteFailed", "quota exceeded", time.Minute)},
			"DeleteFailed: quota exceeded"},
		{"conditions in progress are not failures",
			heldWith("finalizer.widget.io", cond("Ready", "False", "Deleting", "deleting external resources"), cond("Synced", "True", "ReconcileSuccess", "")),
			nil, ""},
		{"a Normal event and a Warning older than an hour say nothing",
			heldWith("finalizer.widget.io"),
			[]corev1.Event{func() corev1.Event {
				e := warning("Deleting", "deleting", time.Minute)
				e.Type = corev1.EventTypeNormal
				return e
			}(), warning("DeleteFailed", "long ago", 2*time.Hour)},
			""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(tc.obj)
			s.Controllers = healthy
			s.Events = map[types.UID][]corev1.Event{"uid-w1": tc.events}
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if tc.want == "" {
				if strings.Contains(c.Summary, "cannot finish") || it.Severity == report.Critical {
					t.Errorf("nothing said, yet: %s %s", it.Severity, c.Summary)
				}
				return
			}
			if c.Code != "FinalizerPending" || it.Severity != report.Critical || !strings.Contains(c.Summary, "cannot finish the deletion: it reports "+tc.want) {
				t.Errorf("%s %s (%.2f): %s", c.Code, it.Severity, c.Confidence, c.Summary)
			}
			if c.Confidence >= 0.85 {
				t.Errorf("confidence %.2f for words no catalogue row vouches for", c.Confidence)
			}
			if !strings.Contains(c.Remediation[0].Command, "kubectl describe widgets.example.com w1 -n shop") {
				t.Errorf("first step %+v", c.Remediation[0])
			}
			expectGradedSteps(t, it)
		})
	}
}

// A controller with no ready replica is the root cause before what it said
// when it last ran.
func TestADownControllerComesBeforeItsOldWords(t *testing.T) {
	s := snap(heldWith("finalizer.widget.io", cond("Synced", "False", "ReconcileError", "cannot delete")))
	s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 0}}}
	c := Diagnose(s).Items[0].Causes[0]
	if !strings.Contains(c.Summary, "has no ready replica") {
		t.Errorf("summary %q", c.Summary)
	}
	if !strings.Contains(strings.Join(c.Evidence, "\n"), "status.conditions[type=Synced]: False, reason ReconcileError") {
		t.Errorf("the condition is still quoted: %q", c.Evidence)
	}
}
