package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// fitItems are objects whose names and causes make list's table wider than
// a terminal: a CRD, a namespace, a pod in a long namespace.
func fitItems() []Item {
	item := func(apiVersion, kind, ns, name, code string) Item {
		return Item{Object: ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}, Stuck: true, Severity: Critical,
			TerminatingSeconds: 40, Causes: []Cause{{Code: code, Severity: Critical}}}
	}
	return []Item{
		item("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.demo.example.com", "CRDInstancesRemaining"),
		item("v1", "Namespace", "", "legacy-widgets", "FinalizerPending"),
		item("v1", "Pod", "a-rather-long-namespace", "train-0", "ResourceClaimCleanupPending"),
		item("v1", "PersistentVolumeClaim", "shop", "data", "FinalizerPending"),
	}
}

// list's table fits the width it is told: the widest of NAMESPACE, NAME and
// TOP CAUSE is cut first, each cut cell ending with the ellipsis; with no
// width (a pipe) or -o wide, every cell is whole. Long built-in kinds are
// kubectl's short names.
func TestListFitsTheTerminal(t *testing.T) {
	list := func(st Style) string {
		var b bytes.Buffer
		if err := WriteList(&b, Report{Items: fitItems()}, st); err != nil {
			t.Fatal(err)
		}
		table, _, _ := strings.Cut(b.String(), "\n\n") // the footer is prose, wrapped apart
		return table
	}
	for _, width := range []int{60, 80} {
		table := list(Style{Namespaces: true, Fit: width})
		for line := range strings.Lines(table) {
			if w := twwidth.Width(strings.TrimSuffix(line, "\n")); w > width {
				t.Errorf("%d columns: a line of %d: %q", width, w, line)
			}
		}
		if !strings.Contains(table, Ellipsis) || !strings.Contains(table, "critical") || !strings.Contains(table, "TERMINATING") {
			t.Errorf("%d columns:\n%s", width, table)
		}
	}
	if table := list(Style{Namespaces: true, Fit: 80}); !strings.Contains(table, "crd/widgets.dem") || !strings.Contains(table, "pvc/data") || !strings.Contains(table, "namespace/legac") {
		t.Errorf("short kinds, then cut:\n%s", table)
	}
	for _, st := range []Style{{Namespaces: true}, {Namespaces: true, Fit: 60, Wide: true}, {Namespaces: true, Fit: 200}} {
		if table := list(st); strings.Contains(table, Ellipsis) || !strings.Contains(table, "crd/widgets.demo.example.com ") || !strings.Contains(table, "ResourceClaimCleanupPending") {
			t.Errorf("%+v: a cell cut:\n%s", st, table)
		}
	}
	// --group-by: the key and its examples are cut.
	var b bytes.Buffer
	if err := WriteList(&b, Report{Items: fitItems()}, Style{Namespaces: true, Fit: 60, GroupBy: ByCause}); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if w := twwidth.Width(strings.TrimSuffix(line, "\n")); w > 60 {
			t.Errorf("--group-by at 60 columns: a line of %d: %q", w, line)
		}
	}
}

// list -w's later rows keep the table's cut columns when it fits the
// terminal, and take the room they need when it does not.
func TestWatchRowsKeepTheFittedColumns(t *testing.T) {
	long := fitItems()[2]
	long.Object.Name = "train-0-with-a-name-far-longer-than-the-first-table-had"
	for _, fit := range []int{60, 0} {
		var b bytes.Buffer
		wt, err := NewWatchTable(&b, Report{Items: fitItems()}, Style{Namespaces: true, Fit: fit})
		if err != nil {
			t.Fatal(err)
		}
		if err := wt.Changed([]Item{long}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		last := lines[len(lines)-1]
		if cut := strings.Contains(last, Ellipsis); cut != (fit > 0) || (fit > 0 && twwidth.Width(last) > fit) {
			t.Errorf("fit %d: the later row %q", fit, last)
		}
	}
}
