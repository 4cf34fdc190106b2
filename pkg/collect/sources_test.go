package collect

import (
	"slices"
	"strings"
	"testing"
)

// The registered sources form stages: every name they wait on exists, none
// waits on itself through others, and every source comes after the ones it
// names (the sources reading about every target after all that nest targets).
func TestSourcesFormStages(t *testing.T) {
	ordered, err := stages(sources)
	if err != nil {
		t.Fatal(err)
	}
	stageOf := map[string]int{}
	var names [][]string
	for i, stage := range ordered {
		var ns []string
		for _, s := range stage {
			stageOf[s.name] = i
			ns = append(ns, s.name)
		}
		names = append(names, ns)
	}
	t.Logf("stages: %v", names)
	for _, s := range sources {
		for _, a := range s.after {
			if stageOf[a] >= stageOf[s.name] {
				t.Errorf("%s runs in stage %d, not after %s (stage %d)", s.name, stageOf[s.name], a, stageOf[a])
			}
		}
	}
	for _, n := range nesting {
		if _, ok := stageOf[n]; !ok {
			t.Errorf("nesting source %q is not registered", n)
		}
	}
	// Each stage is a round trip more. The fifth holds only what waits for
	// the workloads: a preflight's scan of the cluster (only when a deletion
	// forecast deletes a live one) and the node agents' pods (only for an
	// object that names a node and whose controller looks like a
	// DaemonSet); for any other run they read nothing.
	last := ordered[len(ordered)-1]
	if len(ordered) > 5 || slices.ContainsFunc(last, func(s source) bool { return !slices.Equal(s.after, []string{"controllers"}) }) {
		t.Errorf("%d stages: each is a round trip more", len(ordered))
	}
}

// A source that waits on an unknown one, or sources that wait on each other,
// are refused.
func TestStagesRefuseBrokenOrders(t *testing.T) {
	for _, tc := range []struct {
		sources []source
		want    string
	}{
		{[]source{{name: "a", after: []string{"b"}}}, "not registered"},
		{[]source{{name: "a", after: []string{"b"}}, {name: "b", after: []string{"a"}}}, "wait on one another"},
		{[]source{{name: "a"}, {name: "a"}}, "registered twice"},
	} {
		if _, err := stages(tc.sources); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.sources, err, tc.want)
		}
	}
	ok, err := stages([]source{{name: "c", after: []string{"a", "b"}}, {name: "b", after: []string{"a"}}, {name: "a"}})
	if err != nil || len(ok) != 3 || !slices.Equal([]string{ok[0][0].name, ok[1][0].name, ok[2][0].name}, []string{"a", "b", "c"}) {
		t.Errorf("a chain: %v, %v", ok, err)
	}
}

// Every source says what it reads (docs/rbac.md's table is generated from
// it), and says it once: no row twice in the table.
func TestEverySourceDeclaresItsReads(t *testing.T) {
	seen := map[Permission]string{}
	for _, s := range sources {
		if len(s.permissions) == 0 {
			t.Errorf("source %q declares no permissions", s.name)
		}
		for _, p := range s.permissions {
			if p.Read == "" || p.UsedFor == "" || p.Without == "" {
				t.Errorf("source %q: a permission without its read, use or absence: %+v", s.name, p)
			}
			if other, ok := seen[p]; ok {
				t.Errorf("sources %q and %q declare the same permission %q", other, s.name, p.Read)
			}
			seen[p] = s.name
		}
	}
	if n := len(Permissions()); n < len(seen)+len(targetPermissions) {
		t.Errorf("the table has %d rows, fewer than the %d declared", n, len(seen)+len(targetPermissions))
	}
}
