package collect

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A chain of owners each waiting in foreground deletion on the next is
// followed to its end, bounded in depth; an ownership cycle ends the walk.
func TestAttachDependentsIsBoundedAndCycleSafe(t *testing.T) {
	m := &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Scope: meta.RESTScopeNamespace}
	now := metav1.Now()
	object := func(i int, owner int) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: "shop", UID: types.UID(fmt.Sprint(i)),
			DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerDeleteDependents}}}
		o.OwnerReferences = []metav1.OwnerReference{{Kind: "ConfigMap", Name: fmt.Sprint("cm-", owner), UID: types.UID(fmt.Sprint(owner))}}
		return o
	}
	depthOf := func(children map[types.UID][]owned) int {
		root := metadataTarget(object(0, -1), m)
		c := &Collector{}
		c.attachDependents(context.Background(), root, children, true, 0, map[types.UID]bool{"0": true})
		depth := 0
		for cur := root; len(cur.Dependents) > 0; cur = cur.Dependents[0] {
			depth++
		}
		if err := (&observed.Snapshot{Targets: []*observed.Target{root}}).CheckGraph(100); err != nil {
			t.Errorf("the chain the collector built: %v", err)
		}
		return depth
	}

	long := map[types.UID][]owned{}
	for i := 1; i <= 3*observed.MaxDepth; i++ {
		long[types.UID(fmt.Sprint(i-1))] = []owned{{object(i, i-1), m}}
	}
	if got := depthOf(long); got != observed.MaxDepth {
		t.Errorf("a chain of %d owners: followed %d deep, want %d", 3*observed.MaxDepth, got, observed.MaxDepth)
	}

	// 0 -> 1 -> 2 -> 0: object 0 appears once more as 2's dependent, and the walk stops.
	cycle := map[types.UID][]owned{"0": {{object(1, 0), m}}, "1": {{object(2, 1), m}}, "2": {{object(0, 2), m}}}
	if got := depthOf(cycle); got != 3 {
		t.Errorf("a cycle of 3: followed %d deep, want 3", got)
	}
}
