package diagnose

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// timeline collects what is known to have happened to a target, oldest first.
type timeline []report.Moment

func (tl *timeline) add(t time.Time, format string, args ...any) {
	if !t.IsZero() {
		*tl = append(*tl, report.Moment{Time: metav1.NewTime(t), Event: fmt.Sprintf(format, args...)})
	}
}

func (tl timeline) sorted() []report.Moment {
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Time.Before(&tl[j].Time) })
	return tl
}

// timelineOf builds the target's timeline from the fields and events read.
func timelineOf(s *snapshot.Snapshot, t *snapshot.Target, tm timing) []report.Moment {
	var tl timeline
	tl.add(tm.requestedAt, "deletion requested (grace period %ds)", tm.grace)
	if tm.grace > 0 {
		tl.add(tm.deadline, "grace period ends (metadata.deletionTimestamp)")
	}
	if p := t.Pod; p != nil {
		podTimeline(&tl, s, p)
	}
	if ns := t.Namespace; ns != nil {
		for _, c := range ns.Status.Conditions {
			tl.add(c.LastTransitionTime.Time, "condition %s=%s (%s)", c.Type, c.Status, c.Reason)
		}
	}
	return tl.sorted()
}

func podTimeline(tl *timeline, s *snapshot.Snapshot, p *corev1.Pod) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			tl.add(c.LastTransitionTime.Time, "pod condition %s=%s", c.Type, c.Status)
		}
	}
	for _, group := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, st := range group {
			if term := st.State.Terminated; term != nil {
				tl.add(term.FinishedAt.Time, "container %s terminated (exit code %d, %s)", st.Name, term.ExitCode, term.Reason)
			}
		}
	}
	for _, e := range s.Events[p.UID] {
		tl.add(eventTime(e), "event %s: %s", e.Reason, e.Message)
	}
	if l := s.Leases[p.Spec.NodeName]; l != nil && l.Spec.RenewTime != nil {
		tl.add(l.Spec.RenewTime.Time, "node %s: lease last renewed", p.Spec.NodeName)
	}
	if n := s.Nodes[p.Spec.NodeName]; n != nil {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				tl.add(c.LastTransitionTime.Time, "node %s: Ready=%s (%s)", p.Spec.NodeName, c.Status, c.Reason)
			}
		}
	}
}
