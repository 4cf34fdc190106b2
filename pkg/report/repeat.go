package report

import (
	"fmt"
	"strings"
)

// No sentence twice in an object's report: the rules compose their
// summaries from their blockers' (a CRD's cause quotes what holds its
// instances, a checklist row what refuses the final DELETE), which a person
// reads once. A line that would repeat a text printed with the object points
// to it instead; JSON keeps every text whole.

// minRepeat is how long a text must be to count as a sentence repeated:
// "running: app" may well appear twice.
const minRepeat = 30

// repeats reports whether text is a sentence that said holds in full.
func repeats(said, text string) bool {
	return len(text) >= minRepeat && strings.Contains(said, text)
}

// causeSummary is cause n's summary, or which cause above says it already.
func causeSummary(causes []Cause, n int) string {
	for k := range n {
		if repeats(causes[k].Summary, causes[n].Summary) {
			return fmt.Sprintf("see cause %d", k+1)
		}
	}
	return causes[n].Summary
}

// checkDetail is a checklist row's detail, each cause's summary it quotes
// replaced by the cause's number (the causes follow the checklist).
func checkDetail(detail string, causes []Cause) string {
	for k, c := range causes {
		if repeats(detail, c.Summary) {
			detail = strings.Replace(detail, c.Summary, fmt.Sprintf("see cause %d", k+1), 1)
		}
	}
	return detail
}

// momentText is a timeline moment as printed: an event whose message the
// evidence printed above already quotes says so instead.
func momentText(event string, printed []string) string {
	head, message, ok := strings.Cut(event, ": ")
	if !ok {
		return event
	}
	for _, line := range printed {
		if repeats(line, Safe(message)) {
			return head + ": its message is in the evidence above"
		}
	}
	return event
}

// distinct is texts without the ones printed before (two finalizers of one
// controller group give the same line of evidence twice).
func distinct(texts []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(texts))
	for _, t := range texts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
