package collect

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "finalized objects", after: []string{"controllers"}, read: (*Collector).readFinalized,
		permissions: []Permission{
			{Read: "`list` every type in every namespace (metadata only, as `list -A`)", UsedFor: "`preflight` of a Deployment, StatefulSet, DaemonSet or namespace: the objects elsewhere carrying a third-party finalizer whose only live controller the deletion deletes", Without: "the type is listed under `skipped` (a partial forecast)"},
		}})
}

// readFinalized lists every type of the cluster (metadata only, as list -A
// does) for the objects not being deleted that carry a third-party
// finalizer, when a preflight asks what deleting a controller would leave
// with no one to remove it: only when a deletion forecast deletes a live
// workload (the workloads are read first).
func (c *Collector) readFinalized(ctx context.Context, s *observed.Snapshot) {
	if !slices.ContainsFunc(c.topNeeding(s, diagnose.FinalizedEvidence), func(t *observed.Target) bool { return diagnose.DeletesLiveWorkloads(s, t) }) {
		return // no live controller goes with the deletions: none can strand anything
	}
	all := Scope{AllNamespaces: true}
	mappings, err := c.ListableMappings(all)
	if err != nil {
		c.Skip(skipOf("discovery", err))
		return
	}
	f := &observed.Finalized{Counts: map[string]map[string]int{}, Examples: map[string][]observed.ObjectRef{}}
	f.Skipped = c.eachObject(ctx, all, "in the cluster", mappings, func(m *meta.RESTMapping, item *metav1.PartialObjectMetadata) {
		if item.DeletionTimestamp != nil {
			return
		}
		for _, name := range item.Finalizers {
			if !catalog.ThirdPartyFinalizer(name) {
				continue
			}
			if f.Counts[name] == nil {
				f.Counts[name] = map[string]int{}
			}
			f.Counts[name][item.Namespace]++
			if amongExamples(f.Examples[name], report.ObjectRef{Namespace: item.Namespace, Name: item.Name}, m.Resource, itself) {
				f.Examples[name] = keepExamples(f.Examples[name], metadataRef(item, m), itself)
			}
		}
	})
	for _, sk := range f.Skipped {
		c.Skip(sk)
	}
	s.Finalized = f
}
