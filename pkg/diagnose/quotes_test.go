package diagnose

import (
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// TestQuotesAreAppendedToCopies: two causes copied from one (an example's
// top cause, led by two summaries) each keep what is recorded on them; an
// append in place into the lists they share gave the first the second's.
func TestQuotesAreAppendedToCopies(t *testing.T) {
	base := report.Cause{Summary: "base", Names: make([]string, 1, 4), Quotes: make([]string, 1, 4)}
	a, b := base, base
	quoted{summaries: []string{"A"}, names: []string{"a"}}.on(&a)
	quoted{summaries: []string{"B"}, names: []string{"b"}}.on(&b)
	prefixed(&a, "lead a: ")
	prefixed(&b, "lead b: ")
	if a.Names[1] != "a" || a.Quotes[1] != "A" || a.Quotes[2] != "base" {
		t.Fatalf("the first copy's lists were changed by the second's: names %q, quotes %q", a.Names, a.Quotes)
	}
	if b.Names[1] != "b" || b.Quotes[1] != "B" {
		t.Fatalf("names %q, quotes %q", b.Names, b.Quotes)
	}
}
