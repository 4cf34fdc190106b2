package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/fatih/color"
)

// Explanation is a cause code's entry in docs/causes.md, as `explain CODE`
// prints it (catalog.Describe makes it): plain text, each labelled part of
// the entry under its label, the remediation as steps graded as `why`
// grades them.
type Explanation struct {
	Code  string
	Title string
	Parts []Part
	// Detected is the entry's "Detected" part: the version that first
	// produced the code, and from when what.
	Detected string
	Docs     string
}

// Part is one labelled paragraph of an entry ("Signal", "Why it blocks"),
// or one nested under the part before it.
type Part struct {
	Label  string
	Nested bool
	// Steps is a remediation part's steps, safest first: Action and Risk
	// ("none: read-only"), graded by RiskLevel.
	Steps []Step
	// Text is the part's paragraphs (after its steps). A `code` span (its
	// backticks are dropped) is never cut across two lines.
	Text []string
}

// ExplainWidth is the measure explain's prose is wrapped to, a terminal
// narrower than it wrapping it narrower.
const ExplainWidth = 80

// WriteExplanation prints an entry for a person, wrapped to st.Width: each
// label in bold on a terminal, the text under it indented, the steps
// numbered with their risk in the words `why` prints.
func WriteExplanation(w io.Writer, e Explanation, st Style) error {
	p := newPrinter(w, st)
	p.linef("", "", "%s: %s", st.paint(e.Code, color.Bold), e.Title)
	for _, part := range e.Parts {
		indent := "  "
		if part.Nested {
			indent = "    "
		}
		p.linef("", "", "")
		p.linef(indent[2:], "", "%s", st.paint(strings.ReplaceAll(part.Label, "`", ""), color.Bold))
		for k, s := range part.Steps {
			number := strconv.Itoa(k+1) + ". "
			hang := indent + strings.Repeat(" ", len(number))
			p.wrapped(indent+number, hang, s.Action)
			p.wrapped(hang+"risk: ", hang+"      ", s.Risk)
		}
		for _, text := range part.Text {
			p.wrapped(indent, indent, text)
		}
	}
	p.linef("", "", "")
	if e.Detected != "" {
		p.wrapped("", "", "Detected since "+e.Detected)
	}
	p.wholef("More: %s", e.Docs)
	return p.err
}

// wrapped prints prose made safe and wrapped to the printer's width (a
// word longer than that alone on its line), the first line after first,
// the others after hang; a `code` span, its backticks dropped, is never
// cut across two lines.
func (p *printer) wrapped(first, hang, text string) {
	p.print(wrapText(first, hang, glued(string(safef("%s", text))), p.width))
}
