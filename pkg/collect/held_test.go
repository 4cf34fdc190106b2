package collect

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// The objects a namespace's scan finds held by a finalizer (metadata only)
// are read in full, so that their status (an operator's words) is read as a
// named target's is: once each, at most heldReads of them; never a
// ConfigMap's data, nor a pod (read apart) or a target of the run again.
func TestHeldObjectsAreReadInFull(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "rds.services.k8s.aws", Version: "v1alpha1", Resource: "dbinstances"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	now := metav1.Now()
	object := func(gvr schema.GroupVersionResource, kind, name string, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		u.SetNamespace("db")
		u.SetName(name)
		u.SetUID(types.UID(name))
		u.SetDeletionTimestamp(&now)
		u.SetFinalizers([]string{"finalizers.rds.services.k8s.aws/DBInstance"})
		if status != nil {
			u.Object["status"] = status
		}
		if kind == "ConfigMap" {
			u.Object["data"] = map[string]any{"password": "s3cret"}
		}
		return u
	}
	words := map[string]any{"conditions": []any{map[string]any{"type": "ACK.Terminal", "status": "True", "message": "Cannot delete protected DB Instance"}}}
	var full []runtime.Object
	held := func(gvr schema.GroupVersionResource, kind, name string) *observed.Target {
		u := object(gvr, kind, name, words)
		full = append(full, u)
		meta := object(gvr, kind, name, nil) // as the scan has it
		delete(meta.Object, "data")
		return &observed.Target{Ref: Found{GVR: gvr, Object: meta}.Ref(), Object: meta}
	}
	contents := &observed.Contents{Resources: map[schema.GroupResource]schema.GroupVersionResource{gvr.GroupResource(): gvr, cms.GroupResource(): cms},
		Held: map[string][]*observed.Target{}}
	f := "finalizers.rds.services.k8s.aws/DBInstance"
	for i := range heldReads + 5 {
		contents.Held[f] = append(contents.Held[f], held(gvr, "DBInstance", fmt.Sprintf("db-%02d", i)))
	}
	settings := held(cms, "ConfigMap", "settings")
	named := held(gvr, "DBInstance", "named")
	contents.Held["other.example.com/keep"] = []*observed.Target{contents.Held[f][0], settings, named}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "DBInstanceList", cms: "ConfigMapList"}, full...)
	c := &Collector{Clients: &kube.Clients{Dynamic: dyn}, Now: time.Now}
	c.readHeld(context.Background(), contents, map[types.UID]*observed.Target{"named": named})

	read := 0
	for _, h := range contents.Held[f] {
		if _, ok := h.Object.Object["status"]; ok {
			read++
		}
	}
	if read != heldReads {
		t.Errorf("%d held objects read in full, want %d (the bound)", read, heldReads)
	}
	if _, ok := contents.Held[f][0].Object.Object["status"]; !ok {
		t.Errorf("the first held object was not read in full: %v %v", contents.Held[f][0].Object.Object, contents.Held[f][0].Skipped)
	}
	if _, ok := settings.Object.Object["data"]; ok {
		t.Errorf("a ConfigMap's data was read: %v", settings.Object.Object)
	}
	if _, ok := named.Object.Object["status"]; ok {
		t.Errorf("a target of the run was read again")
	}
	gets := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	if gets != heldReads {
		t.Errorf("%d GETs, want %d: each held object once", gets, heldReads)
	}
}

// Many objects of one type to read in full for their status (an operator
// wrote them all since their deletion) that are a good part of that type's
// objects as the run's scan counted them: one list of the type, each object
// given its own; a few among many: a GET each.
func TestManyObjectsOfATypeAreListedInFull(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "rds.services.k8s.aws", Version: "v1alpha1", Resource: "dbinstances"}
	deleted := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	written := deleted.Add(time.Minute).UTC().Format(time.RFC3339)
	object := func(name string, full bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind("DBInstance")
		u.SetNamespace("db")
		u.SetName(name)
		u.SetUID(types.UID(name))
		u.SetDeletionTimestamp(&deleted)
		u.SetFinalizers([]string{"finalizers.rds.services.k8s.aws/DBInstance"})
		u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "ack-rds-controller", "operation": "Update", "time": written}}
		if full {
			u.Object["status"] = map[string]any{"dbInstanceStatus": "deleting"}
		}
		return u
	}
	n := batchThreshold + 4
	for _, tc := range []struct {
		counted, wantActions int
	}{{n, 1}, {4*n + 1, n}} {
		var full []runtime.Object
		var targets []*observed.Target
		var gvrs []schema.GroupVersionResource
		for i := range n {
			name := fmt.Sprintf("db-%02d", i)
			full = append(full, object(name, true))
			meta := object(name, false)
			targets, gvrs = append(targets, &observed.Target{Ref: Found{GVR: gvr, Object: meta}.Ref(), Object: meta}), append(gvrs, gvr)
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "DBInstanceList"}, full...)
		c := &Collector{Clients: &kube.Clients{Dynamic: dyn}, Now: time.Now}
		c.record = &scanRecord{scope: Scope{AllNamespaces: true}, attempted: map[schema.GroupResource]schema.GroupVersionResource{gvr.GroupResource(): gvr},
			counts: map[string]map[schema.GroupResource]int{"db": {gvr.GroupResource(): tc.counted}}}
		c.readObjects(context.Background(), targets, gvrs)
		if got := len(dyn.Actions()); got != tc.wantActions {
			t.Errorf("%d of %d counted: %d requests, want %d", n, tc.counted, got, tc.wantActions)
		}
		for _, tg := range targets {
			if _, ok := tg.Object.Object["status"]; !ok {
				t.Errorf("%d of %d counted: %s not read in full", n, tc.counted, tg.Ref.Name)
			}
		}
	}
}
