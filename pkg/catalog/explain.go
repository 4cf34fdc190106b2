package catalog

import (
	"regexp"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// DocsBase is where the cause catalogue is published.
const DocsBase = "https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md"

// DocsURL is the address of a code's entry in the published catalogue.
func DocsURL(c Code) string {
	if url, ok := docsURLs[c]; ok {
		return url
	}
	return docsURL(c)
}

// docsURLs are the catalogued codes' addresses, made once: a report names
// one for each cause, thousands of times over in list -A.
var docsURLs = func() map[Code]string {
	urls := make(map[Code]string, len(entries))
	for c := range entries {
		urls[c] = docsURL(c)
	}
	return urls
}()

func docsURL(c Code) string { return DocsBase + "#" + strings.ToLower(string(c)) }

// Describe is a code's entry as `explain CODE` shows it: each labelled part
// as plain text, a remediation's steps graded with the report's risk
// levels, the Detected part apart.
func Describe(c Code) (report.Explanation, bool) {
	entry, ok := entries[c]
	if !ok {
		return report.Explanation{}, false
	}
	e := report.Explanation{Code: string(c), Title: entry.Title, Docs: DocsURL(c)}
	for _, p := range entry.Parts {
		if p.Label == "Detected" {
			e.Detected = plain(p.Text)
			continue
		}
		part := report.Part{Label: plain(p.Label), Nested: p.Nested}
		for _, s := range p.Steps {
			part.Steps = append(part.Steps, report.Step{ID: s.ID, Action: plain(shown(s.Action)), Risk: plain(shown(s.Risk)), RiskLevel: s.Level})
		}
		for _, paragraph := range strings.Split(p.Text+"\n"+p.After, "\n") {
			if paragraph = strings.TrimSpace(paragraph); paragraph != "" {
				part.Text = append(part.Text, plain(paragraph))
			}
		}
		e.Parts = append(e.Parts, part)
	}
	return e, true
}

// Remedies are the remediation steps a code's entry declares, in order.
func Remedies(c Code) []Step {
	var out []Step
	for _, p := range entries[c].Parts {
		out = append(out, p.Steps...)
	}
	return out
}

// argument is a {name} of a step, which a rule fills in.
var argument = regexp.MustCompile(`\{([a-z]+)\}`)

// shown is a step's text as the docs show it: each argument as its name
// in capitals ("remove FINALIZER by hand").
func shown(s string) string {
	return argument.ReplaceAllStringFunc(s, func(a string) string { return strings.ToUpper(a[1 : len(a)-1]) })
}

// emphasis is Markdown's bold and italics; link is [text](address).
var (
	emphasis = regexp.MustCompile(`\*\*|\*`)
	link     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// plain is the catalogue's Markdown as plain text: no emphasis, a link's
// text without its address; `code` spans are left for the renderer, which
// keeps each on one line.
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
