package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// factOf is the fact of a cause read from field (about object kind, "" for
// the item itself); nil when none.
func factOf(c report.Cause, kind, field string) *report.Fact {
	for i, f := range c.Facts {
		if f.Field == field && (kind == "" && f.Object == nil || f.Object != nil && f.Object.Kind == kind) {
			return &c.Facts[i]
		}
	}
	return nil
}

// The evidence is data: what a controller says (a condition of any
// polarity, a status field, an event), who wrote the object and when, and
// what was read of the node, each with its field, value, reason, words and
// time beside the line a person reads, which is rendered from the same
// values. The lines of every report are its facts' (TestMain checks it on
// every report of this package's tests).
func TestEvidenceIsData(t *testing.T) {
	const message = "api error InvalidParameterCombination: Cannot delete protected DB Instance"
	u := withStatus(heldWith(unknownFinalizer, condAt("ACK.Terminal", "True", "", message, 2*time.Minute)),
		map[string]any{"error": map[string]any{"message": "credentials expired"}})
	wroteBy(u, "ack-rds-controller", "status", 3*time.Minute, "")
	s := snap(u)
	s.Controllers = &observed.Controllers{}
	warning := corev1.Event{Type: corev1.EventTypeWarning, Reason: "DeleteFailed", Message: "bucket not empty", Count: 3,
		LastTimestamp: metav1.NewTime(now.Add(-time.Minute)), InvolvedObject: corev1.ObjectReference{UID: u.GetUID()}}
	s.Events = map[types.UID][]corev1.Event{u.GetUID(): {warning}}
	c := Diagnose(s).Items[0].Causes[0]

	cond := factOf(c, "", "status.conditions[ACK.Terminal]")
	if cond == nil || cond.Value != "True" || cond.Quote != message || cond.At == nil || !cond.At.Time.Equal(now.Add(-2*time.Minute)) ||
		!strings.HasPrefix(cond.Text, "status.conditions[type=ACK.Terminal]: True") {
		t.Errorf("the condition: %+v", cond)
	}
	if f := factOf(c, "", "status.error.message"); f == nil || f.Quote != "credentials expired" || f.Text != "status.error.message: credentials expired (status last written "+now.Add(-3*time.Minute).UTC().Format(time.RFC3339)+")" {
		t.Errorf("the status field: %+v", f)
	}
	if f := factOf(c, "", "event"); f == nil || f.Reason != "DeleteFailed" || f.Value != "Warning" || f.Quote != "bucket not empty" || !strings.Contains(f.Text, "DeleteFailed (x3) 60s ago: bucket not empty") {
		t.Errorf("the event: %+v", f)
	}
	if f := factOf(c, "", "metadata.managedFields"); f == nil || f.Value != "ack-rds-controller" || f.At == nil {
		t.Errorf("the write: %+v", f)
	}
	if f := factOf(c, "", "metadata.finalizers"); f == nil || f.Value != "["+unknownFinalizer+"]" || f.Text != "metadata.finalizers: ["+unknownFinalizer+"]" {
		t.Errorf("the finalizers: %+v", f)
	}

	// A pod on a node that stopped reporting: the node's facts name it.
	pod := terminatingPod(10*time.Minute, 30)
	pod.Spec.NodeName = "n1"
	ps := snap(pod, node("n1", corev1.ConditionUnknown, "node.kubernetes.io/unreachable"), lease("n1", 15*time.Minute))
	top := Diagnose(ps).Items[0].Causes[0]
	ready := factOf(top, "Node", "status.conditions[Ready]")
	if top.Code != "NodeUnreachable" || ready == nil || ready.Object.Name != "n1" || ready.Value != "Unknown" {
		t.Errorf("%s: the node's Ready condition: %+v", top.Code, ready)
	}
	if renew := factOf(top, "Lease", "spec.renewTime"); renew == nil || renew.Object.Namespace != "kube-node-lease" || renew.At == nil {
		t.Errorf("the lease: %+v", renew)
	}
	if taints := factOf(top, "Node", "spec.taints"); taints == nil || !strings.Contains(taints.Value, "node.kubernetes.io/unreachable") {
		t.Errorf("the taints: %+v", taints)
	}
}
