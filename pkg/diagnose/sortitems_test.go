package diagnose

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// SortItems orders as a stable sort of the items by severity (most first),
// overdue (longest first), namespace, resource and name; items equal in all
// of these keep their order.
func TestSortItemsOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[rnd.IntN(len(xs))] }
	for round := range 50 {
		items := make([]report.Item, rnd.IntN(200))
		for i := range items {
			items[i] = report.Item{
				Severity:        report.Severity(pick(string(report.Critical), string(report.Warning), string(report.Info), "")),
				OverdueSeconds:  int64(rnd.IntN(3)),
				Object:          report.ObjectRef{Namespace: pick("", "a", "b"), Resource: pick("pods", "things.example.com"), Name: pick("x", "y"), UID: string(rune('A' + i%50))},
				ResourceVersion: string(rune('0' + i%10)),
			}
		}
		want := slices.Clone(items)
		sort.SliceStable(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if wa, wb := a.Severity.Weight(), b.Severity.Weight(); wa != wb {
				return wa > wb
			}
			if a.OverdueSeconds != b.OverdueSeconds {
				return a.OverdueSeconds > b.OverdueSeconds
			}
			if a.Object.Namespace != b.Object.Namespace {
				return a.Object.Namespace < b.Object.Namespace
			}
			if a.Object.Resource != b.Object.Resource {
				return a.Object.Resource < b.Object.Resource
			}
			return a.Object.Name < b.Object.Name
		})
		SortItems(items)
		for i := range want {
			if items[i].Object != want[i].Object || items[i].ResourceVersion != want[i].ResourceVersion || items[i].Severity != want[i].Severity || items[i].OverdueSeconds != want[i].OverdueSeconds {
				t.Fatalf("round %d, at %d: %+v, want %+v", round, i, items[i], want[i])
			}
		}
	}
}
