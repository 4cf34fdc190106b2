package catalog

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every code has a heading of its own in docs/causes.md (or shares one, "### A, B").
func TestEveryCodeIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/causes.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(string(data), -1) {
		for _, c := range strings.Split(m[1], ",") {
			documented[strings.TrimSpace(c)] = true
		}
	}
	for _, c := range Codes() {
		if !documented[string(c)] {
			t.Errorf("code %s has no entry in docs/causes.md", c)
		}
	}
	for d := range documented {
		if _, ok := Lookup(Code(d)); !ok {
			t.Errorf("docs/causes.md documents %q, which is not in the catalogue", d)
		}
	}
}

func TestFinalizerCatalogue(t *testing.T) {
	for _, f := range Finalizers() {
		if _, ok := Lookup(f.Code); !ok || f.Owner == "" || f.HoldsWhile == "" {
			t.Errorf("row %+v: unknown code or empty field", f)
		}
	}
	if f, known := LookupFinalizer("external-attacher/ebs.csi.aws.com"); !known || f.Code != VolumeDetachFailed || f.Owner != "CSI external-attacher ebs.csi.aws.com" {
		t.Errorf("prefix row: %+v", f)
	}
	if f, known := LookupFinalizer("example.com/cleanup"); known || f.Code != FinalizerPending || !ThirdPartyFinalizer("example.com/cleanup") {
		t.Errorf("third-party: %+v", f)
	}
}

func TestFinalizerDocIsCurrent(t *testing.T) {
	data, err := os.ReadFile("../../docs/finalizers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Finalizers() {
		name := f.Name
		if strings.HasSuffix(name, "/") {
			name += "<driver>"
		}
		row := fmt.Sprintf("| `%s` | %s | %s | `%s` |", name, f.Owner, f.HoldsWhile, f.Code)
		if !strings.Contains(string(data), row) {
			t.Errorf("docs/finalizers.md lacks the row\n%s", row)
		}
	}
}

// Every code is explained from the embedded catalogue, entry by entry.
func TestExplain(t *testing.T) {
	for _, c := range Codes() {
		text, ok := Explain(c)
		if !ok || !strings.Contains(text, "**Signal:**") && !strings.Contains(text, "**Remediation") {
			t.Errorf("%s: %v %q", c, ok, text)
		}
		if strings.Contains(text, "\n### ") {
			t.Errorf("%s runs into the next entry: %q", c, text)
		}
	}
	if text, _ := Explain(NodeUnreachable); !strings.HasPrefix(text, "- **Signal:** the node's Lease") || !strings.Contains(text, "out-of-service") {
		t.Errorf("NodeUnreachable: %q", text)
	}
	if _, ok := Explain("NoSuchCode"); ok {
		t.Error("an unknown code is explained")
	}
	if got := DocsURL(NodeUnreachable); got != "https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md#nodeunreachable" {
		t.Errorf("DocsURL = %q", got)
	}
}
