package collect

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// The field a referrer names the held object by: a path through maps, the
// items of lists, and a kind beside the name when the reference says one.
func TestNamesFollowsTheReferencePath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"gatewayClassName": "shared",
		"nodeClassRef":     map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
		"volumes":          []any{map[string]any{"name": "a"}, map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "data"}}},
		"replicas":         int64(3),
		"admissionChecks":  []any{"prov", "multikueue"},
	}}
	for _, tc := range []struct {
		ref  catalog.Reference
		name string
		want bool
	}{
		{catalog.Reference{Path: "spec.gatewayClassName"}, "shared", true},
		{catalog.Reference{Path: "spec.gatewayClassName"}, "other", false},
		{catalog.Reference{Path: "spec.nodeClassRef.name", Kind: "EC2NodeClass"}, "default", true},
		{catalog.Reference{Path: "spec.nodeClassRef.name", Kind: "AKSNodeClass"}, "default", false},
		{catalog.Reference{Path: "spec.volumes[].persistentVolumeClaim.claimName"}, "data", true},
		{catalog.Reference{Path: "spec.volumes[].persistentVolumeClaim.claimName"}, "a", false},
		{catalog.Reference{Path: "spec.volumes.persistentVolumeClaim.claimName"}, "data", false}, // a list needs []
		{catalog.Reference{Path: "spec.replicas"}, "3", false},                                   // not a string
		{catalog.Reference{Path: "spec.missing.name"}, "shared", false},
		{catalog.Reference{Path: ""}, "", false},
	} {
		if got := names(obj, tc.ref, tc.name); got != tc.want {
			t.Errorf("%+v names %q: %v, want %v", tc.ref, tc.name, got, tc.want)
		}
	}
}

// A GatewayClass held by its in-use protection: the Gateways of every
// namespace are listed once, in the version the server prefers, and those
// naming it nested; where Gateways are not served, none name it.
func TestReadReferrers(t *testing.T) {
	v1 := schema.GroupVersion{Group: "gateway.networking.k8s.io", Version: "v1"}
	gw := func(ns, name, class string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1.String(), "kind": "Gateway",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name}, "spec": map[string]any{"gatewayClassName": class}}}
	}
	class := &unstructured.Unstructured{}
	class.SetAPIVersion(v1.String())
	class.SetKind("GatewayClass")
	class.SetName("shared")
	class.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	class.SetFinalizers([]string{"gateway-exists-finalizer.gateway.networking.k8s.io"})
	for _, served := range []bool{true, false} {
		mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{v1})
		if served {
			mapper.AddSpecific(v1.WithKind("Gateway"), v1.WithResource("gateways"), v1.WithResource("gateway"), meta.RESTScopeNamespace)
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{v1.WithResource("gateways"): "GatewayList"})
		for _, g := range []*unstructured.Unstructured{gw("shop", "web", "shared"), gw("blog", "edge", "shared"), gw("shop", "other", "internal")} {
			// Created through the resource: the tracker would guess "gatewaies" from the kind.
			if _, err := dyn.Resource(v1.WithResource("gateways")).Namespace(g.GetNamespace()).Create(context.Background(), g, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		s := observed.New(time.Now())
		held := &observed.Target{Object: class, Ref: observed.ObjectRef{APIVersion: v1.String(), Kind: "GatewayClass", Resource: "gatewayclasses.gateway.networking.k8s.io", Name: "shared"}}
		s.Targets = []*observed.Target{held}
		c := &Collector{Clients: &kube.Clients{Dynamic: dyn, Mapper: mapper}}
		c.readReferrers(context.Background(), s)
		var got []string
		for _, r := range held.Referrers {
			got = append(got, r.Ref.Namespace+"/"+r.Ref.Name+" "+r.Ref.Resource)
		}
		want := 0
		if served {
			want = 2
		}
		if held.Referrers == nil || len(got) != want || (served && (got[0] != "blog/edge gateways.gateway.networking.k8s.io" || got[1] != "shop/web gateways.gateway.networking.k8s.io")) {
			t.Errorf("served %v: referrers %v (nil: %v)", served, got, held.Referrers == nil)
		}
		if len(c.Skips()) != 0 || len(held.Skipped) != 0 {
			t.Errorf("served %v: skips %v %v", served, c.Skips(), held.Skipped)
		}
	}
}

// A referrer that names the held object in two fields (a claim's spec and
// status both name its VolumeAttributesClass) is one blocker.
func TestReferrersAreCountedOnce(t *testing.T) {
	core := schema.GroupVersion{Version: "v1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{core})
	mapper.AddSpecific(core.WithKind("PersistentVolumeClaim"), core.WithResource("persistentvolumeclaims"), core.WithResource("persistentvolumeclaim"), meta.RESTScopeNamespace)
	mapper.AddSpecific(core.WithKind("PersistentVolume"), core.WithResource("persistentvolumes"), core.WithResource("persistentvolume"), meta.RESTScopeRoot)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		core.WithResource("persistentvolumeclaims"): "PersistentVolumeClaimList", core.WithResource("persistentvolumes"): "PersistentVolumeList"})
	claim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": "data", "namespace": "shop", "uid": "uid-data"},
		"spec":     map[string]any{"volumeAttributesClassName": "gold"},
		"status":   map[string]any{"currentVolumeAttributesClassName": "gold"}}}
	if _, err := dyn.Resource(core.WithResource("persistentvolumeclaims")).Namespace("shop").Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vac := &unstructured.Unstructured{}
	vac.SetAPIVersion("storage.k8s.io/v1")
	vac.SetKind("VolumeAttributesClass")
	vac.SetName("gold")
	vac.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	vac.SetFinalizers([]string{"kubernetes.io/vac-protection"})
	held := &observed.Target{Object: vac, Ref: observed.ObjectRef{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttributesClass", Resource: "volumeattributesclasses.storage.k8s.io", Name: "gold"}}
	s := observed.New(time.Now())
	s.Targets = []*observed.Target{held}
	c := &Collector{Clients: &kube.Clients{Dynamic: dyn, Mapper: mapper}}
	c.readReferrers(context.Background(), s)
	if len(held.Referrers) != 1 || held.Referrers[0].Ref.Name != "data" || held.Referrers[0].Ref.Resource != "persistentvolumeclaims" {
		t.Errorf("referrers %+v", held.Referrers)
	}
}
