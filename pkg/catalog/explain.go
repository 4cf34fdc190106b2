package catalog

import (
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/docs"
)

// DocsBase is where the cause catalogue is published.
const DocsBase = "https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md"

// DocsURL is the address of a code's entry in the published catalogue.
func DocsURL(c Code) string { return DocsBase + "#" + strings.ToLower(string(c)) }

// Explain returns a code's entry in docs/causes.md (embedded in the binary):
// its signal, evidence, why it blocks, remediation and risks.
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
