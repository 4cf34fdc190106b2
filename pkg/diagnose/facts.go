package diagnose

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Evidence as data (report.Fact): each constructor renders the line a
// person reads from the same values a script selects on, so the two never
// say different things.

// timeOf is t for a fact, nil when unknown.
func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	at := metav1.NewTime(t.UTC())
	return &at
}

// nodeRef names a node as a fact's object.
func nodeRef(name string) *report.ObjectRef {
	return &report.ObjectRef{APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: name}
}

// eventFact is an event about the object, as quoted:
// "event Warning FailedKillPod (x3) 2m ago: MESSAGE".
func eventFact(e *corev1.Event, now time.Time) report.Fact {
	count := ""
	if e.Count > 1 {
		count = fmt.Sprintf(" (x%d)", e.Count)
	}
	at := eventTime(*e)
	return report.Fact{
		Text:  fmt.Sprintf("event %s %s%s %s ago: %s", e.Type, e.Reason, count, report.HumanDuration(nonNegative(now.Sub(at))), e.Message),
		Field: "event", Value: e.Type, Reason: e.Reason, Quote: e.Message, At: timeOf(at),
	}
}

// conditionFact is one of the object's status.conditions, as quoted:
// "status.conditions[type=Ready]: False, reason X since T: MESSAGE".
func conditionFact(c condition) report.Fact {
	line := fmt.Sprintf("status.conditions[type=%s]: %s, reason %s", c.Type, c.Status, c.Reason)
	if !c.at.IsZero() {
		line += " since " + c.at.UTC().Format(time.RFC3339)
	}
	if c.Message != "" {
		line += ": " + c.Message
	}
	return report.Fact{Text: line, Field: "status.conditions[" + c.Type + "]", Value: c.Status, Reason: c.Reason, Quote: c.Message, At: timeOf(c.at)}
}

// noEventSeen says honestly what a missing event means.
func noEventSeen(reason string) report.Fact {
	return report.Fact{Text: fmt.Sprintf("no %s event seen (events expire after one hour by default: their absence proves nothing)", reason), Field: "event", Reason: reason}
}

// ofObject is a fact read from another object: its line after prefix (the
// object's name as the evidence names it), its object that one.
func ofObject(ref report.ObjectRef, prefix string, f report.Fact) report.Fact {
	f.Text = prefix + f.Text
	if f.Object == nil {
		f.Object = &ref
	}
	return f
}

// notes are facts known by their lines alone.
func notes(lines []string) []report.Fact {
	out := make([]report.Fact, len(lines))
	for i, l := range lines {
		out[i] = report.Noted(l)
	}
	return out
}

// ptr is a reference to a copy of ref.
func ptr(ref report.ObjectRef) *report.ObjectRef { return &ref }
