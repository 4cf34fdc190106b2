package collect

import (
	"context"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// heldExamples is how many objects held by one finalizer are diagnosed in
// full: 3,000 objects held by one finalizer make one cause, with examples.
const heldExamples = 3

// readNamespaceContents scans every namespaced type in each terminating
// namespace, as the namespace controller does (metadata only, paginated,
// concurrent), counts what is left by resource and by finalizer, and keeps
// the leftover pods and a few held objects as nested targets.
func (c *Collector) readNamespaceContents(ctx context.Context, s *snapshot.Snapshot) {
	var mappings []*meta.RESTMapping
	for _, t := range s.Targets {
		if t.Namespace == nil {
			continue
		}
		if mappings == nil {
			all, err := c.ListableMappings(Scope{Namespace: t.Ref.Name})
			if err != nil {
				t.Skipped = append(t.Skipped, skipOf("discovery", err))
				return
			}
			for _, m := range all {
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					mappings = append(mappings, m)
				}
			}
		}
		t.Contents = c.scanNamespace(ctx, t.Ref.Name, mappings)
		for _, p := range t.Contents.Pods {
			c.readPod(ctx, p)
		}
	}
}

func (c *Collector) scanNamespace(ctx context.Context, ns string, mappings []*meta.RESTMapping) *snapshot.NamespaceContents {
	contents := &snapshot.NamespaceContents{Counts: map[string]int{}, Finalizers: map[string]int{}, Held: map[string][]*snapshot.Target{}}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(scanConcurrency)
	for _, m := range mappings {
		resource := QualifiedResource(m.Resource)
		isPods := m.Resource.Group == "" && m.Resource.Resource == "pods"
		g.Go(func() error {
			err := c.listEach(gctx, m, Scope{Namespace: ns}, func(item *metav1.PartialObjectMetadata) error {
				mu.Lock()
				defer mu.Unlock()
				contents.Counts[resource]++
				var target *snapshot.Target
				if (isPods && item.DeletionTimestamp != nil) || (!isPods && len(item.Finalizers) > 0) {
					obj, err := metadataToUnstructured(item, m.GroupVersionKind)
					if err != nil {
						return err
					}
					target = &snapshot.Target{Ref: Found{GVR: m.Resource, Object: obj}.Ref(), Object: obj}
				}
				if isPods && target != nil {
					contents.Pods = append(contents.Pods, target)
				}
				for _, f := range item.Finalizers {
					contents.Finalizers[f]++
					if !isPods && len(contents.Held[f]) < heldExamples {
						contents.Held[f] = append(contents.Held[f], target)
					}
				}
				return nil
			})
			if err != nil {
				mu.Lock()
				contents.Skipped = append(contents.Skipped, skipOf("list "+resource+" in namespace "+ns, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // every error is recorded as a skip
	sort.Slice(contents.Pods, func(i, j int) bool { return contents.Pods[i].Ref.Name < contents.Pods[j].Ref.Name })
	for _, held := range contents.Held {
		sort.Slice(held, func(i, j int) bool { return held[i].Ref.Name < held[j].Ref.Name })
	}
	return contents
}
