package catalog

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// What make generate writes from the catalogues is up to date: docs/causes.md
// (the catalogue rendered), codes.go (a constant for each code, declared once,
// in causes.yaml) and data.go (the catalogues compiled in, which a run reads
// instead of the YAML).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for path, want := range map[string]string{"../../docs/causes.md": Markdown(), "codes.go": GoCodes(), "data.go": GoData()} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != want {
			t.Errorf("%s is not what pkg/catalog/causes.yaml and finalizers.yaml generate: run `make generate`", path)
		}
	}
	for _, c := range Codes() {
		if !strings.Contains(Markdown(), "\n### "+string(c)+"\n") {
			t.Errorf("code %s has no entry in the docs", c)
		}
	}
	if !reflect.DeepEqual(catalogue, declaredCauses()) {
		t.Error("the compiled catalogue differs from causes.yaml")
	}
	if !reflect.DeepEqual(finalizers, declaredFinalizers()) {
		t.Error("the compiled finalizers differ from finalizers.yaml")
	}
}

// A catalogue that breaks what the code relies on is refused, saying why.
func TestCatalogueIsChecked(t *testing.T) {
	entry := func(steps string) string {
		return "title: t\nintro: i\nsections:\n- title: s\n  causes:\n  - code: A\n    title: a\n    depth: 10\n    identity: [node]\n    parts:\n    - label: Remediation\n      steps:\n" + steps
	}
	good := entry("      - {id: look, action: look, level: none, risk: 'none: read-only'}\n      - {id: force, action: 'remove {finalizer}', level: high, risk: 'high: skips it'}\n")
	doc, err := load([]byte(good))
	if err != nil || doc.Sections[0].Causes[0].Identity != ByNode || doc.Sections[0].Causes[0].Parts[0].Steps[1].Risk != "high: skips it" {
		t.Fatalf("a good catalogue: %v %+v", err, doc)
	}
	for name, bad := range map[string]string{
		"a repeated id":       entry("      - {id: look, action: look, level: none}\n      - {id: look, action: again, level: low}\n"),
		"no id":               entry("      - {action: look, level: none}\n"),
		"an unknown level":    entry("      - {id: look, action: look, level: maybe}\n"),
		"an unknown field":    entry("      - {id: look, action: look, level: none, riks: x}\n"),
		"an unknown identity": strings.Replace(good, "[node]", "[nodes]", 1),
		"no depth":            strings.Replace(good, "depth: 10", "depth: 0", 1),
		"a code twice":        good + "  - code: A\n    title: again\n    depth: 5\n    parts: []\n",
	} {
		_, err := load([]byte(bad))
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		t.Logf("%s: %v", name, err)
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
	want := map[string]bool{}
	for _, f := range Finalizers() {
		for _, row := range finalizerDocRows(f) {
			want[row] = true
			if !strings.Contains(string(data), row) {
				t.Errorf("docs/finalizers.md lacks the row\n%s", row)
			}
		}
	}
	// And no row of a finalizer the catalogue no longer has, or has otherwise.
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| `") && !want[line] {
			t.Errorf("docs/finalizers.md has a row the catalogue does not\n%s", line)
		}
	}
}

// prefixPlaceholders name what follows a prefix row's "/" in the doc.
var prefixPlaceholders = map[string]string{"group.ingress.k8s.aws/": "<group>"}

// finalizerDocRows are the doc's rows for a catalogue row: one in the
// table of owners, and one in the table of sources when the row names its
// workloads or its source.
func finalizerDocRows(f Finalizer) []string {
	name := f.Name
	if strings.HasSuffix(name, "/") {
		placeholder, ok := prefixPlaceholders[name]
		if !ok {
			placeholder = "<driver>"
		}
		name += placeholder
	}
	rows := []string{fmt.Sprintf("| `%s` | %s | %s | `%s` | %s |", name, f.Owner, f.HoldsWhile, f.Code, controllerSays(f))}
	if f.Source != "" || len(f.Workloads) > 0 {
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", name, orDash(codeList(f.Workloads)), orDash(f.Source)))
	}
	return rows
}

// controllerSays renders a row's failure events and conditions for the doc:
// "events `A`, `B`; conditions `Synced=False` (`ReconcileError`)".
func controllerSays(f Finalizer) string {
	var parts []string
	if len(f.FailureEvents) > 0 {
		parts = append(parts, "events "+codeList(f.FailureEvents))
	}
	if len(f.FailureConditions) > 0 {
		var cs []string
		for _, c := range f.FailureConditions {
			s := "`" + c.Type + "`"
			if c.Status != "" {
				s = "`" + c.Type + "=" + c.Status + "`"
			}
			if len(c.Reasons) > 0 {
				s += " (" + codeList(c.Reasons) + ")"
			}
			cs = append(cs, s)
		}
		parts = append(parts, "conditions "+strings.Join(cs, ", "))
	}
	return orDash(strings.Join(parts, "; "))
}

func codeList(items []string) string {
	var out []string
	for _, i := range items {
		out = append(out, "`"+i+"`")
	}
	return strings.Join(out, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// The catalogue's rows are well formed: each finalizer once, and never
// shadowed by a prefix row before it; every failure condition names its
// type and, explicitly, its status ("" only for an owner whose conditions
// have no status, as Argo CD's DeletionError); a row that names workloads,
// events or conditions says where they were checked; no text breaks the
// doc's table.
func TestFinalizerRows(t *testing.T) {
	seen := map[string]bool{}
	var prefixes []string
	for _, f := range Finalizers() {
		if seen[f.Name] {
			t.Errorf("finalizer %s is listed twice", f.Name)
		}
		seen[f.Name] = true
		for _, p := range prefixes {
			if strings.HasPrefix(f.Name, p) {
				t.Errorf("finalizer %s is shadowed by the prefix row %s before it", f.Name, p)
			}
		}
		if strings.HasSuffix(f.Name, "/") {
			prefixes = append(prefixes, f.Name)
		}
		if (len(f.Workloads) > 0 || len(f.FailureEvents) > 0 || len(f.FailureConditions) > 0) && f.Source == "" {
			t.Errorf("row %s names workloads, events or conditions but not the source they were checked in", f.Name)
		}
		for _, c := range f.FailureConditions {
			if c.Type == "" || !slices.Contains([]string{"True", "False", "Unknown", ""}, c.Status) {
				t.Errorf("row %s: condition %+v: no type, or a status that is not True, False, Unknown or \"\"", f.Name, c)
			}
		}
		for _, cell := range append([]string{f.Name, f.Owner, f.HoldsWhile, f.Source}, append(f.Workloads, f.FailureEvents...)...) {
			if strings.Contains(cell, "|") || strings.TrimSpace(cell) != cell {
				t.Errorf("row %s: %q breaks the doc's table", f.Name, cell)
			}
		}
	}
	// The status key must be written, even when empty: read the rows raw.
	var raw []map[string]any
	if err := yaml.Unmarshal(finalizersYAML, &raw); err != nil {
		t.Fatal(err)
	}
	for _, row := range raw {
		conds, _ := row["failureConditions"].([]any)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if _, ok := m["type"]; !ok {
				t.Errorf("row %v: a failure condition without type: %v", row["name"], c)
			}
			if _, ok := m["status"]; !ok {
				t.Errorf("row %v: a failure condition without status (write status: \"\" for an owner whose conditions have none): %v", row["name"], c)
			}
		}
	}
}

// A catalogued operator's finalizer is still a third-party one: its owner
// may be gone, and its liveness and events are judged; Kubernetes' own
// finalizers, and those a specific rule explains, are not.
func TestThirdPartyFinalizer(t *testing.T) {
	for f, want := range map[string]bool{
		"example.com/cleanup":                         true,
		"finalizer.managedresource.crossplane.io":     true,
		"resources-finalizer.argocd.argoproj.io":      true,
		"finalizers.fluxcd.io":                        true,
		"networking.gke.io/ingress-finalizer-V2":      true,
		"group.ingress.k8s.aws/web":                   true,
		"orphan":                                      false,
		"batch.kubernetes.io/job-tracking":            false,
		"kubernetes.io/pvc-protection":                false,
		"external-attacher/ebs.csi.aws.com":           false,
		"service.kubernetes.io/load-balancer-cleanup": false,
		"customresourcecleanup.apiextensions.k8s.io":  false,
		"karpenter.sh/termination":                    false, // NodeDrainBlocked's rule explains it
	} {
		if got := ThirdPartyFinalizer(f); got != want {
			t.Errorf("ThirdPartyFinalizer(%q) = %v, want %v", f, got, want)
		}
	}
	for _, f := range Finalizers() {
		if f.Code == FinalizerPending && !strings.HasPrefix(f.Source, "kubernetes/kubernetes ") && !ThirdPartyFinalizer(f.Name) {
			t.Errorf("%s: an add-on's FinalizerPending row is not third-party", f.Name)
		}
	}
	if f, _ := LookupFinalizer("group.ingress.k8s.aws/web"); f.Owner != "AWS Load Balancer Controller, ingress group web" {
		t.Errorf("prefix row owner %q", f.Owner)
	}
}

// Every entry reads as plain text on a terminal: labelled parts with no
// Markdown left but code spans (the renderer drops their backticks), a
// remediation whose every step is graded as `why` grades steps, and the
// version that first detected it.
func TestDescribe(t *testing.T) {
	markup := regexp.MustCompile(`\*|\]\(|^#|^- `)
	for _, c := range Codes() {
		e, ok := Describe(c)
		if !ok || e.Title == "" || e.Detected == "" || e.Docs != DocsURL(c) || len(e.Parts) == 0 {
			t.Errorf("%s: %v %+v", c, ok, e)
			continue
		}
		var steps int
		for _, p := range e.Parts {
			texts := append([]string{p.Label}, p.Text...)
			for _, s := range p.Steps {
				texts = append(texts, s.Action, s.Risk)
				if s.RiskLevel.Weight() == 0 || !strings.HasPrefix(s.Risk, string(s.RiskLevel)) || s.Action == "" {
					t.Errorf("%s: step not graded as (LEVEL: why): %+v", c, s)
				}
			}
			steps += len(p.Steps)
			for _, text := range texts {
				if markup.MatchString(strings.ReplaceAll(text, "`*`", "")) || strings.Count(text, "`")%2 != 0 {
					t.Errorf("%s: Markdown left in %q", c, text)
				}
			}
		}
		if steps == 0 {
			t.Errorf("%s: no remediation step", c)
		}
	}
	if _, ok := Describe("NoSuchCode"); ok {
		t.Error("an unknown code is described")
	}
	if got := DocsURL(NodeUnreachable); got != "https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md#nodeunreachable" {
		t.Errorf("DocsURL = %q", got)
	}

	e, _ := Describe(NodeUnreachable)
	i := slices.IndexFunc(e.Parts, func(p report.Part) bool { return p.Label == "Remediation, safe to risky" })
	if i < 0 || len(e.Parts[i].Steps) != 4 || !strings.HasPrefix(e.Detected, "v0.1") {
		t.Fatalf("NodeUnreachable: %+v", e)
	}
	remediation := e.Parts[i]
	if e.Parts[len(e.Parts)-1].Label != "Remediation, for an object that names the node" {
		t.Fatalf("NodeUnreachable: %+v", e)
	}
	if s := remediation.Steps[1]; s.ID != "restore-node" || !strings.HasPrefix(s.Action, "If the node can be brought back") || s.RiskLevel != "low" || s.Risk != "low: restores what failed; nothing is skipped or forced" {
		t.Errorf("a step graded low: %+v", s)
	}
	e, _ = Describe(VolumeTeardownPending)
	if p := e.Parts[1]; p.Label != "Seen mounted" || !p.Nested || !strings.HasPrefix(p.Text[0], "the volume is still in the node's `status.volumesInUse`") {
		t.Errorf("a nested part: %+v", p)
	}
	e, _ = Describe(FinalizerPending)
	for _, p := range e.Parts {
		if p.Label == "Remediation, otherwise" && (len(p.Steps) != 5 || len(p.Text) != 1 || !strings.HasPrefix(p.Text[0], "The command removes that one finalizer") ||
			p.Steps[3].Action != "Only if that controller is gone for good: remove FINALIZER by hand") {
			t.Errorf("the sentences after the steps: %+v", p)
		}
	}
}
