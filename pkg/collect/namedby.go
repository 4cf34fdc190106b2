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
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "named by", after: []string{"namespace contents"}, read: (*Collector).readNamedBy,
		permissions: []Permission{
			{Read: "`list` (in full) the types of a held custom resource's API group and its family (at most 24) in its namespace (not for the objects in a namespace the run finds being deleted: its controller deletes what names them too)", UsedFor: "what still names the object (an event source naming its bus)", Without: "not read; `skipped` names the list"},
		}})
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
// (observed.NamingField: eventBusName: default names the EventBus
// default). One list per type and namespace, shared by the targets, the
// lists at once.
func (c *Collector) readNamedBy(ctx context.Context, s *observed.Snapshot) {
	type list struct {
		gvr   schema.GroupVersionResource
		ns    string
		items []unstructured.Unstructured
		err   error
	}
	var lists []*list
	byKey := map[string]*list{}
	kinOf := map[*observed.Target][]*list{}
	var targets []*observed.Target
	for _, t := range namedByTargets(s) {
		if t.NamedBy != nil || !c.needs(t).Has(diagnose.NamedByEvidence) {
			continue
		}
		t.NamedBy = []*observed.Target{}
		gvrs, err := c.kin(t.Object.GroupVersionKind().Group)
		if err != nil {
			c.skipTarget(t, skipOf("discovery", err))
			continue
		}
		targets = append(targets, t)
		for _, gvr := range gvrs {
			key := gvr.String() + "|" + t.Ref.Namespace
			if byKey[key] == nil {
				byKey[key] = &list{gvr: gvr, ns: t.Ref.Namespace}
				lists = append(lists, byKey[key])
			}
			kinOf[t] = append(kinOf[t], byKey[key])
		}
	}
	c.parallel(len(lists), func(i int) {
		l := lists[i]
		read, err := c.Clients.Dynamic.Resource(l.gvr).Namespace(l.ns).List(ctx, metav1.ListOptions{Limit: maxNamedByItems})
		if err != nil {
			l.err = err
			return
		}
		l.items = read.Items
	})
	for _, t := range targets {
		for _, l := range kinOf[t] {
			if l.err != nil {
				c.skipTarget(t, skipOf("list "+QualifiedResource(l.gvr), l.err))
				continue
			}
			for i := range l.items {
				u := &l.items[i]
				if u.GetUID() == t.Object.GetUID() {
					continue
				}
				if _, names := observed.NamingField(u, t.Ref.Kind, t.Ref.Name); names {
					kept := u.DeepCopy()
					t.NamedBy = append(t.NamedBy, &observed.Target{Ref: Found{GVR: l.gvr, Object: kept}.Ref(), Object: kept})
				}
			}
		}
	}
}

// namedByTargets are the run's targets and the objects a namespace's
// finalizers hold, but not those in a namespace the run finds being
// deleted: its controller deletes every type in it at once, so what names
// one of its objects there is being deleted too (or held, and judged as one
// of them), never what keeps it; and listing their kin in full, for every
// such namespace of a list -A, costs 24 lists each.
func namedByTargets(s *observed.Snapshot) []*observed.Target {
	deleting := map[string]bool{}
	for _, t := range s.Targets {
		if t.Namespace != nil && t.Namespace.DeletionTimestamp != nil {
			deleting[t.Ref.Name] = true
		}
	}
	return slices.DeleteFunc(targetsAndHeld(s), func(t *observed.Target) bool { return deleting[t.Ref.Namespace] })
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
