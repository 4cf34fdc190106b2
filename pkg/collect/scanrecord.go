package collect

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"slices"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// scanRecord is what a run's scans saw beyond the terminating objects they
// return: how many objects of each type each namespace holds, which types
// could not be listed, and the dependents of the objects that may need them.
// A terminating namespace's contents and an owner's dependents are then taken
// from it instead of listing every type again: every type is listed at most
// once per run, however many namespaces are terminating and whatever waits
// on its dependents.
type scanRecord struct {
	scope Scope
	// attempted holds every type listed, failed or not; failed the skips of
	// those that could not be.
	attempted map[schema.GroupResource]schema.GroupVersionResource
	failed    []report.Skip
	// Per namespace: objects by type, and those without a deletionTimestamp.
	counts, notDeleted map[string]map[schema.GroupResource]int
	// terminating holds the namespaced objects being deleted, by namespace.
	terminating map[string][]Found
	// owners is what the run's scans kept to find dependents (see ownerRecord).
	owners ownerRecord
}

// ownerRecord keeps, from a scan, the objects whose ownerReferences name an
// object the diagnosis may ask the dependents of: one being deleted or held
// by a finalizer (a rule asks for dependents only through a finalizer, the
// garbage collector's foregroundDeletion and orphan). Not every owned object:
// in a cluster, most pods, ReplicaSets and EndpointSlices have an owner that
// is going nowhere. An owned object seen before its owner was is kept
// pending until its owner's type has been listed, then dropped unless its
// owner was one of them; what is kept is the object's metadata, without its
// managedFields, as the dependents' own scan would keep it.
type ownerRecord struct {
	// scans counts the Scan calls recorded: pending objects are settled at
	// the end of each, so only the record of a single scan is complete.
	scans int
	// kinds are the kinds the scan lists, listed those whose lists ended.
	kinds, listed map[schema.GroupKind]bool
	// owners are the UIDs of the objects that may need their dependents;
	// dependents holds, by owner UID, the objects that name one of them.
	owners     map[types.UID]bool
	dependents map[types.UID][]owned
	// pending holds, by the kind and UID their ownerReference names, the
	// owned objects whose owner has not been seen yet.
	pending map[schema.GroupKind]map[types.UID][]owned
}

// mayNeedDependents: an object the diagnosis may ask the dependents of.
func mayNeedDependents(item *metav1.PartialObjectMetadata) bool {
	return item.DeletionTimestamp != nil || len(item.Finalizers) > 0
}

// keepOwned copies an owned object from a page (pages are not kept) with
// who wrote it, as a scan keeps a target (writersOnly).
func keepOwned(item *metav1.PartialObjectMetadata, m *meta.RESTMapping) owned {
	shallow := *item
	shallow.ManagedFields = writersOnly(item.ManagedFields)
	return owned{shallow.DeepCopy(), m}
}

// recordScanStart notes the kinds a scan is about to list.
func (c *Collector) recordScanStart(scope Scope, mappings []*meta.RESTMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recordFor(scope)
	if rec == nil {
		return
	}
	o := &rec.owners
	o.scans++
	for _, m := range mappings {
		o.kinds[m.GroupVersionKind.GroupKind()] = true
	}
}

// recordOwners visits one page of a scan's list for the owner record.
func (c *Collector) recordOwners(scope Scope, m *meta.RESTMapping, items []metav1.PartialObjectMetadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recordFor(scope)
	if rec == nil {
		return
	}
	o := &rec.owners
	for i := range items {
		item := &items[i]
		if mayNeedDependents(item) && !o.owners[item.UID] {
			o.owners[item.UID] = true
			for _, byUID := range o.pending { // dependents seen before it
				if deps, ok := byUID[item.UID]; ok {
					o.dependents[item.UID] = append(o.dependents[item.UID], deps...)
					delete(byUID, item.UID)
				}
			}
		}
		var kept *owned // copied once, for its first reference worth keeping
		for _, ref := range item.OwnerReferences {
			into := o.dependents
			if !o.owners[ref.UID] {
				gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
				if !o.kinds[gk] || o.listed[gk] {
					continue // its owner is not listed, or was and is not one to keep
				}
				if o.pending[gk] == nil {
					o.pending[gk] = map[types.UID][]owned{}
				}
				into = o.pending[gk]
			}
			if kept == nil {
				k := keepOwned(item, m)
				kept = &k
			}
			into[ref.UID] = append(into[ref.UID], *kept)
		}
	}
}

// recordListed notes that a type's list ended (read whole or failed): the
// objects waiting for an owner of that kind can wait no more.
func (c *Collector) recordListed(scope Scope, m *meta.RESTMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recordFor(scope)
	if rec == nil {
		return
	}
	gk := m.GroupVersionKind.GroupKind()
	rec.owners.listed[gk] = true
	delete(rec.owners.pending, gk)
}

// pageCounts counts one page of a list, by namespace, before it is merged.
type pageCounts struct {
	counts, notDeleted map[string]int
}

func countPage(items []metav1.PartialObjectMetadata) pageCounts {
	pc := pageCounts{counts: map[string]int{}, notDeleted: map[string]int{}}
	for i := range items {
		pc.counts[items[i].Namespace]++
		if items[i].DeletionTimestamp == nil {
			pc.notDeleted[items[i].Namespace]++
		}
	}
	return pc
}

// recordPage merges a page's counts into the run's record (under c.mu).
func (c *Collector) recordPage(scope Scope, gr schema.GroupResource, pc pageCounts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recordFor(scope)
	if rec == nil {
		return
	}
	add := func(into map[string]map[schema.GroupResource]int, from map[string]int) {
		for ns, n := range from {
			if into[ns] == nil {
				into[ns] = map[schema.GroupResource]int{}
			}
			into[ns][gr] += n
		}
	}
	add(rec.counts, pc.counts)
	add(rec.notDeleted, pc.notDeleted)
}

// recordScan notes the types a scan listed, those it could not, and the
// namespaced objects it found being deleted.
func (c *Collector) recordScan(scope Scope, mappings []*meta.RESTMapping, failed []report.Skip, found []Found) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recordFor(scope)
	if rec == nil {
		return
	}
	for _, m := range mappings {
		rec.attempted[m.Resource.GroupResource()] = m.Resource
	}
	rec.failed = append(rec.failed, failed...)
	for _, f := range found {
		if ns := f.Object.GetNamespace(); ns != "" {
			rec.terminating[ns] = append(rec.terminating[ns], f)
		}
	}
	clear(rec.owners.pending) // owners never seen
}

// recordFor is the run's record for scans of this scope; a scan filtered by
// labels or fields does not see a namespace's whole content and records nothing, nor
// does a scan of another scope than the run's first. Called under c.mu.
func (c *Collector) recordFor(scope Scope) *scanRecord {
	if scope.filtered() {
		return nil
	}
	if c.record == nil {
		c.record = &scanRecord{scope: scope, attempted: map[schema.GroupResource]schema.GroupVersionResource{},
			counts: map[string]map[schema.GroupResource]int{}, notDeleted: map[string]map[schema.GroupResource]int{}, terminating: map[string][]Found{},
			owners: ownerRecord{kinds: map[schema.GroupKind]bool{}, listed: map[schema.GroupKind]bool{}, owners: map[types.UID]bool{},
				dependents: map[types.UID][]owned{}, pending: map[schema.GroupKind]map[types.UID][]owned{}}}
	}
	if c.record.scope != scope {
		return nil
	}
	return c.record
}

// recorded returns the record when the run's scans listed every one of the
// namespaced types in namespace ns; nil when ns must be scanned itself.
func (c *Collector) recorded(ns string, namespaced []*meta.RESTMapping) *scanRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.record
	if rec == nil || rec.scope.filtered() || (!rec.scope.AllNamespaces && rec.scope.Namespace != ns) {
		return nil
	}
	for _, m := range namespaced {
		if _, ok := rec.attempted[m.Resource.GroupResource()]; !ok {
			return nil
		}
	}
	return rec
}

// podCounts counts the pods of each namespace the run's scans listed: it
// decides whether reading a namespace's terminating pods is one list or a
// GET each.
func (c *Collector) podCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	if c.record == nil {
		return out
	}
	pods := schema.GroupResource{Resource: "pods"}
	for ns, byType := range c.record.counts {
		if n := byType[pods]; n > 0 {
			out[ns] = n
		}
	}
	return out
}

// sawType reports whether the record's scan listed every object of a type
// in namespace ns (every namespace and cluster scope for ""): unfiltered,
// in that scope, and the type's list did not fail.
func (rec *scanRecord) sawType(gr schema.GroupResource, ns string) bool {
	if rec.scope.filtered() || !rec.scope.AllNamespaces && (ns == "" || rec.scope.Namespace != ns) {
		return false
	}
	if _, ok := rec.attempted[gr]; !ok {
		return false
	}
	return !slices.ContainsFunc(rec.failed, func(sk report.Skip) bool { return sk.Resource.GroupResource() == gr })
}

// recordedCount is how many objects of a type the run's scan counted in
// namespace ns (every namespace and cluster scope for ""), and whether it
// counted them: a scan of every type in that scope.
func (c *Collector) recordedCount(gr schema.GroupResource, ns string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.record == nil || !c.record.sawType(gr, ns) {
		return 0, false
	}
	n := 0
	for namespace, byType := range c.record.counts {
		if ns == "" || namespace == ns {
			n += byType[gr]
		}
	}
	return n, true
}

// recordedDependents returns, from the run's scan, the dependents of the
// owners (namespaced ones in namespace ns, cluster-scoped ones for ns ""),
// by owner UID, when that scan listed every one of the mappings in that
// scope and saw every owner; with the mappings whose lists failed there,
// which the caller lists again in the owners' own scope (a list refused
// cluster-wide may be allowed in one namespace). ok is false when the
// dependents must be scanned.
func (c *Collector) recordedDependents(ns string, mappings []*meta.RESTMapping, owners []*observed.Target) (children map[types.UID][]owned, failed []*meta.RESTMapping, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.record
	if rec == nil || rec.scope.filtered() || rec.owners.scans != 1 {
		return nil, nil, false
	}
	if !rec.scope.AllNamespaces && (ns == "" || rec.scope.Namespace != ns) {
		return nil, nil, false
	}
	for _, m := range mappings {
		if _, ok := rec.attempted[m.Resource.GroupResource()]; !ok {
			return nil, nil, false
		}
	}
	for _, t := range owners {
		if !rec.owners.owners[t.Object.GetUID()] {
			return nil, nil, false
		}
	}
	listed := map[schema.GroupResource]bool{}
	for _, m := range mappings {
		listed[m.Resource.GroupResource()] = true
	}
	for _, sk := range rec.failed {
		if gr := sk.Resource.GroupResource(); listed[gr] {
			listed[gr] = false
		}
	}
	for _, m := range mappings {
		if !listed[m.Resource.GroupResource()] {
			failed = append(failed, m)
		}
	}
	// Every dependent of every owner the scan kept, as the owners' own scan
	// would see them: of the mappings read whole, in their namespace.
	children = map[types.UID][]owned{}
	for uid, deps := range rec.owners.dependents {
		for _, d := range deps {
			if listed[d.mapping.Resource.GroupResource()] && (ns == "" || d.item.Namespace == ns) {
				children[uid] = append(children[uid], d)
			}
		}
	}
	return children, failed, true
}
