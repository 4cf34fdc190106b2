package collect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// DRA is read in the version of resource.k8s.io the server prefers (v1beta1
// on a 1.32 cluster with DRA on) and converted to the v1 types the rules
// read; where the group is not served, DRA is not applicable, and no claim
// is taken for deleted.
func TestReadDRAInTheServedVersion(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Namespace: "ml", UID: "uid-gpu-0", DeletionTimestamp: &metav1.Time{Time: time.Now()}},
		Spec: corev1.PodSpec{NodeName: "node-1", ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr("gpu-claim")}},
			Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	v1beta1 := schema.GroupVersion{Group: "resource.k8s.io", Version: "v1beta1"}
	claim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
		"metadata": map[string]any{"name": "gpu-claim", "namespace": "ml"},
		"status": map[string]any{
			"allocation":  map[string]any{"devices": map[string]any{"results": []any{map[string]any{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}}}},
			"reservedFor": []any{map[string]any{"resource": "pods", "name": "gpu-0", "uid": "uid-gpu-0"}}}}}
	slice := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
		"metadata": map[string]any{"name": "node-1-gpu"},
		"spec":     map[string]any{"driver": "gpu.example.com", "nodeName": "node-1", "pool": map[string]any{"name": "node-1", "resourceSliceCount": int64(1)}}}}

	for _, served := range []bool{true, false} {
		mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{v1beta1}) // the version discovery prefers
		if served {
			mapper.Add(v1beta1.WithKind("ResourceClaim"), meta.RESTScopeNamespace)
			mapper.Add(v1beta1.WithKind("ResourceSlice"), meta.RESTScopeRoot)
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			v1beta1.WithResource("resourceclaims"): "ResourceClaimList", v1beta1.WithResource("resourceslices"): "ResourceSliceList"}, claim, slice)
		s := observed.New(time.Now())
		s.Targets = []*observed.Target{podTarget(pod)}
		c := &Collector{Clients: &kube.Clients{Dynamic: dyn, Mapper: mapper}}
		c.readDRA(context.Background(), s)

		got, read := s.DRA.Claims[types.NamespacedName{Namespace: "ml", Name: "gpu-claim"}]
		switch {
		case served && (!read || got == nil || len(got.Status.ReservedFor) != 1 || got.Status.ReservedFor[0].UID != "uid-gpu-0" ||
			got.Status.Allocation == nil || got.Status.Allocation.Devices.Results[0].Driver != "gpu.example.com"):
			t.Errorf("v1beta1 claim converted to v1: read %t, %+v", read, got)
		case served && (len(s.DRA.Slices["node-1"]) != 1 || s.DRA.Slices["node-1"][0].Spec.Driver != "gpu.example.com"):
			t.Errorf("v1beta1 slices converted to v1: %+v", s.DRA.Slices)
		case !served && (read || len(s.NotServed) != 1 || s.NotServed[0].Check != "resourceclaims"):
			t.Errorf("not served: claim read %t, notServed %+v", read, s.NotServed)
		}
		if len(c.Skips()) != 0 || len(s.Targets[0].Skipped) != 0 {
			t.Errorf("served %t: skips %v %v", served, c.Skips(), s.Targets[0].Skipped)
		}
	}
}

func ptr[T any](v T) *T { return &v }
