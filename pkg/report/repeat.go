package report

import (
	"fmt"
	"slices"
	"strings"
)

// No sentence twice in an object's report: the rules compose their
// summaries from their blockers' (a CRD's cause quotes what holds its
// instances, a checklist row what refuses the final DELETE), which a person
// reads once. The rules say what each text quotes (Cause.Quotes,
// Check.Quotes); a line that would repeat a text printed with the object
// points to it instead. JSON keeps every text whole.

// minRepeat is how long a text must be to count as a sentence repeated:
// "running: app" may well appear twice.
const minRepeat = 30

// says reports whether a cause's summary says text, a sentence: it is that
// summary, or one the summary quotes.
func says(c Cause, text string) bool {
	return len(text) >= minRepeat && (c.Summary == text || slices.Contains(c.Quotes, text))
}

// causeSummary is cause n's summary, or which cause above says it already.
func causeSummary(causes []Cause, n int) string {
	for k := range n {
		if says(causes[k], causes[n].Summary) {
			return fmt.Sprintf("see cause %d", k+1)
		}
	}
	return causes[n].Summary
}

// checkDetail is a checklist row's detail, each cause's summary it quotes
// replaced by the cause's number (the causes follow the checklist).
func checkDetail(c Check, causes []Cause) string {
	detail := c.Detail
	for k, cause := range causes {
		if len(cause.Summary) >= minRepeat && slices.Contains(c.Quotes, cause.Summary) {
			detail = strings.Replace(detail, cause.Summary, fmt.Sprintf("see cause %d", k+1), 1)
		}
	}
	return detail
}

// momentText is a timeline moment as printed: the moment of an event whose
// message a fact printed above quotes says so instead.
func momentText(m Moment, quoted map[string]bool) string {
	if len(m.Message) >= minRepeat && quoted[m.Message] {
		return "event " + m.Reason + ": its message is in the evidence above"
	}
	return m.Event
}

// evidenceOf is a cause's evidence as facts, each line once (two finalizers
// of one controller group give the same line of evidence twice); a cause
// made of lines alone (by hand, in tests) gives facts of their text.
func evidenceOf(c Cause) []Fact {
	facts := c.Facts
	if len(facts) != len(c.Evidence) {
		facts = make([]Fact, len(c.Evidence))
		for i, e := range c.Evidence {
			facts[i] = Fact{Text: e}
		}
	}
	seen := map[string]bool{}
	out := make([]Fact, 0, len(facts))
	for _, f := range facts {
		if !seen[f.Text] {
			seen[f.Text] = true
			out = append(out, f)
		}
	}
	return out
}
