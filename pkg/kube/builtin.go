package kube

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtin is a core/v1 type that every apiserver serves under the same
// names: a CRD or an aggregated API cannot serve the legacy group, and
// kubectl's own mapper prefers that group, so answering for these names
// here says what kubectl's discovery would. The e2e test
// TestTypeNamesResolveAsKubectlDoes holds each row to kubectl's answer.
type builtin struct {
	kind       string
	short      []string
	namespaced bool
}

// builtins are the types users name most (`why po/x`, `why ns/x`,
// `why pvc/x`) and the ones the rules map by kind.
var builtins = []builtin{
	{"Pod", []string{"po"}, true},
	{"Namespace", []string{"ns"}, false},
	{"Node", []string{"no"}, false},
	{"PersistentVolumeClaim", []string{"pvc"}, true},
	{"PersistentVolume", []string{"pv"}, false},
	{"Service", []string{"svc"}, true},
	{"ConfigMap", []string{"cm"}, true},
	{"Secret", nil, true},
	{"ServiceAccount", []string{"sa"}, true},
}

// builtinFirst answers for the builtins without discovery and asks the
// mapper it wraps for everything else. kubectl's mapper reads every
// group's cached discovery file before it answers its first question:
// on a cluster with 1,000 CRDs that was half of `why ns/NAME`'s CPU and
// its first 120 ms, for a name every server spells the same way.
type builtinFirst struct {
	meta.RESTMapper
}

// WithBuiltins wraps mapper so that the core/v1 builtins resolve without
// discovery.
func WithBuiltins(mapper meta.RESTMapper) meta.RESTMapper {
	return builtinFirst{mapper}
}

var coreV1 = schema.GroupVersion{Version: "v1"}

// resource finds the builtin a lower-case plural, singular or short name
// of the legacy group names (any version but v1 is not a builtin's).
func (builtinFirst) resource(r schema.GroupVersionResource) (builtin, bool) {
	if r.Group != "" || (r.Version != "" && r.Version != coreV1.Version) {
		return builtin{}, false
	}
	name := strings.ToLower(r.Resource)
	for _, b := range builtins {
		plural, singular := b.names()
		if name == plural || name == singular || slices.Contains(b.short, name) {
			return b, true
		}
	}
	return builtin{}, false
}

func (b builtin) names() (plural, singular string) {
	gvr, _ := meta.UnsafeGuessKindToResource(coreV1.WithKind(b.kind))
	return gvr.Resource, strings.ToLower(b.kind)
}

func (b builtin) mapping() *meta.RESTMapping {
	plural, _ := b.names()
	scope := meta.RESTScopeRoot
	if b.namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{
		Resource:         coreV1.WithResource(plural),
		GroupVersionKind: coreV1.WithKind(b.kind),
		Scope:            scope,
	}
}

func (m builtinFirst) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if b, ok := m.resource(r); ok {
		return coreV1.WithKind(b.kind), nil
	}
	return m.RESTMapper.KindFor(r)
}

func (m builtinFirst) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	if b, ok := m.resource(r); ok {
		return b.mapping().Resource, nil
	}
	return m.RESTMapper.ResourceFor(r)
}

func (m builtinFirst) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Group == "" && (len(versions) == 0 || slices.Contains(versions, coreV1.Version)) {
		for _, b := range builtins {
			if b.kind == gk.Kind {
				return b.mapping(), nil
			}
		}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}
