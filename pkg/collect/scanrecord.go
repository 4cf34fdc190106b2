package collect

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// scanRecord is what a run's scans saw beyond the terminating objects they
// return: how many objects of each type each namespace holds, and which types
// could not be listed. A terminating namespace's contents are then taken from
// it instead of listing every type again: every type is listed at most once
// per run, however many namespaces are terminating.
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
			counts: map[string]map[schema.GroupResource]int{}, notDeleted: map[string]map[schema.GroupResource]int{}, terminating: map[string][]Found{}}
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
