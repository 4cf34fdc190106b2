package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// GroupBy values: what list can fold its rows by.
const (
	ByCause     = "cause"
	ByFinalizer = "finalizer"
	ByNamespace = "namespace"
)

// GroupKinds are the accepted --group-by values.
var GroupKinds = []string{ByCause, ByFinalizer, ByNamespace}

// footerGroups is how many causes or finalizers a footer line names.
const footerGroups = 5

// groupKeys is what an item is grouped under: its top cause, each of its
// finalizers, or its namespace.
func groupKeys(it Item, by string) []string {
	switch by {
	case ByFinalizer:
		if len(it.Finalizers) == 0 {
			return []string{"<none>"}
		}
		return it.Finalizers
	case ByNamespace:
		return []string{orNone(it.Object.Namespace)}
	}
	return []string{topCause(it).Code}
}

// group is the objects under one key: how many, and the first few (a
// group of thousands is printed as a count and examples).
type group struct {
	key      string
	count    int
	first    []Item
	stuck    int
	severity Severity
}

// groupItems folds the items by key, the largest group first.
func groupItems(items []Item, by string) []*group {
	byKey := map[string]*group{}
	var out []*group
	for _, it := range items {
		for _, k := range groupKeys(it, by) {
			g := byKey[k]
			if g == nil {
				g = &group{key: k}
				byKey[k] = g
				out = append(out, g)
			}
			g.count++
			if len(g.first) < examplesShown {
				g.first = append(g.first, it)
			}
			if it.Stuck {
				g.stuck++
			}
			if it.Severity.Weight() > g.severity.Weight() {
				g.severity = it.Severity
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].count != out[j].count {
			return out[i].count > out[j].count
		}
		if wi, wj := out[i].severity.Weight(), out[j].severity.Weight(); wi != wj {
			return wi > wj // as many, the worse first
		}
		return out[i].key < out[j].key
	})
	return out
}

// writeGroups prints one row per group: how many objects, how many stuck,
// the worst severity and a few examples.
func writeGroups(w io.Writer, r Report, st Style) error {
	rows := [][]string{}
	for _, g := range groupItems(r.Items, st.GroupBy) {
		rows = append(rows, cells(g.key, g.count, g.stuck, st.severity(g.severity, string(g.severity)), examples(g.first, g.count, st.GroupBy != ByNamespace)))
	}
	header := []string{strings.ToUpper(st.GroupBy), "OBJECTS", "STUCK", "SEVERITY", "EXAMPLES"}
	fitColumns(header, rows, st.fit(), 0, 4) // the group's key, its examples
	err := writeListTable(w, header, rows, st)
	return writeSkipped(w, r.Skipped, st, err)
}

// writeFooter sums a list up: objects by severity, by top cause and by
// finalizer, most frequent first (printed under a list of two or more).
func writeFooter(w io.Writer, items []Item, st Style) error {
	if len(items) < 2 {
		return nil
	}
	p := newPrinter(w, st)
	stuck, bySeverity := 0, map[Severity]int{}
	for _, it := range items {
		bySeverity[it.Severity]++
		if it.Stuck {
			stuck++
		}
	}
	var severities []string
	for _, sev := range []Severity{Critical, Warning, Info} {
		if n := bySeverity[sev]; n > 0 {
			severities = append(severities, fmt.Sprintf("%d %s", n, sev))
		}
	}
	p.linef("", "", "\n%s (%s), %d stuck", Count(len(items), "object"), strings.Join(severities, ", "), stuck)
	for _, by := range []string{ByCause, ByFinalizer} {
		var counts []string
		groups := slices.DeleteFunc(groupItems(items, by), func(g *group) bool { return g.key == "<none>" })
		for _, g := range groups[:min(len(groups), footerGroups)] {
			counts = append(counts, fmt.Sprintf("%s %d", Safe(g.key), g.count))
		}
		if more := len(groups) - footerGroups; more > 0 {
			counts = append(counts, fmt.Sprintf("%d more %s", more, hint("(--group-by "+by+")")))
		}
		if len(counts) > 0 {
			p.linef("", "by "+by+": ", "%s", painted(strings.Join(counts, ", ")))
		}
	}
	return p.err
}

// ValidGroupBy says whether --group-by names a known grouping.
func ValidGroupBy(by string) bool { return by == "" || slices.Contains(GroupKinds, by) }
