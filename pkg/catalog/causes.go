package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Document is the cause catalogue as declared in causes.yaml: the codes,
// each with its documentation, in the sections docs/causes.md shows them.
type Document struct {
	Title    string    `json:"title"`
	Intro    string    `json:"intro"`
	Sections []Section `json:"sections"`
}

// Section is a heading of the docs: its prose, then its codes' entries.
type Section struct {
	Title  string  `json:"title"`
	Intro  string  `json:"intro,omitempty"`
	Causes []Entry `json:"causes,omitempty"`
}

// Entry describes a code.
type Entry struct {
	Code Code `json:"code"`
	// Title is a few words for tables and docs.
	Title string `json:"title"`
	// Depth orders coexisting causes of equal severity: a lower depth is
	// closer to the root cause (a dead node explains running containers).
	Depth int `json:"depth"`
	// Identity is what a cause of this code must name beside the code (in
	// its report.About): objects held the same way are grouped by it.
	Identity Identity `json:"identity,omitempty"`
	// Parts are the entry's labelled paragraphs (Signal, Evidence, Why it
	// blocks, Remediation, Detected...), as Markdown.
	Parts []Part `json:"parts"`
}

// Part is a labelled paragraph of an entry, or one nested under the part
// before it. A remediation part has steps, safest first.
type Part struct {
	Label  string `json:"label"`
	Nested bool   `json:"nested,omitempty"`
	// Text is Markdown: its first line follows the label, each further
	// line is a paragraph under it.
	Text  string `json:"text,omitempty"`
	Steps []Step `json:"steps,omitempty"`
	// After is what follows the steps.
	After string `json:"after,omitempty"`
}

// Step is a remediation step: what to do and what doing it risks, as `why`
// prints them. A {name} in either is an argument the rule fills in (the
// finalizer, the pod); the docs show it as NAME.
type Step struct {
	// ID names the step within its code, for good.
	ID     string `json:"id"`
	Action string `json:"action"`
	// Level grades the step as `why` grades it.
	Level report.RiskLevel `json:"level"`
	// Risk is the step's grade and what it leaves behind or skips, as
	// `why` prints it after "risk:": it starts with Level.
	Risk string `json:"risk"`
}

// StepOf is the step id of code's entry.
func StepOf(c Code, id string) (Step, bool) {
	for _, p := range entries[c].Parts {
		for _, s := range p.Steps {
			if s.ID == id {
				return s, true
			}
		}
	}
	return Step{}, false
}

//go:embed causes.yaml
var causesYAML []byte

// entries are the codes of catalogue (data.go: causes.yaml as Go values).
var entries = byCode(catalogue)

func byCode(doc Document) map[Code]Entry {
	m := map[Code]Entry{}
	for _, s := range doc.Sections {
		for _, e := range s.Causes {
			m[e.Code] = e
		}
	}
	return m
}

// declaredCauses is causes.yaml parsed and checked, for what is generated
// from it: a mistake in it fails the generator and the package's tests
// (TestGeneratedFilesAreCurrent), so a binary never ships one.
func declaredCauses() Document {
	doc, err := load(causesYAML)
	if err != nil {
		panic("pkg/catalog/causes.yaml: " + err.Error())
	}
	return doc
}

// load parses a catalogue and checks what the code relies on: each code
// once, with a title, a depth and a graded remediation whose step IDs are
// its own.
func load(data []byte) (Document, error) {
	var doc Document
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return doc, err
	}
	seen := map[Code]bool{}
	for _, s := range doc.Sections {
		for _, e := range s.Causes {
			if e.Code == "" || seen[e.Code] || e.Title == "" || e.Depth <= 0 {
				return doc, fmt.Errorf("code %q: twice, or without a title or depth", e.Code)
			}
			seen[e.Code] = true
			ids := map[string]bool{}
			for _, p := range e.Parts {
				for _, st := range p.Steps {
					if st.ID == "" || ids[st.ID] || st.Action == "" || st.Level.Weight() == 0 || !strings.HasPrefix(st.Risk, string(st.Level)) {
						return doc, fmt.Errorf("code %s: step %+v: no or a repeated id, no action, no risk level, or a risk that does not start with it", e.Code, st)
					}
					ids[st.ID] = true
				}
			}
		}
	}
	return doc, nil
}

// identityNames are the names causes.yaml gives an Identity's fields.
var identityNames = []struct {
	id   Identity
	name string
}{{ByNode, "node"}, {ByFinalizer, "finalizers"}, {ByObject, "object"}, {ByWebhook, "webhook"}}

// UnmarshalJSON reads an identity as the names of its fields.
func (i *Identity) UnmarshalJSON(data []byte) error {
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	*i = ByCodeAlone
next:
	for _, n := range names {
		for _, f := range identityNames {
			if f.name == n {
				*i |= f.id
				continue next
			}
		}
		return fmt.Errorf("identity %q: not one of node, finalizers, object, webhook", n)
	}
	return nil
}
