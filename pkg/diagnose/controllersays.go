package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A controller that is alive but cannot finish a deletion usually says why
// in the object itself: Warning events about it and its status.conditions.
// The finalizer catalogue lists, per finalizer, the event reasons and
// conditions its owner uses (the owner's own words: direct evidence); any
// other Warning event or failure-looking condition is quoted too, as
// weaker evidence.

// eventWindow: events older than this are about an earlier state (events
// expire after one hour by default anyway).
const eventWindow = time.Hour

// complaint is one thing a controller says about why it cannot finish.
type complaint struct {
	evidence report.Fact // what is quoted as evidence, verbatim
	reason   string      // the event's or condition's reason, or the status field
	message  string
	at       time.Time
	count    int32
	// direct: the finalizer's catalogued owner says it (its event reason or
	// condition), not any Warning or failure-looking condition.
	direct bool
	// fresh: said after the deletion began, so about the deletion (a
	// condition's transition, an event, a status write since then).
	fresh bool
}

// complaints lists what the target's controllers say, the owner's own words
// first, then what was said since the deletion began, then the most recent
// and most repeated.
func complaints(s *observed.Snapshot, t *observed.Target, finalizers []heldBy) []complaint {
	var rows []catalog.Finalizer
	for _, f := range finalizers {
		if row, ok := catalog.LookupFinalizer(f.name); ok {
			rows = append(rows, row)
		}
	}
	out := append(eventComplaints(s, t.Object.GetUID(), rows), wordsOf(s, t, rows)...)
	if len(out) == 0 {
		return nil // most held objects: nothing said, and no timing to parse
	}
	tm := timingOf(t.Object, s.Now)
	for i := range out {
		out[i].fresh = sinceDeletion(out[i].at, tm)
	}
	sortComplaints(out)
	return out
}

// wordsOf is what an object's own status says of a failure: its
// failure-looking conditions (direct when a catalogue row of rows names
// them) and its status fields that carry a controller's words.
func wordsOf(s *observed.Snapshot, t *observed.Target, rows []catalog.Finalizer) []complaint {
	var out []complaint
	for _, c := range conditionsOf(t.Object) {
		direct := slices.ContainsFunc(rows, func(r catalog.Finalizer) bool {
			return slices.ContainsFunc(r.FailureConditions, func(sig catalog.ConditionSignal) bool { return signals(sig, c) })
		})
		if !direct && !failureLooking(c) {
			continue
		}
		out = append(out, complaint{evidence: conditionFact(c), reason: c.label(), message: c.Message, at: c.at, count: 1, direct: direct})
	}
	said := statusWords(t)
	if len(said) == 0 {
		return out // most held objects: no status, and no managedFields to parse
	}
	written := statusWrittenAt(writesOfTarget(s, t.Object))
	for _, w := range said {
		line := w.field + ": " + w.text
		if !written.IsZero() {
			line += fmt.Sprintf(" (status last written %s)", written.UTC().Format(time.RFC3339))
		}
		out = append(out, complaint{evidence: report.Fact{Text: line, Field: w.field, Quote: w.text, At: timeOf(written)}, reason: w.field, message: w.text, at: written, count: 1})
	}
	return out
}

// statusWrittenAt is when a controller last wrote the object's status (its
// status subresource, or the object when it has none); zero when its
// managedFields do not say.
func statusWrittenAt(writes []write) time.Time {
	ws := controllerWrites(writes)
	for _, w := range ws {
		if w.subresource == "status" {
			return w.at
		}
	}
	if len(ws) > 0 {
		return ws[0].at
	}
	return time.Time{}
}

// eventComplaints are the Warning events of the last hour about the object
// uid; direct when a catalogue row names their reason.
func eventComplaints(s *observed.Snapshot, uid types.UID, rows []catalog.Finalizer) []complaint {
	var out []complaint
	for _, e := range append(slices.Clone(s.Events[uid]), s.BlockerEvents[uid]...) {
		at := eventTime(e)
		if e.Type != corev1.EventTypeWarning || s.Now.Sub(at) > eventWindow {
			continue
		}
		direct := slices.ContainsFunc(rows, func(r catalog.Finalizer) bool { return slices.Contains(r.FailureEvents, e.Reason) })
		fact := eventFact(&e, s.Now)
		fact.Text += eventSource(e)
		out = append(out, complaint{evidence: fact, reason: e.Reason, message: e.Message, at: at, count: max(e.Count, 1), direct: direct})
	}
	sortComplaints(out)
	return out
}

// sortComplaints puts the owner's own words first, then what was said since
// the deletion began, then the most recent and most repeated.
func sortComplaints(out []complaint) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.direct != b.direct {
			return a.direct
		}
		if a.fresh != b.fresh {
			return a.fresh
		}
		if !a.at.Equal(b.at) {
			return a.at.After(b.at)
		}
		return a.count > b.count
	})
}

func eventSource(e corev1.Event) string {
	switch {
	case e.ReportingController != "":
		return " (reported by " + e.ReportingController + ")"
	case e.Source.Component != "":
		return " (reported by " + e.Source.Component + ")"
	}
	return ""
}

// condition is one of an object's status.conditions, whatever its kind.
type condition struct {
	Type, Status, Reason, Message string
	at                            time.Time
}

// label names a condition as a summary quotes it: Synced=False (ReconcileError).
func (c condition) label() string {
	l := c.Type
	if c.Status != "" {
		l += "=" + c.Status
	}
	if c.Reason != "" {
		l += " (" + c.Reason + ")"
	}
	return l
}

// signals reports whether a condition is a catalogued failure signal.
func signals(sig catalog.ConditionSignal, c condition) bool {
	return c.Type == sig.Type && c.Status == sig.Status && (len(sig.Reasons) == 0 || slices.Contains(sig.Reasons, c.Reason))
}

// conditionsOf reads status.conditions from any object (the usual
// metav1.Condition shape: type, status, reason, message).
func conditionsOf(u *unstructured.Unstructured) []condition {
	items, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []condition
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := m[k].(string); return v }
		c := condition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")}
		if ts, err := time.Parse(time.RFC3339, str("lastTransitionTime")); err == nil {
			c.at = ts
		}
		if c.Type != "" {
			out = append(out, c)
		}
	}
	return out
}

// errorWords mark a reason as a failure.
var errorWords = []string{"error", "fail", "invalid", "denied", "forbidden", "unauthorized", "timeout", "timedout", "unavailable", "conflict", "refused", "blocked", "stalled"}

func containsAny(s string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}
