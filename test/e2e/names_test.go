package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Two CRDs of different groups define the same kind: every row, header and
// grouped block names each object so that it can be told apart and pasted.
func TestSameKindInTwoGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "twins")
	groups := []string{"a.twins.e2e.example.com", "b.twins.e2e.example.com"}
	for _, g := range groups {
		if err := env.CRD(ctx, g, "Thing", "things"); err != nil {
			t.Fatal(err)
		}
		if err := env.CustomResource(ctx, g, "Thing", "things", ns, "obj-1", "twins.e2e.example.com/hold"); err != nil {
			t.Fatal(err)
		}
		if err := env.DeleteCustomResource(ctx, g, "things", ns, "obj-1"); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, time.Now())

	list := run(t, "list", "-n", ns)
	for _, g := range groups {
		if !regexp.MustCompile(`(?m)^thing\.` + regexp.QuoteMeta(g) + `/obj-1 `).MatchString(list.stdout) {
			t.Errorf("list lacks a row for thing.%s/obj-1:\n%s", g, list.stdout)
		}
		// Pasted as it is printed, it names the object.
		if res := runSuggested(t, "kubectl get thing."+g+"/obj-1 -n "+ns); res.code != 0 {
			t.Errorf("kubectl get thing.%s/obj-1: exit %d %s", g, res.code, res.stderr)
		}
	}
	if strings.Contains(list.stdout, "\nthing/obj-1 ") {
		t.Errorf("an ambiguous row:\n%s", list.stdout)
	}
	wide := run(t, "why", "-n", ns, "-o", "wide")
	concise := run(t, "why", "-n", ns)
	for _, g := range groups {
		if !strings.Contains(wide.stdout, "thing."+g+"/obj-1 -n "+ns+"  ") {
			t.Errorf("-o wide lacks the header of thing.%s/obj-1:\n%s", g, wide.stdout)
		}
	}
	if !strings.Contains(concise.prose(), "2 objects held the same way: thing."+groups[0]+"/obj-1 -n "+ns+", thing."+groups[1]+"/obj-1 -n "+ns) {
		t.Errorf("the two objects held the same way are one block, each named:\n%s", concise.stdout)
	}
}
