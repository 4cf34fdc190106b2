package collect

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// The scan keeps the dependents of the objects that may need them, whatever
// order its lists end in, and nothing else once each owner's type is listed:
// a dependent seen before its owner waits, pending, until the owner's type
// has been listed.
func TestScanRecordKeepsOnlyDependentsOfPossibleOwners(t *testing.T) {
	mapping := func(group, resource, kind string) *meta.RESTMapping {
		return &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource},
			GroupVersionKind: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, Scope: meta.RESTScopeNamespace}
	}
	pods, rs, cms := mapping("", "pods", "Pod"), mapping("apps", "replicasets", "ReplicaSet"), mapping("", "configmaps", "ConfigMap")
	mappings := []*meta.RESTMapping{pods, rs, cms}
	now := metav1.Now()
	object := func(ns, name string, deleted bool, ownerKind, owner string) metav1.PartialObjectMetadata {
		o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}}}
		if deleted {
			o.DeletionTimestamp, o.Finalizers = &now, []string{metav1.FinalizerDeleteDependents}
		}
		if owner != "" {
			apiVersion := "apps/v1"
			if ownerKind == "Node" || ownerKind == "ConfigMap" {
				apiVersion = "v1"
			}
			o.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: ownerKind, Name: owner, UID: types.UID(owner)}}
		}
		return o
	}
	target := func(name string) *observed.Target {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetUID(types.UID(name))
		return &observed.Target{Object: u}
	}
	scope := Scope{AllNamespaces: true}

	c := &Collector{}
	c.recordScanStart(scope, mappings)
	// The pods are listed first: their owners are not known yet.
	c.recordOwners(scope, pods, []metav1.PartialObjectMetadata{
		object("shop", "web-rs-a", true, "ReplicaSet", "web-rs"),
		object("shop", "api-rs-a", false, "ReplicaSet", "api-rs"),
		object("shop", "mirror", false, "Node", "node-1"), // a kind the scan does not list
	})
	o := &c.record.owners
	if n := len(o.pending[schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}]); n != 2 {
		t.Errorf("pods waiting for a ReplicaSet: %d, want 2", n)
	}
	if len(o.pending) != 1 {
		t.Errorf("pending kinds %v, want the ReplicaSets' only (no Node is listed)", o.pending)
	}
	c.recordOwners(scope, rs, []metav1.PartialObjectMetadata{
		object("shop", "api-rs", false, "Deployment", "api"),
		object("shop", "web-rs", true, "Deployment", "web"),
	})
	c.recordListed(scope, rs)
	c.recordListed(scope, pods)
	// A configmap owning another, the dependent on the page before its
	// owner; one owned by a ReplicaSet after their list ended.
	c.recordOwners(scope, cms, []metav1.PartialObjectMetadata{
		object("shop", "a-dependent", false, "ConfigMap", "b-owner"),
		object("shop", "b-owner", true, "", ""),
		object("shop", "late", false, "ReplicaSet", "api-rs"),
		object("other", "stray", false, "ReplicaSet", "web-rs"), // another namespace
	})
	c.recordListed(scope, cms)
	c.recordScan(scope, mappings, nil, nil)

	if len(o.pending) != 0 {
		t.Errorf("pending after the scan: %v", o.pending)
	}
	var kept []string
	for uid, deps := range o.dependents {
		for _, d := range deps {
			kept = append(kept, string(uid)+"<-"+d.item.Name)
			if mf := d.item.ManagedFields; len(mf) != 1 || mf[0].Manager != "kube-controller-manager" || mf[0].FieldsV1 != nil {
				t.Errorf("%s kept with managedFields %+v; want its writers only", d.item.Name, mf)
			}
		}
	}
	slices.Sort(kept)
	if want := []string{"b-owner<-a-dependent", "web-rs<-stray", "web-rs<-web-rs-a"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}

	children, failed, ok := c.recordedDependents("shop", mappings, []*observed.Target{target("web-rs"), target("b-owner")})
	if !ok || len(failed) != 0 {
		t.Fatalf("recordedDependents: ok %t, failed %v", ok, failed)
	}
	if got := children["web-rs"]; len(got) != 1 || got[0].item.Name != "web-rs-a" {
		t.Errorf("web-rs's dependents in shop: %v, want web-rs-a only", got)
	}
	if _, _, ok := c.recordedDependents("shop", mappings, []*observed.Target{target("api-rs")}); ok {
		t.Error("an owner the scan did not keep dependents of was served from the record")
	}

	// A type whose list failed is read again in the owners' scope.
	c.record.failed = []report.Skip{{Check: "list configmaps", Resource: cms.Resource}}
	children, failed, ok = c.recordedDependents("shop", mappings, []*observed.Target{target("b-owner")})
	if !ok || len(failed) != 1 || failed[0] != cms || len(children["b-owner"]) != 0 {
		t.Errorf("with configmaps failed: ok %t, failed %v, children %v", ok, failed, children)
	}

	// A second scan of the run (list pods,rs -A) settles pending owners at
	// its own end: the record no longer serves dependents.
	c.recordScanStart(scope, mappings)
	if _, _, ok := c.recordedDependents("shop", mappings, []*observed.Target{target("web-rs")}); ok {
		t.Error("the record of two scans served dependents")
	}
	// Nor does a record of one namespace serve another, or cluster-scoped owners.
	ns := &Collector{}
	nsScope := Scope{Namespace: "shop"}
	ns.recordScanStart(nsScope, mappings)
	ns.recordScan(nsScope, mappings, nil, nil)
	for _, other := range []string{"other", ""} {
		if _, _, ok := ns.recordedDependents(other, mappings, nil); ok {
			t.Errorf("a scan of namespace shop served the dependents of owners in %q", other)
		}
	}
}
