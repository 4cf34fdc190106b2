package catalog

import (
	"fmt"
	"strings"
)

// Markdown is docs/causes.md: the catalogue rendered, section by section,
// each code's entry a list of its labelled parts.
func Markdown() string {
	catalogue := declaredCauses()
	var b strings.Builder
	b.WriteString("<!-- Generated from pkg/catalog/causes.yaml by `make generate`: edit that file, not this one. -->\n\n")
	b.WriteString("# " + catalogue.Title + "\n\n" + catalogue.Intro + "\n")
	for _, s := range catalogue.Sections {
		b.WriteString("\n## " + s.Title + "\n\n")
		if s.Intro != "" {
			b.WriteString(s.Intro + "\n")
			if len(s.Causes) > 0 {
				b.WriteString("\n")
			}
		}
		for i, e := range s.Causes {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(entryMarkdown(e))
		}
	}
	return b.String()
}

// entryMarkdown is one code's entry: "### Code", then "- **Label:** text"
// per part (indented when nested), a remediation's steps numbered under its
// label, each with its id and its grade in parentheses.
func entryMarkdown(e Entry) string {
	var b strings.Builder
	b.WriteString("### " + string(e.Code) + "\n")
	for _, p := range e.Parts {
		indent := ""
		if p.Nested {
			indent = "  "
		}
		if len(p.Steps) > 0 { // a numbered list under the label: id, action, risk
			b.WriteString(indent + "- **" + p.Label + ":**\n")
			for i, s := range p.Steps {
				fmt.Fprintf(&b, "%s  %d. `%s`: %s (%s)\n", indent, i+1, s.ID, shown(s.Action), shown(s.Risk))
			}
			if p.After != "" {
				b.WriteString("\n" + indent + "  " + strings.ReplaceAll(p.After, "\n", "\n"+indent+"  ") + "\n")
			}
			continue
		}
		lines := strings.Split(p.Text, "\n")
		b.WriteString(indent + "- **" + p.Label + ":** " + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString(indent + "  " + l + "\n")
		}
	}
	return b.String()
}
