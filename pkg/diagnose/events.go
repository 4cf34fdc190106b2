package diagnose

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event reasons and message fragments the kubelet writes
// (pkg/kubelet/events/event.go, pkg/kubelet/container/sync_result.go).
const (
	reasonFailedKillPod       = "FailedKillPod"
	reasonExceededGracePeriod = "ExceededGracePeriod"
	reasonFailedPreStopHook   = "FailedPreStopHook"
	reasonKilling             = "Killing"
	actionKillContainer       = `"KillContainer"`
	actionKillPodSandbox      = `"KillPodSandbox"`
)

// podEvents is what the pod's events say about its shutdown. Events expire
// (one hour by default), so an absent event proves nothing.
type podEvents struct {
	all           []corev1.Event
	killFailed    *corev1.Event // FailedKillPod for a container
	sandboxFailed *corev1.Event // FailedKillPod for the sandbox (CNI)
	exceeded      *corev1.Event
	preStopFailed *corev1.Event
	killing       *corev1.Event
}

func podEventsOf(events []corev1.Event) podEvents {
	sorted := append([]corev1.Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return eventTime(sorted[i]).Before(eventTime(sorted[j])) })
	pe := podEvents{all: sorted}
	for i := range sorted {
		e := &sorted[i] // the latest of each kind wins
		switch e.Reason {
		case reasonFailedKillPod:
			if strings.Contains(e.Message, actionKillPodSandbox) {
				pe.sandboxFailed = e
			}
			if strings.Contains(e.Message, actionKillContainer) {
				pe.killFailed = e
			}
		case reasonExceededGracePeriod:
			pe.exceeded = e
		case reasonFailedPreStopHook:
			pe.preStopFailed = e
		case reasonKilling:
			pe.killing = e
		}
	}
	return pe
}

// latestEvent is the most recent of the events with a reason, or nil.
func latestEvent(events []corev1.Event, reason string) *corev1.Event {
	var latest *corev1.Event
	for i, e := range events {
		if e.Reason == reason && (latest == nil || eventTime(e).After(eventTime(*latest))) {
			latest = &events[i]
		}
	}
	return latest
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}
