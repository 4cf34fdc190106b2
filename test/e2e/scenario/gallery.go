package scenario

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
)

// Gallery names what `make demo` builds.
const (
	GalleryNamespace  = "shop"
	GalleryBlockedNS  = "legacy-widgets"
	GalleryLiveNode   = "node-live"
	GalleryDeadNode   = "node-dead"
	GalleryWidgetsCRD = "widgets.demo.example.com"
)

// Gallery builds the demo's stuck objects and waits until the cluster shows
// each of them:
//   - shop/web-0: on a node whose kubelet died (its Lease is no longer renewed);
//   - shop/cache-0: killed and finally deleted by its kubelet, held by a finalizer;
//   - shop/batch-0: inside a one-hour grace period (not stuck);
//   - namespace legacy-widgets: blocked by custom resources with a finalizer no controller removes.
func (e *Env) Gallery(ctx context.Context, progress func(string)) error {
	ns := GalleryNamespace
	progress("nodes " + GalleryLiveNode + " and " + GalleryDeadNode)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return e.LiveNode(gctx, GalleryLiveNode) })
	g.Go(func() error { return e.DyingNode(gctx, GalleryDeadNode) })
	g.Go(func() error { return e.Namespace(gctx, ns) })
	g.Go(func() error { return e.Namespace(gctx, GalleryBlockedNS) })
	g.Go(func() error { return e.CRD(gctx, "demo.example.com", "Widget", "widgets") })
	if err := g.Wait(); err != nil {
		return err
	}

	progress("pods web-0, cache-0, batch-0")
	web := PodSpec(ns, "web-0", GalleryDeadNode)
	cache := PodSpec(ns, "cache-0", GalleryLiveNode)
	cache.Finalizers = []string{"demo.example.com/drain-connections"}
	batch := PodSpec(ns, "batch-0", GalleryLiveNode)
	hour := int64(3600)
	batch.Spec.TerminationGracePeriodSeconds = &hour
	batch.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"}
	if err := e.RunOnDyingNode(ctx, web); err != nil {
		return err
	}
	for _, p := range []*corev1.Pod{cache, batch} {
		if err := e.RunningPod(ctx, p); err != nil {
			return err
		}
	}

	progress("custom resources with a finalizer in namespace " + GalleryBlockedNS)
	for i := 1; i <= 3; i++ {
		if err := e.CustomResource(ctx, "demo.example.com", "Widget", "widgets", GalleryBlockedNS, fmt.Sprintf("widget-%d", i), "demo.example.com/release-quota"); err != nil {
			return err
		}
	}

	progress("deleting them all")
	deleted := time.Now()
	if err := e.DeletePod(ctx, ns, "web-0", 5); err != nil {
		return err
	}
	if err := e.DeletePod(ctx, ns, "cache-0", 5); err != nil {
		return err
	}
	if err := e.DeletePod(ctx, ns, "batch-0", hour); err != nil {
		return err
	}
	if err := e.DeleteNamespace(ctx, GalleryBlockedNS, corev1.NamespaceFinalizersRemaining); err != nil {
		return err
	}
	if _, err := e.WaitFinalDelete(ctx, ns, "cache-0"); err != nil {
		return err
	}
	progress("waiting for the node lifecycle controller to give up on " + GalleryDeadNode)
	if err := e.WaitNodeUnreachable(ctx, GalleryDeadNode); err != nil {
		return err
	}
	// Controllers get 30 s after a deadline before the plugin calls an object
	// stuck (its settle time): wait them out, so the demo shows the verdicts.
	if wait := time.Until(deleted.Add(36 * time.Second)); wait > 0 {
		progress(fmt.Sprintf("waiting %s for the deletions to settle", wait.Round(time.Second)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}
