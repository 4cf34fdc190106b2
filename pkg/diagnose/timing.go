package diagnose

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// timing is the grace-period arithmetic of one object. deletionTimestamp is a
// deadline (request time + grace), not the time the delete was requested.
type timing struct {
	grace       int64
	requestedAt time.Time
	deadline    time.Time
	terminating time.Duration // since the request
	overdue     time.Duration // past the deadline; 0 inside it
	remaining   time.Duration // left until the deadline; 0 past it
	depth       int           // how deep the object is nested in the report (0: a target)
	verdictOnly bool          // the report shows the verdicts alone (Verdicts): no evidence, remediation or timeline to build
}

func timingOf(obj *unstructured.Unstructured, now time.Time) timing {
	var t timing
	deadline, deleted := observed.DeletionTime(obj)
	if !deleted {
		return t
	}
	if g, found, _ := unstructured.NestedInt64(obj.Object, "metadata", "deletionGracePeriodSeconds"); found {
		t.grace = g // as GetDeletionGracePeriodSeconds reads it, without its allocation
	}
	t.deadline = deadline
	t.requestedAt = t.deadline.Add(-time.Duration(t.grace) * time.Second)
	t.terminating = nonNegative(now.Sub(t.requestedAt))
	t.overdue = nonNegative(now.Sub(t.deadline))
	t.remaining = nonNegative(t.deadline.Sub(now))
	return t
}

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }
