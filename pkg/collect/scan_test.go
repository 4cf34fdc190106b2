package collect

import (
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What a scan found is in one order, by namespace, name and type, whatever
// order its lists ended in.
func TestScanFoundInOneOrder(t *testing.T) {
	found := func(namespace, name string, gvr schema.GroupVersionResource) Found {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace(namespace)
		u.SetName(name)
		return Found{GVR: gvr, Object: u}
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pod := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	thingV1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	thingV2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "things"}
	want := []Found{
		found("", "a", thingV1),
		found("", "b", cm),
		found("a", "web", cm),
		found("a", "web", pod),
		found("a", "web", thingV1),
		found("a", "web", thingV2),
		found("a", "x", pod),
		found("b", "a", pod),
	}
	name := func(f Found) string { return f.Object.GetNamespace() + "/" + f.Object.GetName() + " " + f.GVR.String() }
	for range 20 {
		got := slices.Clone(want)
		rand.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		sortByNamespaceAndName(got)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("at %d: %s, want %s", i, name(got[i]), name(want[i]))
			}
		}
	}
}
