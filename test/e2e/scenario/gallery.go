package scenario

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
)

// Gallery names what `make demo` builds.
const (
	GalleryNamespace = "shop"
	GalleryBlockedNS = "legacy-widgets"
	GalleryGuardedNS = "settings"
	GalleryCRD       = "widgets.demo.example.com"
	GalleryLiveNode  = "node-live"
	GalleryDeadNode  = "node-dead"
)

// Gallery builds the demo's stuck objects and waits until the cluster shows
// each of them. In namespace shop:
//   - web-0: on a node whose kubelet died (its Lease is no longer renewed);
//   - etcd-node-dead: a static pod's mirror on that node;
//   - cache-0: killed and finally deleted by its kubelet, held by a finalizer;
//   - batch-0: inside a one-hour grace period (not stuck);
//   - api-0: its kubelet never stops the containers;
//   - db-0: the runtime fails to kill its container (FailedKillPod);
//   - proxy-0: the CNI fails to tear its sandbox down (FailedKillPod);
//   - pay-0: its kubelet's final DELETE is refused by a webhook whose service is gone;
//   - data-0: its CSI volume cannot be unmounted, the driver's node plugin is gone;
//   - train-0: its DRA claim cannot be unprepared, the driver's kubelet plugin is gone.
//
// Namespace legacy-widgets, blocked by custom resources with a finalizer no
// controller removes; the CRD widgets.demo.example.com, deleted, waiting for
// those same widgets; namespace settings, whose configmaps a webhook whose
// service is gone refuses to let the namespace controller delete.
func (e *Env) Gallery(ctx context.Context, progress func(string)) error {
	ns := GalleryNamespace
	progress("nodes " + GalleryLiveNode + " and " + GalleryDeadNode + ", namespaces, a CRD")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return e.LiveNode(gctx, GalleryLiveNode) })
	g.Go(func() error { return e.DyingNode(gctx, GalleryDeadNode) })
	g.Go(func() error { return e.Namespace(gctx, ns) })
	g.Go(func() error { return e.Namespace(gctx, GalleryBlockedNS) })
	g.Go(func() error { return e.Namespace(gctx, GalleryGuardedNS) })
	g.Go(func() error { return e.CRD(gctx, "demo.example.com", "Widget", "widgets") })
	if err := g.Wait(); err != nil {
		return err
	}

	progress("pods on " + GalleryDeadNode)
	mirror := PodSpec(ns, "etcd-"+GalleryDeadNode, GalleryDeadNode)
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "5c0e7f3a"}
	for _, p := range []*corev1.Pod{PodSpec(ns, "web-0", GalleryDeadNode), mirror} {
		if err := e.RunOnDyingNode(ctx, p); err != nil {
			return err
		}
	}

	progress("pods on " + GalleryLiveNode)
	unique, err := e.CSIClaim(ctx, ns, "data-data-0", "csi.demo.example.com")
	if err != nil {
		return err
	}
	if err := e.AllocatedClaim(ctx, ns, "gpu-train-0", "gpu.demo.example.com", GalleryLiveNode); err != nil {
		return err
	}
	pods := galleryLivePods(ns)
	for _, p := range pods {
		if err := e.RunningPod(ctx, p); err != nil {
			return err
		}
	}
	if err := e.MountedOnNode(ctx, GalleryLiveNode, unique); err != nil {
		return err
	}
	train, err := e.Client.CoreV1().Pods(ns).Get(ctx, "train-0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := e.WaitClaimReserved(ctx, ns, "gpu-train-0", train); err != nil {
		return err
	}

	progress("custom resources with a finalizer in namespace " + GalleryBlockedNS)
	for i := 1; i <= 3; i++ {
		if err := e.CustomResource(ctx, "demo.example.com", "Widget", "widgets", GalleryBlockedNS, fmt.Sprintf("widget-%d", i), "demo.example.com/release-quota"); err != nil {
			return err
		}
	}

	progress("deleting them all")
	deleted := time.Now()
	for _, name := range []string{"web-0", "etcd-" + GalleryDeadNode, "cache-0", "api-0", "db-0", "proxy-0", "pay-0", "data-0", "train-0"} {
		if err := e.DeletePod(ctx, ns, name, 5); err != nil {
			return err
		}
	}
	if err := e.DeletePod(ctx, ns, "batch-0", 3600); err != nil {
		return err
	}
	// The webhook goes in after the delete of pay-0 and before its kubelet's final DELETE.
	if err := e.DownWebhook(ctx, ns); err != nil {
		return err
	}
	if err := e.DeleteNamespace(ctx, GalleryBlockedNS, corev1.NamespaceFinalizersRemaining); err != nil {
		return err
	}
	if err := e.DeleteCRD(ctx, GalleryCRD, "InstanceDeletionInProgress"); err != nil {
		return err
	}
	if err := e.DownWebhookFor(ctx, "settings-guard", Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
		Resource: "configmaps", NamespaceSelector: InNamespace(GalleryGuardedNS)}); err != nil {
		return err
	}
	if err := e.DeleteNamespace(ctx, GalleryGuardedNS, corev1.NamespaceDeletionContentFailure); err != nil {
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
	if wait := time.Until(deleted.Add(40 * time.Second)); wait > 0 {
		progress(fmt.Sprintf("waiting %s for the deletions to settle", wait.Round(time.Second)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// galleryLivePods are the pods on the live node, each with its kubelet trouble.
func galleryLivePods(ns string) []*corev1.Pod {
	node := GalleryLiveNode
	cache := PodSpec(ns, "cache-0", node)
	cache.Finalizers = []string{"demo.example.com/drain-connections"}
	batch := PodSpec(ns, "batch-0", node)
	hour := int64(3600)
	batch.Spec.TerminationGracePeriodSeconds = &hour
	batch.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"}
	troubled := func(name, kubelet string) *corev1.Pod {
		p := PodSpec(ns, name, node)
		p.Labels[lab.KubeletLabel] = kubelet
		return p
	}
	pay := PodSpec(ns, "pay-0", node)
	pay.Labels[GuardLabel] = ns
	pay.Annotations = map[string]string{lab.KillDelayAnnotation: "3s"}
	train := troubled("train-0", "hang-unprepare")
	claim := "gpu-train-0"
	train.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	return []*corev1.Pod{cache, batch, pay, train,
		troubled("api-0", "hang-kill"), troubled("db-0", "fail-kill"), troubled("proxy-0", "fail-sandbox"),
		WithClaim(troubled("data-0", "hang-delete"), "data-data-0")}
}
