package bench

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"golang.org/x/sync/errgroup"
)

// Floor is what any tool must at least do to see a namespace's (or the
// cluster's) content: discover the types, then list every listable type with
// the metadata client, concurrently, with the plugin's limits (16 lists in
// flight, pages of 500, 30 s per request). It counts the objects and does
// nothing else. It has no client-side rate limit, only the 16 lists in
// flight: the bench's labs run priority and fairness, as real clusters do,
// where the plugin follows the server's pace; so does the floor.
func Floor(ctx context.Context, kubeconfig, namespace string) (int64, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, err
	}
	cfg.QPS, cfg.Timeout = -1, 30*time.Second // QPS -1: client-go sets no rate limiter
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, err := disc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return 0, err
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "list") && (namespace == "" || r.Namespaced) {
				gvrs = append(gvrs, gv.WithResource(r.Name))
			}
		}
	}
	var total atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, gvr := range gvrs {
		g.Go(func() error {
			opts := metav1.ListOptions{Limit: 500}
			for {
				var list *metav1.PartialObjectMetadataList
				var err error
				if namespace == "" {
					list, err = md.Resource(gvr).List(gctx, opts)
				} else {
					list, err = md.Resource(gvr).Namespace(namespace).List(gctx, opts)
				}
				if err != nil {
					return nil // as the plugin: a type that fails is skipped
				}
				total.Add(int64(len(list.Items)))
				if list.Continue == "" {
					return nil
				}
				opts.Continue = list.Continue
			}
		})
	}
	_ = g.Wait()
	return total.Load(), nil
}
