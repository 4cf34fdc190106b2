package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A controller the catalogue does not know still says why it cannot finish,
// in shapes that need no knowledge of it: a condition whose polarity its
// type's name gives away (ACK.Terminal=True, Stalled=True, Ready=False with
// an error reason), or a status field named for an error (failureReason,
// error.message, validationErrors, lastError) or holding one (a message or
// phase that says it failed).

// troubleTypes name a condition whose True means trouble; checked before
// healthTypes, so NotReady and Unavailable are trouble, not health.
var troubleTypes = []string{"terminal", "stalled", "degraded", "fail", "error", "blocked", "invalid", "conflict",
	"unhealthy", "unavailable", "notready", "unready", "outofsync", "denied", "refused", "timeout", "timedout", "broken", "lost", "orphaned"}

// healthTypes name a condition whose False means it is not (yet) as wanted;
// whether that is a failure, its reason and message say (Ready=False
// Deleting is a controller at work).
var healthTypes = []string{"ready", "synced", "available", "healthy", "succeeded", "reconciled", "established", "bound",
	"complete", "accepted", "programmed", "valid", "resolvedrefs", "initialized", "connected", "uptodate", "active"}

// messageWords mark a message or phase as a failure, beyond errorWords:
// the way controllers phrase what they could not do.
var messageWords = append(slices.Clone(errorWords), "cannot", "can't", "unable", "not allowed", "not authorized", "please ")

// Polarity is what a condition type's True means.
type Polarity int

const (
	// PolarityUnknown: a type whose name says neither (Deleting, Paused).
	PolarityUnknown Polarity = iota
	// TrueIsHealthy: Ready, Synced, Available...
	TrueIsHealthy
	// TrueIsTrouble: Terminal, Stalled, Degraded, ...Failed, ...Error.
	TrueIsTrouble
)

// polarityOf reads a condition type's polarity from its name, whatever the
// operator's prefix (ACK.Terminal, example.com/Degraded).
func polarityOf(typ string) Polarity {
	name := strings.ToLower(typ[strings.LastIndexAny(typ, "./")+1:])
	switch {
	case containsAny(name, troubleTypes):
		return TrueIsTrouble
	case containsAny(name, healthTypes):
		return TrueIsHealthy
	}
	return PolarityUnknown
}

// failureLooking: a condition that reports a failure whatever the
// controller. A trouble type is a failure when True (or status-less: Argo
// CD's conditions have no status); any other condition is one when its
// reason, or for a health type not True its message, names a failure
// (Synced=False ReconcileError, Ready=False "cannot delete ...",
// Deleting=True DeleteFailed).
func failureLooking(c condition) bool {
	reason, message := strings.ToLower(c.Reason), strings.ToLower(c.Message)
	switch polarityOf(c.Type) {
	case TrueIsTrouble:
		return c.Status == string(corev1.ConditionTrue) || c.Status == ""
	case TrueIsHealthy:
		if c.Status == string(corev1.ConditionTrue) {
			return false
		}
		return containsAny(reason, errorWords) || containsAny(message, messageWords)
	}
	return containsAny(reason, errorWords)
}

// statusWord is a status field that carries a controller's failure.
type statusWord struct {
	field, text string
}

// maxStatusWords bounds what one object's status can contribute: a list of
// validation errors quotes its first few.
const maxStatusWords = 5

// statusWords reads the top-level status fields that carry errors: those
// named for one (error, lastError, failureReason, failureMessage,
// validationErrors: any non-empty value, a string, an object's message or a
// list of either), and the message, reason, phase and state fields whose
// text names a failure. In the order of the field names. Not a pod's: its
// phase Failed is how a pod ends, and the pod rules read its status.
func statusWords(t *observed.Target) []statusWord {
	if t.Pod != nil {
		return nil
	}
	// Read in place (NestedMap copies it all), and mostly absent: a held
	// object listed by the scan has metadata alone.
	status, _ := t.Object.Object["status"].(map[string]any)
	if len(status) == 0 {
		return nil
	}
	var out []statusWord
	for _, key := range sortedKeys(status) {
		k := strings.ToLower(key)
		named, describes := observed.StatusWordField(key)
		if !named && !describes {
			continue
		}
		for _, w := range textsOf("status."+key, status[key]) {
			if named || containsAny(strings.ToLower(w.text), messageWords) || polarityOf(w.text) == TrueIsTrouble && (k == "phase" || k == "state") {
				out = append(out, w)
			}
			if len(out) == maxStatusWords {
				return out
			}
		}
	}
	return out
}

// textsOf flattens a status value to its texts: a string; an object's
// message (or its reason, or code); each element of a list.
func textsOf(field string, v any) []statusWord {
	switch v := v.(type) {
	case string:
		if v = strings.TrimSpace(v); v != "" {
			return []statusWord{{field: field, text: v}}
		}
	case map[string]any:
		for _, k := range []string{"message", "reason", "code"} {
			if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
				return []statusWord{{field: field + "." + k, text: strings.TrimSpace(s)}}
			}
		}
	case []any:
		var out []statusWord
		for i, e := range v {
			if i == maxStatusWords {
				break
			}
			out = append(out, textsOf(fmt.Sprintf("%s[%d]", field, i), e)...)
		}
		return out
	}
	return nil
}
