package collect

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "namespace contents", read: (*Collector).readNamespaceContents,
		permissions: []Permission{
			{Read: "`get` the objects a terminating namespace's finalizers hold (a few per finalizer, at most 50; metadata only for Secrets and ConfigMaps)", UsedFor: "the controller's words on what the namespace waits for, and what those objects name", Without: "the object is diagnosed from its metadata; `skipped` names the read"},
			{Read: "`list` every namespaced type in a namespace not being deleted (metadata); `list` the instances of a CRD not being deleted (metadata, all namespaces)", UsedFor: "`preflight ns/NAME`, `preflight crd/NAME`: what the deletion would delete, and their finalizers", Without: "the type is listed under `skipped` (a partial forecast)"},
			{Read: "`list` pods in a namespace not being deleted (in full), then `get` their nodes and leases", UsedFor: "`preflight ns/NAME`: pods on a node that would not run their shutdown", Without: "`skipped` names the read (a partial forecast: exit 1 unless something would stick)"},
		}})
}

// heldExamples is how many objects held by one finalizer are diagnosed in
// full: 3,000 objects held by one finalizer make one cause, with examples.
const heldExamples = 3

// readNamespaceContents finds what is left in each terminating namespace, as
// the namespace controller sees it (every namespaced type, metadata only):
// counts by resource and by finalizer, the leftover pods and a few held
// objects as nested targets. When the run's scan already listed every type
// there (list -A, why -A, -n NS), its record is used: no type is listed twice.
func (c *Collector) readNamespaceContents(ctx context.Context, s *observed.Snapshot) {
	var mappings []*meta.RESTMapping
	byUID := map[types.UID]*observed.Target{}
	for _, t := range s.Targets {
		byUID[types.UID(t.Ref.UID)] = t // the object's, named without reading it again
	}
	for _, t := range c.topNeeding(s, diagnose.ContentEvidence) {
		if mappings == nil {
			all, err := c.ListableMappings(Scope{Namespace: t.Ref.Name})
			if err != nil {
				c.skipTarget(t, skipOf("discovery", err))
				return
			}
			for _, m := range all {
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					mappings = append(mappings, m)
				}
			}
		}
		if rec := c.recorded(t.Ref.Name, mappings); rec != nil {
			t.Contents = rec.contents(t.Ref.Name, mappings, byUID)
			t.Contents.Read.Types = len(mappings)
		} else {
			t.Contents = c.namespaceContents(ctx, t, mappings)
		}
		c.skipTarget(t, t.Contents.Skipped...) // what the scan could not list is a read this report lacks
		var unread []*observed.Target          // pods already read as targets of the run are not read again
		for _, p := range t.Contents.Pods {
			if p.Pod == nil {
				unread = append(unread, p)
			}
		}
		c.readPods(ctx, unread, map[string]int{t.Ref.Name: t.Contents.Counts[observed.Pods]})
		c.readHeld(ctx, t.Contents, byUID)
		if c.Preflight && t.Object.GetDeletionTimestamp() == nil {
			c.readLivePods(ctx, t)
		}
	}
}

// readLivePods, for a preflight of a namespace not being deleted, nests the
// pods in it bound to a node and not being deleted (one list): the
// namespace controller would delete them first, and each would wait for its
// node's kubelet, whose liveness the nodes source reads after this one.
func (c *Collector) readLivePods(ctx context.Context, t *observed.Target) {
	pods, err := c.namespacePods(ctx, t.Ref.Name)
	if err != nil {
		c.skipTarget(t, skipOf("list pods in namespace "+t.Ref.Name, err))
		return
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		t.Contents.Live = append(t.Contents.Live, podTarget(p))
	}
	sort.Slice(t.Contents.Live, func(i, j int) bool { return t.Contents.Live[i].Ref.Name < t.Contents.Live[j].Ref.Name })
}

// heldReads bounds how many held objects of one namespace are read in full.
const heldReads = 50

// readHeld reads in full the objects a namespace's scan found held by a
// finalizer (metadata only so far; a few per finalizer), as a target named
// on the command line is read: their status carries the controller's words
// (said before the deletion too: a controller that keeps failing need not
// write again), and the sources after this one follow what they name. Pods
// are read apart; targets of the run were read already.
func (c *Collector) readHeld(ctx context.Context, contents *observed.Contents, targets map[types.UID]*observed.Target) {
	var held []*observed.Target
	var gvrs []schema.GroupVersionResource
	seen := map[*observed.Target]bool{}
	for _, f := range slices.Sorted(maps.Keys(contents.Held)) {
		for _, h := range contents.Held[f] {
			gr := schema.ParseGroupResource(h.Ref.Resource) // resource.group
			if seen[h] || h.Pod != nil || gr == observed.Pods || targets[h.Object.GetUID()] != nil || len(held) == heldReads {
				continue
			}
			seen[h] = true
			held, gvrs = append(held, h), append(gvrs, contents.Resources[gr])
		}
	}
	c.parallel(len(held), func(i int) { c.readInFull(ctx, held[i], gvrs[i]) })
}

// namespaceContents lists what is left in a terminating namespace: only the
// types its controller's conditions name, and pods, when they can stand in
// for a scan of every type (diagnose.ContentIndex) and what is listed agrees
// with them (no type holds more than they count); every namespaced type
// otherwise, or with --full-scan.
func (c *Collector) namespaceContents(ctx context.Context, t *observed.Target, mappings []*meta.RESTMapping) *observed.Contents {
	why := "--full-scan"
	if !c.FullScan && t.Namespace != nil {
		var left map[schema.GroupResource]int
		if left, why = diagnose.ContentIndex(t.Namespace); why == "" {
			named, missing := indexed(mappings, left)
			if missing == "" {
				contents := c.scanNamespace(ctx, t.Ref.Name, named)
				if why = disagreement(contents, left); why == "" {
					contents.Read = observed.ContentsRead{Index: true, Types: len(named)}
					return contents
				}
			} else {
				why = "its conditions name " + missing + ", which discovery does not list"
			}
		}
	}
	contents := c.scanNamespace(ctx, t.Ref.Name, mappings)
	contents.Read = observed.ContentsRead{Types: len(mappings), Why: why}
	return contents
}

// indexed are the mappings of pods and of the types left names; missing is
// a type left names that no mapping serves.
func indexed(mappings []*meta.RESTMapping, left map[schema.GroupResource]int) (named []*meta.RESTMapping, missing string) {
	served := map[schema.GroupResource]bool{}
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		if _, ok := left[gr]; ok || gr == observed.Pods {
			named, served[gr] = append(named, m), true
		}
	}
	for _, gr := range byName(left) {
		if !served[gr] {
			return nil, gr.String()
		}
	}
	return named, ""
}

// disagreement says how the listed contents contradict the conditions'
// counts, "" when they do not: what is left only shrinks.
func disagreement(contents *observed.Contents, left map[schema.GroupResource]int) string {
	if contents.Counts[observed.Pods] > 0 {
		return diagnose.PodsFirst
	}
	for _, gr := range byName(contents.Counts) {
		if n := contents.Counts[gr]; gr != observed.Pods && n > left[gr] {
			return fmt.Sprintf("%s holds %d objects, more than the %d its conditions count: they are stale", gr, n, left[gr])
		}
	}
	if len(contents.Skipped) > 0 {
		return "a type its conditions name could not be listed"
	}
	return ""
}

// byName are the types counted, by name: what is said of them is said the
// same way each run.
func byName(counts map[schema.GroupResource]int) []schema.GroupResource {
	return slices.SortedFunc(maps.Keys(counts), func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
}

func (c *Collector) scanNamespace(ctx context.Context, ns string, mappings []*meta.RESTMapping) *observed.Contents {
	return c.scanContents(ctx, Scope{Namespace: ns}, "in namespace "+ns, mappings)
}

// contents is namespace ns's contents as the run's scans saw them; the
// objects being deleted that are already targets of the run are nested as
// those same targets.
func (rec *scanRecord) contents(ns string, mappings []*meta.RESTMapping, targets map[types.UID]*observed.Target) *observed.Contents {
	contents := newContents(mappings)
	for gr, n := range rec.counts[ns] {
		if _, ok := contents.Resources[gr]; ok {
			contents.Counts[gr] += n
			contents.ByNamespace[ns] += n
		}
	}
	for gr, n := range rec.notDeleted[ns] {
		if _, ok := contents.Resources[gr]; ok {
			contents.NotDeleted[gr] += n
		}
	}
	for _, sk := range rec.failed {
		if _, ok := contents.Resources[sk.Resource.GroupResource()]; ok {
			contents.Skipped = append(contents.Skipped, sk)
		}
	}
	for _, f := range rec.terminating[ns] {
		ref := f.Ref() // worked out by the scan, for most
		addTerminating(contents, f.GVR, ref.Namespace, ref.Name, f.Object.GetFinalizers(), func() *observed.Target {
			if t := targets[types.UID(ref.UID)]; t != nil {
				return t
			}
			return &observed.Target{Ref: ref, Object: f.Object}
		})
	}
	sortContents(contents)
	return contents
}

// newContents is an empty record of what is left, over the types scanned.
func newContents(mappings []*meta.RESTMapping) *observed.Contents {
	contents := &observed.Contents{Counts: map[schema.GroupResource]int{}, ByNamespace: map[string]int{}, NotDeleted: map[schema.GroupResource]int{},
		Resources: map[schema.GroupResource]schema.GroupVersionResource{}, Finalizers: map[string]int{}, Pending: map[string]int{}, Waiting: map[string][]observed.ObjectRef{}, Held: map[string][]*observed.Target{}}
	for _, m := range mappings {
		contents.Resources[m.Resource.GroupResource()] = m.Resource
	}
	return contents
}

// addTerminating records one object being deleted: the finalizers that hold
// it are counted, and it is kept as a target (made only then: conversions
// cost) when it is a pod or among the first few a finalizer holds (by
// exampleOrder: the same few whatever order the concurrent lists came in).
func addTerminating(contents *observed.Contents, gvr schema.GroupVersionResource, ns, name string, finalizers []string, target func() *observed.Target) {
	isPods := gvr.Group == "" && gvr.Resource == "pods"
	key := report.ObjectRef{Namespace: ns, Name: name}
	keep := isPods
	for _, f := range finalizers {
		contents.Finalizers[f]++
		keep = keep || (!isPods && amongExamples(contents.Held[f], key, gvr, func(t *observed.Target) report.ObjectRef { return t.Ref }))
	}
	if !keep {
		return
	}
	t := target()
	if isPods {
		contents.Pods = append(contents.Pods, t)
		return
	}
	for _, f := range finalizers {
		contents.Held[f] = keepExamples(contents.Held[f], t, func(t *observed.Target) report.ObjectRef { return t.Ref })
	}
}

// exampleOrder orders the examples kept of what a finalizer holds: by
// namespace, name and type.
func exampleOrder(a, b report.ObjectRef) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.Resource, b.Resource))
}

// amongExamples: an object of type gvr named as key would be among the
// heldExamples first of kept (sorted by exampleOrder). Its type is named
// only when the namespace and name tie (what Found.Ref costs, not for every
// object of thousands).
func amongExamples[T any](kept []T, key report.ObjectRef, gvr schema.GroupVersionResource, ref func(T) report.ObjectRef) bool {
	if len(kept) < heldExamples {
		return true
	}
	last := ref(kept[len(kept)-1])
	if key.Namespace == last.Namespace && key.Name == last.Name {
		key.Resource = QualifiedResource(gvr)
	}
	return exampleOrder(key, last) < 0
}

// keepExamples puts v among the heldExamples first of kept, by exampleOrder.
func keepExamples[T any](kept []T, v T, ref func(T) report.ObjectRef) []T {
	i, _ := slices.BinarySearchFunc(kept, ref(v), func(k T, r report.ObjectRef) int { return exampleOrder(ref(k), r) })
	return slices.Insert(kept, i, v)[:min(len(kept)+1, heldExamples)]
}

// sortContents orders the kept pods by name, whatever order the lists came
// in (the held examples are kept in order).
func sortContents(contents *observed.Contents) {
	sort.Slice(contents.Pods, func(i, j int) bool { return contents.Pods[i].Ref.Name < contents.Pods[j].Ref.Name })
}

// scanContents lists the mappings in scope and records what is left: counts
// by type and by namespace, those not being deleted yet, and, among those
// being deleted, the finalizers that hold them, the terminating pods and a
// few examples per finalizer.
func (c *Collector) scanContents(ctx context.Context, scope Scope, where string, mappings []*meta.RESTMapping) *observed.Contents {
	contents := newContents(mappings)
	contents.Skipped = c.eachObject(ctx, scope, where, mappings, func(m *meta.RESTMapping, item *metav1.PartialObjectMetadata) {
		gr := m.Resource.GroupResource()
		contents.Counts[gr]++
		contents.ByNamespace[item.Namespace]++
		if item.DeletionTimestamp == nil {
			contents.NotDeleted[gr]++
			for _, f := range item.Finalizers {
				contents.Pending[f]++ // holds nothing yet: it will, once deleted
				if amongExamples(contents.Waiting[f], report.ObjectRef{Namespace: item.Namespace, Name: item.Name}, m.Resource, itself) {
					contents.Waiting[f] = keepExamples(contents.Waiting[f], metadataRef(item, m), itself)
				}
			}
			return
		}
		addTerminating(contents, m.Resource, item.Namespace, item.Name, item.Finalizers, func() *observed.Target { return metadataTarget(item, m) })
	})
	sortContents(contents)
	return contents
}

// eachObject lists every mapping in scope concurrently (bounded) and visits
// each object, one page at a time. A type that cannot be listed is returned
// as a skip; the others carry on.
func (c *Collector) eachObject(ctx context.Context, scope Scope, where string, mappings []*meta.RESTMapping,
	visit func(*meta.RESTMapping, *metav1.PartialObjectMetadata)) []report.Skip {
	var mu sync.Mutex
	var skips []report.Skip
	tr := c.track("objects "+where, len(mappings))
	defer tr.finish()
	// Every error is recorded as a skip: nothing cancels the other lists.
	c.parallel(len(mappings), func(i int) {
		m := mappings[i]
		err := c.listEach(ctx, m, scope, tr, func(items []metav1.PartialObjectMetadata) error {
			mu.Lock() // once a page, not once an object
			defer mu.Unlock()
			for i := range items {
				visit(m, &items[i])
			}
			return nil
		})
		if err != nil {
			mu.Lock()
			sk := skipOf("list "+QualifiedResource(m.Resource)+" "+where, err)
			sk.Resource = m.Resource
			skips = append(skips, sk)
			mu.Unlock()
		}
	})
	sort.Slice(skips, func(i, j int) bool { return skips[i].Check < skips[j].Check })
	return skips
}

// metadataTarget makes a target of an object read as metadata only.
func metadataTarget(item *metav1.PartialObjectMetadata, m *meta.RESTMapping) *observed.Target {
	ref := typeRefOf(m)
	return &observed.Target{Ref: ref.of(item), Object: metadataToUnstructured(item, ref)}
}

// metadataRef names an object read as metadata only, as Found.Ref does,
// without converting it.
func metadataRef(item *metav1.PartialObjectMetadata, m *meta.RESTMapping) report.ObjectRef {
	return typeRefOf(m).of(item)
}

// typeRef is what the refs of a type's objects share, worked out once per
// type, not once per object.
type typeRef struct{ apiVersion, kind, resource string }

func typeRefOf(m *meta.RESTMapping) typeRef {
	return typeRef{apiVersion: m.GroupVersionKind.GroupVersion().String(), kind: m.GroupVersionKind.Kind, resource: QualifiedResource(m.Resource)}
}

func (r typeRef) of(item *metav1.PartialObjectMetadata) report.ObjectRef {
	return report.ObjectRef{APIVersion: r.apiVersion, Kind: r.kind, Resource: r.resource, Namespace: item.Namespace, Name: item.Name, UID: string(item.UID)}
}

func itself(r report.ObjectRef) report.ObjectRef { return r }
