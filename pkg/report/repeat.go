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
