package report

import (
	"strings"

	"github.com/muesli/reflow/wordwrap"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// Wrapping: a report's prose is wrapped to the measure the command gives
// (Style.Width: the terminal's width, or DefaultWidth when it is not a
// terminal), each continuation line indented under the line it continues.
// Commands never are (printer.wholef), and a word is never cut, so that
// each command and name can be pasted whole. reflow's wordwrap does the
// breaking: it measures colours as taking no room and wide runes as two.

const (
	// DefaultWidth is the measure when the output's width is unknown (a
	// pipe, a file): the terminal most runbooks are read in.
	DefaultWidth = 80
	// hangIndent is how much further a continuation line is indented than
	// the line it continues.
	hangIndent = "    "
	// minMeasure is the narrowest column of text wrapping leaves: a tree
	// nested deeper than that overflows rather than stacking one word a line.
	minMeasure = 30
	// glue stands for a space that must not break a line (inside a `code`
	// span of explain's prose) while the text is wrapped: a private-use
	// rune, which no text the plugin prints holds.
	glue = "\ue000"
)

// Wrap is a line of text already made safe (Safe), wrapped as the
// report's prose is: for the lines other packages print (fix's plan,
// wait's progress).
func Wrap(line string, width int) string { return strings.Join(wrapLine(line, width), "\n") }

// wrapLine breaks a line that is wider than width at its spaces; each
// continuation begins with the line's indent, its tree drawn on (a branch
// continues as its trunk), and hangIndent. A width of 0 keeps it whole.
func wrapLine(line string, width int) []string {
	if width <= 0 || twwidth.Width(line) <= width {
		return []string{line}
	}
	body := strings.TrimLeft(line, " │├└─")
	lead := line[:len(line)-len(body)]
	return wrapText(lead, trunk.Replace(lead)+hangIndent, body, width)
}

// trunk draws a tree's branches as the trunk under them.
var trunk = strings.NewReplacer("├── ", "│   ", "└── ", "    ")

// wrapText is text wrapped to width after first, its continuations after
// hang (whole with a width of 0).
func wrapText(first, hang, text string, width int) []string {
	if width <= 0 {
		return []string{first + text}
	}
	measure := max(width-max(twwidth.Width(first), twwidth.Width(hang)), minMeasure)
	w := wordwrap.NewWriter(measure)
	w.Breakpoints = nil // only at spaces: kube-node-lease, web-0 stay whole
	_, _ = w.Write([]byte(text))
	_ = w.Close()
	lines := strings.Split(w.String(), "\n")
	for i, l := range lines {
		prefix := hang
		if i == 0 {
			prefix = first
		}
		lines[i] = prefix + strings.TrimRight(l, " ")
	}
	return lines
}

// glued is text with its `code` spans' backticks dropped and their spaces
// glued, so that wrapText keeps each span on one line (unglue restores them).
func glued(text string) string {
	var b strings.Builder
	code := false
	for _, r := range text {
		switch {
		case r == '`':
			code = !code
		case r == ' ' && code:
			b.WriteString(glue)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unglue restores the spaces glued glued.
var unglue = strings.NewReplacer(glue, " ")
