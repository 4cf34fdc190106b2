package collect

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// readReferrers finds, for each target held by an in-use protection
// finalizer (and each such object a namespace's scan holds), the objects
// that name it where the catalogue's referencedBy says: one list per kind
// and namespace (or across namespaces), in the version the server prefers.
// A kind the server does not serve names nothing.
func (c *Collector) readReferrers(ctx context.Context, s *observed.Snapshot) {
	lists := map[string][]unstructured.Unstructured{}
	for _, t := range targetsAndHeld(s) {
		refs := diagnose.ReferencesOf(t)
		if len(refs) == 0 || t.Referrers != nil || !c.needs(t).Has(diagnose.ReferenceEvidence) {
			continue
		}
		t.Referrers = []*observed.Target{}
		for _, ref := range refs {
			gvr, err := c.Clients.Mapper.ResourceFor(schema.GroupVersionResource{Group: ref.Group, Resource: ref.Resource})
			if meta.IsNoMatchError(err) {
				continue // not served: nothing of that kind exists
			}
			if err != nil {
				c.skipTarget(t, skipOf(ref.Resource+"."+ref.Group+" discovery", err))
				continue
			}
			ns := t.Ref.Namespace
			if ref.AnyNamespace {
				ns = ""
			}
			key := gvr.String() + "|" + ns
			items, read := lists[key]
			if !read {
				items, err = listAll[unstructured.Unstructured](ctx, metav1.ListOptions{}, pages(c.Clients.Dynamic.Resource(gvr).Namespace(ns).List))
				if err != nil {
					c.skipTarget(t, skipOf("list "+QualifiedResource(gvr), err))
					continue
				}
				lists[key] = items
			}
			for i := range items {
				if names(items[i].Object, ref, t.Ref.Name) && !slices.ContainsFunc(t.Referrers, func(r *observed.Target) bool { return r.Object.GetUID() == items[i].GetUID() }) {
					u := items[i].DeepCopy()
					f := Found{GVR: gvr, Object: u}
					t.Referrers = append(t.Referrers, &observed.Target{Ref: f.Ref(), Object: u})
				}
			}
		}
	}
}

// names reports whether obj names the held object at ref's path: each
// segment a field, a segment ending in [] each item of a list (the last one:
// a list of names); with a Kind,
// the map holding the name must say that kind (a "kind" beside it).
func names(obj map[string]any, ref catalog.Reference, name string) bool {
	segments := strings.Split(ref.Path, ".")
	var walk func(v any, rest []string) bool
	walk = func(v any, rest []string) bool {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		field, list := strings.CutSuffix(rest[0], "[]")
		next := m[field]
		if len(rest) == 1 && list { // a list of names
			items, _ := next.([]any)
			return ref.Kind == "" && slices.Contains(items, any(name))
		}
		if len(rest) == 1 {
			got, ok := next.(string)
			return ok && got == name && (ref.Kind == "" || m["kind"] == ref.Kind)
		}
		if !list {
			return walk(next, rest[1:])
		}
		items, _ := next.([]any)
		for _, item := range items {
			if walk(item, rest[1:]) {
				return true
			}
		}
		return false
	}
	return ref.Path != "" && walk(obj, segments)
}
