package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// timeline collects what is known to have happened to a target, oldest first.
type timeline []report.Moment

func (tl *timeline) add(t time.Time, format string, args ...any) {
	tl.addMoment(t, report.Moment{Event: fmt.Sprintf(format, args...)})
}

// addMoment adds m at t (a moment that says more than its text).
func (tl *timeline) addMoment(t time.Time, m report.Moment) {
	if !t.IsZero() {
		m.Time = metav1.NewTime(t)
		*tl = append(*tl, m)
	}
}

func (tl timeline) sorted() []report.Moment {
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Time.Before(&tl[j].Time) })
	return tl
}

// timelineOf builds the target's timeline from the fields and events read.
func timelineOf(s *observed.Snapshot, t *observed.Target, tm timing) []report.Moment {
	var tl timeline
	if tm.grace > 0 {
		tl.addMoment(tm.requestedAt, report.Moment{Event: fmt.Sprintf("%s (grace period %ds)", report.DeletionRequested, tm.grace), DeletionRequest: true})
		tl.add(tm.deadline, "grace period ends (metadata.deletionTimestamp)")
	} else {
		tl.addMoment(tm.requestedAt, report.Moment{Event: report.DeletionRequested, DeletionRequest: true}) // no grace period: most kinds have none
	}
	if p := t.Pod; p != nil {
		podTimeline(&tl, s, p)
	}
	if ns := t.Namespace; ns != nil {
		namespaceTimeline(&tl, ns)
	}
	return tl.sorted()
}

// namespaceTimeline adds the namespace controller's conditions: one moment
// per time it wrote some, as it writes them all at once on each pass. Of
// several, those True are named with their reason, the others by type
// only (the reason of a condition False, ContentDeleted or ContentRemoved,
// reads as if the content were gone while it remains).
func namespaceTimeline(tl *timeline, ns *corev1.Namespace) {
	var at []metav1.Time
	byTime := map[int64][]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		k := c.LastTransitionTime.Unix()
		if byTime[k] == nil {
			at = append(at, c.LastTransitionTime)
		}
		byTime[k] = append(byTime[k], c)
	}
	for _, t := range at {
		if conds := byTime[t.Unix()]; len(conds) == 1 {
			c := conds[0]
			tl.add(t.Time, "condition %s=%s (%s)", c.Type, c.Status, c.Reason)
		} else {
			tl.add(t.Time, "conditions %s", foldConditions(conds))
		}
	}
}

// foldConditions says several conditions in one line: "A=True (Reason),
// B=True (Reason); False: C, D".
func foldConditions(conds []corev1.NamespaceCondition) string {
	var trues []string
	var statuses []corev1.ConditionStatus
	byStatus := map[corev1.ConditionStatus][]string{}
	for _, c := range conds {
		if c.Status == corev1.ConditionTrue {
			trues = append(trues, fmt.Sprintf("%s=True (%s)", c.Type, c.Reason))
			continue
		}
		if byStatus[c.Status] == nil {
			statuses = append(statuses, c.Status)
		}
		byStatus[c.Status] = append(byStatus[c.Status], string(c.Type))
	}
	var parts []string
	if len(trues) > 0 {
		parts = append(parts, strings.Join(trues, ", "))
	}
	for _, st := range statuses {
		parts = append(parts, fmt.Sprintf("%s: %s", st, strings.Join(byStatus[st], ", ")))
	}
	return strings.Join(parts, "; ")
}

func podTimeline(tl *timeline, s *observed.Snapshot, p *corev1.Pod) {
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
		tl.addMoment(eventTime(e), report.Moment{Event: fmt.Sprintf("event %s: %s", e.Reason, e.Message), Reason: e.Reason, Message: e.Message})
	}
	// A live kubelet renews its lease every few seconds: its last renewal
	// says something only once it stopped, the lease gone stale.
	if n := nodeHealthOf(s, p.Spec.NodeName); n.leaseStale() {
		tl.add(n.lease.Spec.RenewTime.Time, "node %s: lease last renewed", p.Spec.NodeName)
	}
	if n := s.Nodes[p.Spec.NodeName]; n != nil {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				tl.add(c.LastTransitionTime.Time, "node %s: Ready=%s (%s)", p.Spec.NodeName, c.Status, c.Reason)
			}
		}
	}
}
