package collect

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// Follow sees an object replaced by another of the same name as gone, lists
// again when its resourceVersion has expired, and follows objects of several
// namespaces on their own watches.
func TestFollow(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := func(ns, name, uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetUID(types.UID("uid-" + uid))
		return u
	}
	a, b, c := cm("one", "a", "a"), cm("one", "b", "b"), cm("two", "c", "c")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, a, b, c)
	watchers := map[string]chan *watch.FakeWatcher{"one": make(chan *watch.FakeWatcher, 4), "two": make(chan *watch.FakeWatcher, 4)}
	dyn.PrependWatchReactor("configmaps", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		watchers[action.GetNamespace()] <- w
		return true, w, nil
	})
	col := &Collector{Clients: &kube.Clients{Dynamic: dyn}, Now: time.Now}
	out := make(chan Change)
	done := make(chan struct{})
	go func() {
		defer close(done)
		col.Follow(context.Background(), []Found{{GVR: gvr, Object: a.DeepCopy()}, {GVR: gvr, Object: b.DeepCopy()}, {GVR: gvr, Object: c.DeepCopy()}}, func(context.Context, time.Duration) error { return nil }, out)
	}()
	gone := map[string]bool{}
	collect := func(n int) {
		for range n {
			ch := <-out
			if ch.Err != nil {
				t.Fatalf("unexpected error %v", ch.Err)
			}
			if ch.Gone {
				gone[ch.Found.Object.GetName()] = true
			}
		}
	}
	collect(3) // the first lists: each object's current state
	one, two := <-watchers["one"], <-watchers["two"]

	// Namespace "one": its resourceVersion expired; the list that follows
	// still has both; then "a" is replaced by a new object of its name.
	go one.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	collect(2)
	one = <-watchers["one"]
	go one.Add(cm("one", "a", "a2"))
	collect(1)
	if !gone["a"] || gone["b"] {
		t.Fatalf("gone %v, want a (replaced) only", gone)
	}
	go one.Delete(b)
	go two.Delete(c)
	collect(2)
	<-done // every group is done once its objects are gone
	if !gone["b"] || !gone["c"] {
		t.Errorf("gone %v", gone)
	}
}
