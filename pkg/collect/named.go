package collect

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "named objects", after: []string{"namespace contents"}, read: (*Collector).readNamed,
		permissions: []Permission{
			{Read: "`get` on the objects the spec of an object held by a third-party finalizer names (a restore's backup, the backup's storage location: two steps), metadata only for Secrets and ConfigMaps", UsedFor: "whether what the controller depends on says it fails", Without: "that reference is not followed; `skipped` names the read"},
		}})
}

// namedDepth is how far readNamed follows references: what a held object
// names, and what that names (a restore's backup, then its storage location).
const namedDepth = 2

// coreNamed are the core kinds a field named for them (claimName, podName,
// serviceRef) is followed to; other core kinds (Secrets, ConfigMaps,
// ServiceAccounts) say nothing about a controller's cleanup.
var coreNamed = []string{"pod", "persistentvolumeclaim", "persistentvolume", "service"}

// readNamed reads, for each target whose rules need them, the objects its
// spec names (observed.NamedIn), resolved by discovery: a typed reference's
// kind, or a kind of the target's own API group whose name is (or ends
// with) the field's key (backupName -> Backup, storageLocation ->
// BackupStorageLocation), or, for a key ending in Name or Ref, one of a few
// core kinds. A name that resolves to no kind is followed no further; one
// that resolves to no object is recorded as such (Unfound).
func (c *Collector) readNamed(ctx context.Context, s *observed.Snapshot) {
	for _, t := range targetsAndHeld(s) {
		if t.Named == nil && c.needs(t).Has(diagnose.NamedEvidence) {
			c.followNamed(ctx, t, map[types.UID]bool{t.Object.GetUID(): true}, 1)
		}
	}
}

// followNamed reads what t names, and, below namedDepth, what those name.
func (c *Collector) followNamed(ctx context.Context, t *observed.Target, seen map[types.UID]bool, depth int) {
	t.Named, t.Unfound = []*observed.Target{}, []observed.ObjectRef{}
	group := t.Object.GroupVersionKind().Group
	for _, ref := range observed.NamedIn(t.Object) {
		m := c.namedMapping(ref, group)
		if m == nil {
			continue
		}
		namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
		ns := ""
		if namespaced {
			ns = t.Ref.Namespace
			if ref.Namespace != "" {
				ns = ref.Namespace
			}
		}
		u, err := c.get(ctx, m, namespaced, ns, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			t.Unfound = append(t.Unfound, report.ObjectRef{APIVersion: m.GroupVersionKind.GroupVersion().String(), Kind: m.GroupVersionKind.Kind,
				Resource: QualifiedResource(m.Resource), Namespace: ns, Name: ref.Name})
			continue
		case err != nil:
			c.skipTarget(t, skipOf(QualifiedResource(m.Resource)+"/"+ref.Name, err))
			continue
		case seen[u.GetUID()]:
			continue
		}
		seen[u.GetUID()] = true
		n := &observed.Target{Ref: Found{GVR: m.Resource, Object: u}.Ref(), Object: u}
		t.Named = append(t.Named, n)
		if depth < namedDepth {
			c.followNamed(ctx, n, seen, depth+1)
		}
	}
}

// namedMapping resolves a reference to the kind it names; nil when none.
func (c *Collector) namedMapping(ref observed.NamedRef, group string) *meta.RESTMapping {
	if ref.Kind != "" {
		for _, g := range []string{ref.Group, group, ""} {
			if m, err := c.Clients.Mapper.RESTMapping(schema.GroupKind{Group: g, Kind: ref.Kind}); err == nil {
				return m
			}
		}
		return nil
	}
	lists, err := c.discover()
	if err != nil {
		return nil
	}
	var exact, suffix []schema.GroupKind
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || gv.Group != group && (gv.Group != "" || !ref.Suffixed) {
			continue
		}
		for _, r := range l.APIResources {
			kind := strings.ToLower(r.Kind)
			if strings.Contains(r.Name, "/") || gv.Group == "" && !slices.Contains(coreNamed, kind) {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			switch {
			case kind == ref.Word && !slices.Contains(exact, gk):
				exact = append(exact, gk)
			case len(ref.Word) >= 5 && strings.HasSuffix(kind, ref.Word) && !slices.Contains(suffix, gk):
				suffix = append(suffix, gk)
			}
		}
	}
	pick := exact
	if len(pick) == 0 {
		pick = suffix
	}
	if len(pick) > 1 { // ambiguous: the object's own group's kind, if one
		i := slices.IndexFunc(pick, func(gk schema.GroupKind) bool { return gk.Group == group })
		if i < 0 {
			return nil
		}
		pick = pick[i : i+1]
	}
	if len(pick) == 0 {
		return nil
	}
	m, err := c.Clients.Mapper.RESTMapping(pick[0])
	if err != nil {
		return nil
	}
	return m
}
