package collect

import (
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// TestHeldExamplesWhateverTheOrder: the few objects kept of what a finalizer
// holds (diagnosed, and shown under the namespace) and of what it will hold
// are the first by namespace, name and type, whatever order the concurrent
// lists came in: why ns/NAME said o000030 of one type on one run and
// o000000 of another on the next.
func TestHeldExamplesWhateverTheOrder(t *testing.T) {
	type object struct {
		gvr  schema.GroupVersionResource
		name string
	}
	things := func(n string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "g.example.com", Version: "v1", Resource: n}
	}
	objects := []object{
		{things("things030"), "o000030"}, {things("things000"), "o000000"}, {things("things001"), "o000001"},
		{things("zebras"), "o000000"}, {things("things002"), "o000002"}, {things("aardvarks"), "o000001"},
	}
	want := []string{"things000.g.example.com/o000000", "zebras.g.example.com/o000000", "aardvarks.g.example.com/o000001"}
	rnd := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		order := slices.Clone(objects)
		rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		contents := newContents(nil)
		for _, o := range order {
			ref := report.ObjectRef{Namespace: "held", Name: o.name, Resource: QualifiedResource(o.gvr)}
			addTerminating(contents, o.gvr, ref.Namespace, ref.Name, []string{"example.com/keep"}, func() *observed.Target { return &observed.Target{Ref: ref} })
			if amongExamples(contents.Waiting["example.com/keep"], ref, o.gvr, itself) {
				contents.Waiting["example.com/keep"] = keepExamples(contents.Waiting["example.com/keep"], ref, itself)
			}
		}
		var held, waiting []string
		for _, t := range contents.Held["example.com/keep"] {
			held = append(held, t.Ref.Resource+"/"+t.Ref.Name)
		}
		for _, r := range contents.Waiting["example.com/keep"] {
			waiting = append(waiting, r.Resource+"/"+r.Name)
		}
		if !slices.Equal(held, want) || !slices.Equal(waiting, want) {
			t.Fatalf("round %d, offered %v: kept held %v, waiting %v; want %v", round, order, held, waiting, want)
		}
		if contents.Finalizers["example.com/keep"] != len(objects) {
			t.Fatalf("counted %d held objects, want %d", contents.Finalizers["example.com/keep"], len(objects))
		}
	}
}
