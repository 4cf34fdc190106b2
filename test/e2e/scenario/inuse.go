package scenario

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ScopedCRD creates a CRD served in v1, cluster-scoped unless namespaced,
// as an operator's own CRDs are: in a group under k8s.io it carries the
// api-approved annotation the apiserver demands there (Gateway API's do).
func (e *Env) ScopedCRD(ctx context.Context, group, kind, plural string, namespaced bool) error {
	crd := crdObject(group, kind, plural, []string{"v1"}, nil)
	if !namespaced {
		crd.Object["spec"].(map[string]any)["scope"] = "Cluster"
	}
	if strings.HasSuffix(group, ".k8s.io") || strings.HasSuffix(group, ".kubernetes.io") {
		crd.SetAnnotations(map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/891"})
	}
	return e.createCRD(ctx, crd)
}

// SpecObject creates an object of a CRD made by ScopedCRD (ns "" for a
// cluster-scoped one), with a spec and finalizers.
func (e *Env) SpecObject(ctx context.Context, group, kind, plural, ns, name string, spec map[string]any, finalizers ...string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": kind, "spec": spec}}
	obj.SetName(name)
	obj.SetNamespace(ns)
	obj.SetFinalizers(finalizers)
	_, err := e.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}
