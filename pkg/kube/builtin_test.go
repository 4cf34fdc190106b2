package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// asked is a mapper that knows nothing and counts the questions it is asked.
type asked struct {
	meta.RESTMapper
	n int
}

func (a *asked) KindFor(schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	a.n++
	return schema.GroupVersionKind{}, &meta.NoResourceMatchError{}
}

func (a *asked) ResourceFor(schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	a.n++
	return schema.GroupVersionResource{}, &meta.NoResourceMatchError{}
}

func (a *asked) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	a.n++
	return nil, &meta.NoKindMatchError{}
}

// The builtins resolve by every name kubectl takes without asking
// discovery; anything else, and a builtin's name in another group or
// version, is the wrapped mapper's question.
func TestBuiltinsResolveWithoutDiscovery(t *testing.T) {
	for _, tc := range []struct {
		resource, group, version string
		kind, plural             string
		namespaced               bool
	}{
		{"pods", "", "", "Pod", "pods", true},
		{"pod", "", "v1", "Pod", "pods", true},
		{"PO", "", "", "Pod", "pods", true},
		{"ns", "", "", "Namespace", "namespaces", false},
		{"nodes", "", "", "Node", "nodes", false},
		{"pvc", "", "", "PersistentVolumeClaim", "persistentvolumeclaims", true},
		{"persistentvolumes", "", "", "PersistentVolume", "persistentvolumes", false},
		{"svc", "", "", "Service", "services", true},
		{"configmap", "", "", "ConfigMap", "configmaps", true},
		{"secrets", "", "", "Secret", "secrets", true},
		{"sa", "", "", "ServiceAccount", "serviceaccounts", true},
	} {
		a := &asked{}
		m := WithBuiltins(a)
		gvr := schema.GroupVersionResource{Group: tc.group, Version: tc.version, Resource: tc.resource}
		gvk, err := m.KindFor(gvr)
		if err != nil || gvk != (schema.GroupVersionKind{Version: "v1", Kind: tc.kind}) {
			t.Errorf("KindFor(%v) = %v, %v", gvr, gvk, err)
		}
		res, err := m.ResourceFor(gvr)
		if err != nil || res != (schema.GroupVersionResource{Version: "v1", Resource: tc.plural}) {
			t.Errorf("ResourceFor(%v) = %v, %v", gvr, res, err)
		}
		for _, versions := range [][]string{nil, {"v1"}} {
			mapping, err := m.RESTMapping(schema.GroupKind{Kind: tc.kind}, versions...)
			if err != nil || mapping.Resource.Resource != tc.plural || (mapping.Scope.Name() == meta.RESTScopeNameNamespace) != tc.namespaced {
				t.Errorf("RESTMapping(%s, %v) = %+v, %v", tc.kind, versions, mapping, err)
			}
		}
		if a.n != 0 {
			t.Errorf("%s: discovery was asked %d times", tc.resource, a.n)
		}
	}
	for _, q := range []schema.GroupVersionResource{
		{Resource: "widgets"},
		{Group: "example.com", Resource: "pods"},
		{Version: "v2", Resource: "pods"},
	} {
		a := &asked{}
		m := WithBuiltins(a)
		if _, err := m.KindFor(q); err == nil {
			t.Errorf("KindFor(%v) answered", q)
		}
		if _, err := m.ResourceFor(q); err == nil {
			t.Errorf("ResourceFor(%v) answered", q)
		}
		if a.n != 2 {
			t.Errorf("%v: the wrapped mapper was asked %d times, want 2", q, a.n)
		}
	}
	for _, q := range []struct {
		gk       schema.GroupKind
		versions []string
	}{
		{schema.GroupKind{Kind: "pod"}, nil}, // a kind is exact
		{schema.GroupKind{Group: "example.com", Kind: "Pod"}, nil},
		{schema.GroupKind{Kind: "Pod"}, []string{"v2"}},
		{schema.GroupKind{Kind: "Widget"}, nil},
	} {
		a := &asked{}
		if _, err := WithBuiltins(a).RESTMapping(q.gk, q.versions...); err == nil || a.n != 1 {
			t.Errorf("RESTMapping(%v, %v): %v, wrapped mapper asked %d times", q.gk, q.versions, err, a.n)
		}
	}
}
