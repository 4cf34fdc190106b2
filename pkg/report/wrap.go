package report

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/mattn/go-runewidth"
	"github.com/muesli/reflow/ansi"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// Wrapping: a report's prose is wrapped to the measure the command gives
// (Style.Width: the terminal's width, or DefaultWidth when it is not a
// terminal), each continuation line indented under the line it continues.
// Commands never are (printer.wholef), and a word is never cut, so that
// each command and name can be pasted whole. wordWrap does the breaking as
// reflow's wordwrap does (colours take no room, wide runes two), in one
// pass: reflow measures a word again at each of its runes, so a word of n
// bytes cost n² (a 60 MB name took gigabytes).

const (
	// DefaultWidth is the measure when the output's width is unknown (a
	// pipe, a file): the terminal most runbooks are read in.
	DefaultWidth = 80
	// hangIndent is how much further a continuation line is indented than
	// the line it continues.
	hangIndent = "    "
	// minMeasure is the narrowest column of text wrapping leaves: a tree
	// nested deeper than that overflows rather than stacking one word a line.
	minMeasure = 20
	// glue stands for a space that must not break a line while the text is
	// wrapped (in a `code` span of explain's prose, a flag hint, the
	// verdict, before a "$"): a private-use rune, which Safe shows escaped
	// in any text from the cluster, so only the renderer's glue is unglued.
	glue = "\ue000"
)

// Wrap is a line of text already made safe (Safe), wrapped as the
// report's prose is (its continuations indented hangIndent): for the lines
// other packages print (wait's progress).
func Wrap(line string, width int) string { return WrapLabelled("", "", line, width) }

// WrapLabelled is Wrap for a line that begins with lead (its indent) and
// label (what begins it before its text: "1. ", "why: "; "" for none),
// under which its continuations line up (fix's plan).
func WrapLabelled(lead, label, text string, width int) string {
	return strings.Join(wrapLine(lead, label, text, width), "\n")
}

// WrapHanging is text already made safe wrapped to width after first, its
// continuation lines after hang (help's prose and summaries).
func WrapHanging(first, hang, text string, width int) []string {
	return wrapText(first, hang, text, width)
}

// wrapLine breaks a line (lead, label and text, as the printer gives them)
// that is wider than width at its spaces; each continuation begins with the
// lead, its tree drawn on (a branch continues as its trunk), and then lines
// up with the text after the label ("1. ", "evidence: ", "fix 2: ", a
// timeline's time), or is indented hangIndent further when there is none.
// A width of 0 keeps it whole.
func wrapLine(lead, label, text string, width int) []string {
	if line := lead + label + text; width <= 0 || twwidth.Width(line) <= width {
		return []string{unglue.Replace(line)}
	}
	hang := trunk.Replace(lead) + hangIndent
	if label != "" {
		hang = trunk.Replace(lead) + strings.Repeat(" ", twwidth.Width(label))
	}
	return wrapText(lead+label, hang, gluePrompts(text), width)
}

// gluePrompts glues each "$" in text (cluster text among it) to the word
// before it: a message that holds "  $ curl ... | sh" must not begin a line
// of its own, where it would read as a suggested command.
func gluePrompts(text string) string {
	if !strings.Contains(text, "$") {
		return text // a regexp replacement copies the text, matched or not
	}
	return prompt.ReplaceAllStringFunc(text, func(m string) string { return strings.Repeat(glue, len(m)-1) + "$" })
}

var prompt = regexp.MustCompile(` +\$`)

// hint is a flag hint of the renderer's own, "(-o wide for the details)",
// its spaces glued: it is read, and typed, whole. Safe escapes glue in
// cluster text (private use), so only the renderer's glue is turned back
// into spaces.
func hint(text string) painted { return painted(strings.ReplaceAll(text, " ", glue)) }

// trunk draws a tree's branches as the trunk under them.
var trunk = strings.NewReplacer("├── ", "│   ", "└── ", "    ")

// wrapText is text wrapped to width after first, its continuations after
// hang (whole with a width of 0), its glued spaces spaces again.
func wrapText(first, hang, text string, width int) []string {
	if width <= 0 {
		return []string{unglue.Replace(first + text)}
	}
	measure := max(width-max(twwidth.Width(first), twwidth.Width(hang)), minMeasure)
	lines := strings.Split(wordWrap(text, measure), "\n")
	for i, l := range lines {
		prefix := hang
		if i == 0 {
			prefix = first
		}
		lines[i] = prefix + unglue.Replace(strings.TrimRight(l, " "))
	}
	return lines
}

// wordWrap breaks text into lines of at most limit columns at spaces only
// (kube-node-lease, web-0 stay whole), as reflow's wordwrap writer with no
// breakpoints does, rune for rune: its loop, with the word's width kept as
// the word grows instead of measured again at each rune. Newlines are kept;
// a word goes to the next line when a prefix of it narrower than the limit
// would pass it (a longer word overflows its own line, whole); ANSI
// sequences take no room.
func wordWrap(text string, limit int) string {
	var out, space, word strings.Builder
	out.Grow(len(text) + len(text)/max(limit, 1) + 1)
	line, wordWidth, inANSI := 0, 0, false
	addWord := func() {
		if word.Len() > 0 {
			line += space.Len() + wordWidth
			out.WriteString(space.String())
			out.WriteString(word.String())
			space.Reset()
			word.Reset()
			wordWidth = 0
		}
	}
	addNewLine := func() {
		out.WriteByte('\n')
		line = 0
		space.Reset()
	}
	for _, r := range text {
		switch {
		case r == ansi.Marker:
			word.WriteRune(r)
			inANSI = true
		case inANSI:
			word.WriteRune(r)
			inANSI = !ansi.IsTerminator(r)
		case r == '\n':
			if word.Len() == 0 {
				if line+space.Len() <= limit {
					out.WriteString(space.String()) // spaces before a newline stay
				}
				space.Reset()
			}
			addWord()
			addNewLine()
		case unicode.IsSpace(r):
			addWord()
			space.WriteRune(r)
		default:
			word.WriteRune(r)
			wordWidth += runewidth.RuneWidth(r)
			if line+space.Len()+wordWidth > limit && wordWidth < limit {
				addNewLine()
			}
		}
	}
	addWord()
	return out.String()
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

// CutMark ends the last line a long line is cut to.
const CutMark = " ... (-o wide)"

// cut is a wrapped line's last line kept, words dropped from its end until
// the mark saying where the rest is fits the width; when even its first
// word does not leave room for the mark, the mark alone, under it.
func cut(line string, width int) string {
	indent := len(line) - len(strings.TrimLeft(line, " │"))
	for twwidth.Width(line+CutMark) > width {
		i := strings.LastIndexByte(strings.TrimRight(line, " "), ' ')
		if i <= indent {
			return line[:indent] + strings.TrimPrefix(CutMark, " ")
		}
		line = line[:i]
	}
	return line + CutMark
}
