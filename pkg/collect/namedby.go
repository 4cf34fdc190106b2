package collect

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

func init() {
	register(source{name: "named by", after: []string{"namespace contents"}, read: (*Collector).readNamedBy})
}

// Bounds of the scan for what names a held object: the types of its API
// group first, then of the group's family, and a page of each.
const (
	maxNamedByTypes = 24
	maxNamedByItems = 500
)

// readNamedBy finds, for each target whose rules need them, the objects
// that name it although no catalogue row says where: in its namespace,
// every type of its API group's family (the last two labels of the group:
// argoproj.io, knative.dev), read in full, whose spec names it
// (snapshot.NamingField: eventBusName: default names the EventBus
// default). One list per type and namespace, shared by the targets.
func (c *Collector) readNamedBy(ctx context.Context, s *snapshot.Snapshot) {
	lists := map[string][]unstructured.Unstructured{}
	for _, t := range targetsAndHeld(s) {
		if t.NamedBy != nil || !diagnose.Needs(t).Has(diagnose.NamedByEvidence) {
			continue
		}
		t.NamedBy = []*snapshot.Target{}
		gvrs, err := c.kin(t.Object.GroupVersionKind().Group)
		if err != nil {
			c.skipTarget(t, skipOf("discovery", err))
			continue
		}
		for _, gvr := range gvrs {
			key := gvr.String() + "|" + t.Ref.Namespace
			items, read := lists[key]
			if !read {
				list, err := c.Clients.Dynamic.Resource(gvr).Namespace(t.Ref.Namespace).List(ctx, metav1.ListOptions{Limit: maxNamedByItems})
				if err != nil {
					c.skipTarget(t, skipOf("list "+QualifiedResource(gvr), err))
					continue
				}
				items = list.Items
				lists[key] = items
			}
			for i := range items {
				u := &items[i]
				if u.GetUID() == t.Object.GetUID() {
					continue
				}
				if _, names := snapshot.NamingField(u, t.Ref.Kind, t.Ref.Name); names {
					kept := u.DeepCopy()
					t.NamedBy = append(t.NamedBy, &snapshot.Target{Ref: Found{GVR: gvr, Object: kept}.Ref(), Object: kept})
				}
			}
		}
	}
}

// kin lists the namespaced, listable types of an API group's family, the
// group's own first, at most maxNamedByTypes.
func (c *Collector) kin(group string) ([]schema.GroupVersionResource, error) {
	mappings, err := c.ListableMappings(Scope{AllNamespaces: true})
	if err != nil {
		return nil, err
	}
	labels := strings.Split(group, ".")
	family := strings.Join(labels[max(0, len(labels)-2):], ".")
	var own, kin []schema.GroupVersionResource
	for _, m := range mappings {
		g := m.Resource.Group
		switch {
		case m.Scope.Name() != meta.RESTScopeNameNamespace:
		case g == group:
			own = append(own, m.Resource)
		case g == family || strings.HasSuffix(g, "."+family):
			kin = append(kin, m.Resource)
		}
	}
	out := append(own, kin...)
	slices.SortStableFunc(out[len(own):], func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out[:min(len(out), maxNamedByTypes)], nil
}
