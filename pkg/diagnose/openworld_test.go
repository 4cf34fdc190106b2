package diagnose

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// An operator the catalogue has never seen: no workload is named like its
// finalizer, so the liveness judgement finds none.
const unknownFinalizer = "finalizers.rds.services.k8s.aws/DBInstance"

// condAt is a condition that last changed d ago.
func condAt(typ, status, reason, message string, d time.Duration) map[string]any {
	c := cond(typ, status, reason, message)
	c["lastTransitionTime"] = now.Add(-d).Format(time.RFC3339)
	return c
}

// wroteBy records a field manager's write d ago in the object's managedFields.
func wroteBy(u *unstructured.Unstructured, manager, subresource string, d time.Duration, fieldsV1 string) {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		APIVersion: "example.com/v1", Time: ago(d), FieldsType: "FieldsV1"}
	if fieldsV1 != "" {
		e.FieldsV1 = metav1.NewFieldsV1(fieldsV1)
	}
	u.SetManagedFields(append(u.GetManagedFields(), e))
}

func withStatus(u *unstructured.Unstructured, fields map[string]any) *unstructured.Unstructured {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	for k, v := range fields {
		status[k] = v
	}
	_ = unstructured.SetNestedMap(u.Object, status, "status")
	return u
}

// The controller's words in any shape: a condition read with its polarity
// (True is trouble for Terminal, Stalled, Degraded; False is for Ready when
// its reason or message says so), or a status field that carries an error.
// Said after the deletion began, they are about the deletion: critical, the
// controller's message as the summary, before "no controller found".
func TestTheControllerSaysWhyInAnyShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // in the summary; "" when nothing is said
	}{
		{"ACK's Terminal condition", heldWith(unknownFinalizer, condAt("ACK.Terminal", "True", "", "api error InvalidParameterCombination: Cannot delete protected DB Instance, please disable deletion protection and try again", 2*time.Minute)),
			"it reports ACK.Terminal=True: api error InvalidParameterCombination: Cannot delete protected DB Instance"},
		{"kstatus' Stalled", heldWith(unknownFinalizer, condAt("Stalled", "True", "DeleteBlocked", "dependent volumes remain", time.Minute)),
			"it reports Stalled=True (DeleteBlocked): dependent volumes remain"},
		{"Degraded with a prefix", heldWith(unknownFinalizer, condAt("example.com/Degraded", "True", "Teardown", "bucket not empty", time.Minute)),
			"it reports example.com/Degraded=True (Teardown): bucket not empty"},
		{"Ready=False whose message says it cannot", heldWith(unknownFinalizer, condAt("Ready", "False", "Deleting", "unable to delete instance: still attached to vpc-1", time.Minute)),
			"it reports Ready=False (Deleting): unable to delete instance"},
		{"status.failureReason", withStatus(heldWith(unknownFinalizer), map[string]any{"failureReason": "DeleteError", "failureMessage": "instance i-1 not found in region"}),
			"it reports status.failureMessage: instance i-1 not found in region"},
		{"status.error.message", withStatus(heldWith(unknownFinalizer), map[string]any{"error": map[string]any{"message": "credentials expired", "time": "x"}}),
			"it reports status.error.message: credentials expired"},
		{"status.validationErrors", withStatus(heldWith(unknownFinalizer), map[string]any{"validationErrors": []any{"backup storage location default is unavailable"}}),
			"it reports status.validationErrors[0]: backup storage location default is unavailable"},
		{"status.phase and message", withStatus(heldWith(unknownFinalizer), map[string]any{"phase": "Unavailable", "message": "rpc error: code = Unknown desc = NoCredentialProviders"}),
			"it reports status.message: rpc error"},
		{"Ready=False while deleting is a controller at work", heldWith(unknownFinalizer, condAt("Ready", "False", "Deleting", "deleting external resources", time.Minute)), ""},
		{"Terminal=False is no trouble", heldWith(unknownFinalizer, condAt("ACK.Terminal", "False", "", "", time.Minute)), ""},
		{"a phase at work and a plain message", withStatus(heldWith(unknownFinalizer), map[string]any{"phase": "Deleting", "message": "waiting for 2 volumes", "failureDomain": "zone-a"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.obj.GetManagedFields() == nil { // the status written after the deletion began
				wroteBy(tc.obj, "controller", "status", 3*time.Minute, "")
			}
			s := snap(tc.obj)
			s.Controllers = &observed.Controllers{}
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if tc.want == "" {
				if strings.Contains(c.Summary, "cannot finish") || !strings.Contains(c.Summary, "no controller") {
					t.Errorf("nothing said, yet: %s %s", it.Severity, c.Summary)
				}
				return
			}
			if c.Code != "FinalizerPending" || it.Severity != report.Critical || !strings.Contains(c.Summary, "cannot finish the deletion: "+tc.want) {
				t.Errorf("%s %s (%.2f): %s", c.Code, it.Severity, c.Confidence, c.Summary)
			}
			if c.Confidence != 0.8 {
				t.Errorf("confidence %.2f; want 0.8 for words said since the deletion began", c.Confidence)
			}
			expectGradedSteps(t, it)
		})
	}
}

// Words from before the deletion are about something else: they are quoted,
// but the missing controller stays the top cause.
func TestOldWordsDoNotOutrankAMissingController(t *testing.T) {
	u := heldWith(unknownFinalizer, condAt("ACK.Terminal", "True", "", "quota exceeded", time.Hour))
	s := snap(u)
	s.Controllers = &observed.Controllers{}
	c := Diagnose(s).Items[0].Causes[0]
	if !strings.Contains(c.Summary, "no controller that could remove") || !hasLine(c.Evidence, "status.conditions[type=ACK.Terminal]: True") {
		t.Errorf("%s; evidence %q", c.Summary, c.Evidence)
	}
}

// Who wrote and when: a controller that wrote after the deletion began and
// within the settle time is at work (progressing, exit 0); one silent since
// the deletion began is said to be; the manager that added the finalizer is named.
func TestWhoWroteAndWhen(t *testing.T) {
	addedBy := `{"f:metadata":{"f:finalizers":{".":{},"v:\"` + unknownFinalizer + `\"":{}}}}`
	healthy := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "ack-system", Name: "ack-rds-controller", Desired: 1, Ready: 1}}}
	t.Run("a controller writing progress is at work", func(t *testing.T) {
		u := heldWith(unknownFinalizer)
		wroteBy(u, "controller", "", time.Hour, addedBy)
		wroteBy(u, "velero-server", "status", 5*time.Second, "")
		wroteBy(u, "kubectl-edit", "", 2*time.Second, "") // a person's write says nothing of the controller
		s := snap(u)
		s.Controllers = &observed.Controllers{}
		it := Diagnose(s).Items[0]
		c := it.Causes[0]
		if it.Stuck || it.Severity != report.Info || !strings.HasPrefix(c.Summary, "progressing: field manager velero-server wrote its status 5s ago") {
			t.Errorf("stuck %t, %s: %s", it.Stuck, it.Severity, c.Summary)
		}
		if !hasLine(c.Evidence, "managedFields: finalizer "+unknownFinalizer+" was added by field manager controller (Update)") ||
			!hasLine(c.Evidence, "managedFields: velero-server last wrote its status 5s ago") || hasLine(c.Evidence, "kubectl-edit") {
			t.Errorf("evidence %q", c.Evidence)
		}
		if !strings.Contains(c.Remediation[0].Command, "kubectl terminating wait") {
			t.Errorf("first step %+v", c.Remediation[0])
		}
		// The verdict holds while the write is recent: list -w diagnoses
		// again when it lapses (the write plus the settle time), before the
		// deadline's own thresholds.
		if at := NextVerdictTime(it, now); !at.Equal(now.Add(-5*time.Second + settleTime)) {
			t.Errorf("next verdict time %s, want %s", at, now.Add(-5*time.Second+settleTime))
		}
		s.Now = now.Add(26 * time.Second) // the write 31 s old: not at work any more
		if later := Diagnose(s).Items[0]; !later.Stuck || later.Causes[0].Until != (time.Time{}) {
			t.Errorf("31 s after its write: stuck %t, %s, until %s", later.Stuck, later.Causes[0].Summary, later.Causes[0].Until)
		}
	})
	t.Run("its words of failure still win", func(t *testing.T) {
		u := heldWith(unknownFinalizer, condAt("ACK.Terminal", "True", "", "cannot delete", 5*time.Second))
		wroteBy(u, "controller", "status", 5*time.Second, "")
		s := snap(u)
		s.Controllers = &observed.Controllers{}
		if it := Diagnose(s).Items[0]; !it.Stuck || it.Severity != report.Critical {
			t.Errorf("stuck %t, %s: %s", it.Stuck, it.Severity, it.Causes[0].Summary)
		}
	})
	t.Run("a write before the deletion is no progress", func(t *testing.T) {
		u := heldWith(unknownFinalizer)
		wroteBy(u, "controller", "status", 20*time.Minute, addedBy)
		s := snap(u)
		s.Controllers = healthy
		it := Diagnose(s).Items[0]
		c := it.Causes[0]
		want := "looks healthy but has not removed it, nor written to the object since its deletion began 10m ago (its last write: controller, 20m ago)"
		if !it.Stuck || !strings.Contains(c.Summary, want) {
			t.Errorf("stuck %t: %s; want %q", it.Stuck, c.Summary, want)
		}
	})
	t.Run("a write after the deletion, long ago, is no progress either", func(t *testing.T) {
		u := heldWith(unknownFinalizer)
		wroteBy(u, "controller", "status", 5*time.Minute, "")
		s := snap(u)
		s.Controllers = healthy
		it := Diagnose(s).Items[0]
		if c := it.Causes[0]; !it.Stuck || strings.Contains(c.Summary, "nor written") || !strings.Contains(c.Summary, "looks healthy") {
			t.Errorf("stuck %t: %s", it.Stuck, c.Summary)
		}
	})
}

func TestPolarityOf(t *testing.T) {
	for typ, want := range map[string]Polarity{
		"Ready": TrueIsHealthy, "ACK.ResourceSynced": TrueIsHealthy, "Available": TrueIsHealthy,
		"ACK.Terminal": TrueIsTrouble, "Stalled": TrueIsTrouble, "NotReady": TrueIsTrouble, "Unavailable": TrueIsTrouble,
		"example.com/Degraded": TrueIsTrouble, "DeletionError": TrueIsTrouble, "ReconcileFailed": TrueIsTrouble,
		"Deleting": PolarityUnknown, "Paused": PolarityUnknown, "Reconciling": PolarityUnknown,
	} {
		if got := polarityOf(typ); got != want {
			t.Errorf("polarityOf(%q) = %d, want %d", typ, got, want)
		}
	}
}

func hasLine(lines []string, fragment string) bool {
	for _, l := range lines {
		if strings.Contains(l, fragment) {
			return true
		}
	}
	return false
}

// Kubernetes' own components write objects as part of their own work (the
// namespace controller's conditions): that is no third-party controller at
// work on its finalizer.
func TestKubernetesWritesAreNotTheControllersProgress(t *testing.T) {
	u := heldWith(unknownFinalizer)
	wroteBy(u, "kube-controller-manager", "status", 5*time.Second, "")
	s := snap(u)
	s.Controllers = &observed.Controllers{}
	it := Diagnose(s).Items[0]
	if c := it.Causes[0]; !it.Stuck || strings.HasPrefix(c.Summary, "progressing") || hasLine(c.Evidence, "kube-controller-manager last wrote") {
		t.Errorf("stuck %t: %s; evidence %q", it.Stuck, c.Summary, c.Evidence)
	}
}

// The field manager that added a finalizer the catalogue does not know
// helps find its controller: its name is one of the words looked for; a
// generic one (controller-runtime's "manager") is not.
func TestTheFinalizersAdderHelpsFindItsController(t *testing.T) {
	for manager, want := range map[string]bool{"cloudsql-manager": true, "manager": false} {
		u := heldWith("sql.cloud.example.org/instance")
		wroteBy(u, manager, "", time.Hour, `{"f:metadata":{"f:finalizers":{"v:\"sql.cloud.example.org/instance\"":{}}}}`)
		s := snap(u)
		s.Controllers = &observed.Controllers{}
		c := Diagnose(s).Items[0].Causes[0]
		if got := strings.Contains(c.Remediation[0].Command, "-e "+manager); got != want {
			t.Errorf("%s: %q; want the manager among the words: %t", manager, c.Remediation[0].Command, want)
		}
	}
}
