package catalog

import (
	"regexp"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/docs"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// DocsBase is where the cause catalogue is published.
const DocsBase = "https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md"

// DocsURL is the address of a code's entry in the published catalogue.
func DocsURL(c Code) string { return DocsBase + "#" + strings.ToLower(string(c)) }

// Explain returns a code's entry in docs/causes.md (embedded in the binary):
// its signal, evidence, why it blocks, remediation and risks, as Markdown.
func Explain(c Code) (string, bool) {
	lines := strings.Split(docs.Causes, "\n")
	for i, l := range lines {
		title, ok := strings.CutPrefix(l, "### ")
		if !ok || !documents(title, c) {
			continue
		}
		var body []string
		for _, next := range lines[i+1:] {
			if strings.HasPrefix(next, "#") {
				break
			}
			body = append(body, next)
		}
		return strings.TrimSpace(strings.Join(body, "\n")), true
	}
	return "", false
}

// documents says whether a heading ("A" or "A, B") names the code.
func documents(title string, c Code) bool {
	for _, t := range strings.Split(title, ",") {
		if strings.TrimSpace(t) == string(c) {
			return true
		}
	}
	return false
}

// Describe is a code's entry as `explain CODE` shows it: each labelled part
// ("- **Signal:** ...", a nested "  - **Seen mounted:** ...", the indented
// paragraphs after it) as plain text; a remediation part's steps ("; "
// between them) graded with the report's risk levels, as each step writes
// it in parentheses at its end: "(none: read-only)", "(low)"; the Detected
// part apart.
func Describe(c Code) (report.Explanation, bool) {
	text, ok := Explain(c)
	if !ok {
		return report.Explanation{}, false
	}
	e := report.Explanation{Code: string(c), Title: entries[c].Title, Docs: DocsURL(c)}
	for _, line := range strings.Split(text, "\n") {
		m := labelled.FindStringSubmatch(line)
		switch {
		case m != nil && m[2] == "Detected":
			e.Detected = plain(m[3])
		case m != nil && strings.HasPrefix(m[2], "Remediation"):
			steps, rest := Remedies(m[3])
			e.Parts = append(e.Parts, report.Part{Label: plain(m[2]), Nested: m[1] != "", Steps: steps, Text: rest})
		case m != nil:
			e.Parts = append(e.Parts, report.Part{Label: plain(m[2]), Nested: m[1] != "", Text: []string{plain(m[3])}})
		case strings.TrimSpace(line) != "" && len(e.Parts) > 0:
			last := &e.Parts[len(e.Parts)-1]
			last.Text = append(last.Text, plain(strings.TrimSpace(line)))
		}
	}
	return e, true
}

// labelled is a part's first line: its depth, label and text.
var labelled = regexp.MustCompile(`^( *)- \*\*(.+?):?\*\*:? (.*)$`)

// emphasis is Markdown's bold and italics; link is [text](address).
var (
	emphasis = regexp.MustCompile(`\*\*|\*`)
	link     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// plain is Markdown text without its emphasis and links (the link's text
// kept); `code` spans are left for the renderer, which keeps each on one line.
func plain(s string) string {
	var b strings.Builder
	for i, piece := range strings.Split(s, "`") {
		if i%2 == 0 { // outside a code span
			piece = emphasis.ReplaceAllString(link.ReplaceAllString(piece, "$1"), "")
		} else {
			piece = "`" + piece + "`"
		}
		b.WriteString(piece)
	}
	return b.String()
}

// Remedies parses a remediation part: its steps, each graded by the risk
// level its parenthesis at the end starts with ("(high: the cleanup it
// protects is skipped)"; Risk is what is in it, as `why` words a step's
// risk), and the sentences after the last step. A step without a grade
// has no RiskLevel (TestEveryRemedyIsGraded).
func Remedies(text string) (steps []report.Step, after []string) {
	for _, s := range splitSteps(strings.TrimSpace(text)) {
		step, rest := graded(s)
		steps = append(steps, step)
		if rest != "" {
			after = append(after, plain(rest))
		}
	}
	return steps, after
}

// splitSteps splits at each "; " outside parentheses and code spans.
func splitSteps(text string) []string {
	var out []string
	start := 0
	outside(text, func(i, depth int) bool {
		if depth == 0 && strings.HasPrefix(text[i:], "; ") {
			out = append(out, text[start:i])
			start = i + 2
		}
		return true
	})
	return append(out, text[start:])
}

// graded is a step and its grade: its first parenthesis (outside code
// spans) that starts with a risk level, "(low)" or "(low: why)"; the
// sentences after it (". Then ...") are returned apart.
func graded(s string) (step report.Step, after string) {
	s = strings.TrimSuffix(s, ".")
	step, open := report.Step{Action: plain(s)}, 0
	outside(s, func(i, depth int) bool {
		if depth != 0 {
			return true
		}
		switch s[i] {
		case '(':
			open = i
			return true
		case ';':
			return true
		}
		risk := s[open+1 : i]
		level, _, _ := strings.Cut(risk, ":")
		if report.RiskLevel(level).Weight() == 0 {
			return true
		}
		step = report.Step{Action: plain(strings.TrimSpace(s[:open])), Risk: plain(risk), RiskLevel: report.RiskLevel(level)}
		if after = strings.TrimSpace(strings.TrimPrefix(s[i+1:], ".")); after != "" {
			after += "."
		}
		return false
	})
	return step, after
}

// outside visits the parentheses and semicolons of s that are outside code
// spans, with the depth of parentheses each is at (a parenthesis at the
// depth outside it), until visit returns false.
func outside(s string, visit func(i, depth int) bool) {
	depth, code := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			code = !code
		case code || c != '(' && c != ')' && c != ';':
		case c == ')':
			depth--
			if !visit(i, depth) {
				return
			}
		default:
			if !visit(i, depth) {
				return
			}
			if c == '(' {
				depth++
			}
		}
	}
}
