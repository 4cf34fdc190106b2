package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// A claim a running pod mounts: preflight says its deletion would stick
// (PVCInUse), and why says the same once it is deleted; a claim no pod uses
// is clear, and its deletion completes.
func TestPreflightClaimInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "preflight-claims")
	for _, name := range []string{"data", "spare"} {
		if err := env.Claim(ctx, ns, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.RunningPod(ctx, scenario.WithClaim(scenario.PodSpec(ns, "db-0", liveNode), "data")); err != nil {
		t.Fatal(err)
	}

	r, res := diagnose(t, "preflight", "pvc/data", "-n", ns)
	fc := only(t, r)
	if res.code != 2 || !fc.Forecast || !fc.Stuck || codesOf(fc)[0] != "PVCInUse" || fc.Causes[0].Severity != "warning" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: 1 pod still uses the claim: db-0") {
		t.Errorf("preflight of a claim in use: exit %d %+v", res.code, fc)
	}
	if r, res := diagnose(t, "preflight", "pvc/spare", "-n", ns); res.code != 0 || only(t, r).Stuck || len(only(t, r).Causes) != 0 {
		t.Errorf("preflight of a claim no pod uses: exit %d %+v", res.code, r.Items)
	}
	// A type alone: every claim of the namespace.
	r, res = diagnose(t, "preflight", "pvc", "-n", ns)
	stuck := map[string]bool{}
	for _, it := range r.Items {
		stuck[it.Object.Name] = it.Stuck
	}
	if res.code != 2 || len(stuck) != 2 || !stuck["data"] || stuck["spare"] {
		t.Errorf("preflight pvc -n %s: exit %d, stuck by name %v", ns, res.code, stuck)
	}

	for _, name := range []string{"data", "spare"} {
		if err := env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if res := run(t, "wait", "pvc/spare", "-n", ns, "--timeout", "1m", "--ignore-not-found"); res.code != 0 {
		t.Errorf("the clear claim's deletion: exit %d %s", res.code, res.stderr)
	}
	settle(t, time.Now())
	r, res = diagnose(t, "why", "pvc/data", "-n", ns)
	if it := only(t, r); res.code != 2 || codesOf(it)[0] != "PVCInUse" || it.Forecast {
		t.Errorf("why after the delete: exit %d %v", res.code, codesOf(it))
	}
}

// An operator deleted with its own custom resources: the namespace holds
// both, and under ordered namespace deletion (the lab's release) its pods go
// first, so nothing removes the resources' finalizer. preflight of the
// namespace says so, though the controller is alive now; preflight of the
// resource alone is clear (its controller stays); why agrees after the delete.
func TestPreflightOperatorInItsOwnNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "preflight-operator")
	const group = "tenant.io"
	if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, ns, "tenant-controller", liveNode); err != nil {
		t.Fatal(err)
	}
	if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", ns, "g1", "gizmos.tenant.io/cleanup"); err != nil {
		t.Fatal(err)
	}
	r, res := diagnose(t, "preflight", "ns/"+ns)
	fc := only(t, r)
	if res.code != 2 || codesOf(fc)[0] != "FinalizerPending" || fc.Causes[0].Severity != "critical" ||
		!strings.Contains(fc.Causes[0].Summary, "whose controller (deployment "+ns+"/tenant-controller) runs in the namespace being deleted; the namespace controller deletes the pods first") {
		t.Errorf("preflight of the namespace: exit %d %+v", res.code, fc)
	}
	if r, res := diagnose(t, "preflight", "gizmos."+group+"/g1", "-n", ns); res.code != 0 || only(t, r).Stuck {
		t.Errorf("preflight of the resource alone: exit %d %+v", res.code, r.Items)
	}
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceFinalizersRemaining); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now()) // see settle
	r, res = diagnose(t, "why", "ns/"+ns)
	if it := only(t, r); res.code != 2 || codesOf(it)[0] != "FinalizerPending" {
		t.Errorf("why after the delete: exit %d %v", res.code, codesOf(it))
	}
}

// An operator uninstalled before its custom resources: preflight of its
// Deployment, and of the namespace it runs in, says that the resources
// elsewhere carrying its finalizer would be left with no one to remove it;
// once it is uninstalled and a resource deleted, why says the same of the
// resource.
func TestPreflightOperatorUninstalledFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ops := namespace(t, "preflight-fleet-system")
	apps := namespace(t, "preflight-fleet-apps")
	const group = "fleet.io"
	if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, ops, "fleet-controller", liveNode); err != nil {
		t.Fatal(err)
	}
	if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", apps, "g1", "gizmos.fleet.io/cleanup"); err != nil {
		t.Fatal(err)
	}
	for _, target := range [][]string{{"deploy/fleet-controller", "-n", ops}, {"ns/" + ops}} {
		r, res := diagnose(t, append([]string{"preflight"}, target...)...)
		fc := only(t, r)
		if want := "once it is deleted, nothing would remove finalizer gizmos.fleet.io/cleanup from 1 object (gizmo.fleet.io/g1 -n " + apps + "): deployment " + ops + "/fleet-controller, which looks like its controller, goes with it"; res.code != 2 || codesOf(fc)[0] != "FinalizerPending" || !strings.HasPrefix(fc.Causes[0].Summary, want) {
			t.Errorf("preflight %v: exit %d %+v, want %q", target, res.code, fc, want)
		}
	}
	// Uninstalled first, then the resource deleted: it sticks, as foreseen.
	if err := env.Client.AppsV1().Deployments(ops).Delete(ctx, "fleet-controller", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := run(t, "wait", "deploy/fleet-controller", "-n", ops, "--timeout", "1m", "--ignore-not-found"); res.code != 0 {
		t.Fatalf("uninstall: exit %d %s", res.code, res.stderr)
	}
	if err := env.DeleteCustomResource(ctx, group, "gizmos", apps, "g1"); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	r, res := diagnose(t, "why", "gizmos."+group+"/g1", "-n", apps)
	if it := only(t, r); res.code != 2 || codesOf(it)[0] != "FinalizerPending" || !strings.Contains(it.Causes[0].Summary, "no controller that could remove gizmos.fleet.io/cleanup is found") {
		t.Errorf("why after the uninstall and the delete: exit %d %v %q", res.code, codesOf(it), it.Causes[0].Summary)
	}
}

// The controls: for each class a preflight forecasts as stuck, the same
// setting without the blocker is clear (exit 0, nothing that would hold
// it), and its deletion, sent as preflight was asked about it, completes.
// The test stands in only for a controller the lab does not run (an
// operator removing its finalizer, a drain controller evicting).
func TestPreflightControlsAreClearAndComplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wouldBeClear := func(t *testing.T, args ...string) {
		t.Helper()
		r, res := diagnose(t, append([]string{"preflight"}, args...)...)
		if it := only(t, r); res.code != 0 || !it.Forecast || it.Stuck || len(it.Causes) > 0 && it.Causes[0].Severity != "info" {
			t.Errorf("preflight %v: exit %d %+v", args, res.code, it)
		}
	}
	gone := func(t *testing.T, args ...string) {
		t.Helper()
		if res := run(t, append([]string{"wait", "--timeout", "2m", "--ignore-not-found"}, args...)...); res.code != 0 {
			t.Errorf("wait %v: exit %d %s", args, res.code, res.stderr)
		}
	}

	// A finalizer whose controller is there, and whose removal no webhook
	// intercepts (the controls of a finalizer with no controller and of a
	// mutating webhook breaking its removal); its pod on a live node (of a
	// pod on a dead one).
	t.Run("a job's pod", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "preflight-job")
		pod, err := env.RunningJobPod(ctx, ns, "report", liveNode, "unguarded")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(pod.Finalizers, "batch.kubernetes.io/job-tracking") {
			t.Fatalf("the job controller's finalizer is missing: %v", pod.Finalizers)
		}
		wouldBeClear(t, "pod/"+pod.Name, "-n", ns)
		if err := env.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "pod/"+pod.Name, "-n", ns)
	})

	// A namespace no webhook guards, holding a pod on a live node (the
	// controls of a webhook refusing its deletes and of a pod on a dead node).
	t.Run("a namespace", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "preflight-calm")
		if err := env.RunningPod(ctx, scenario.PodSpec(ns, "web-0", liveNode)); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		wouldBeClear(t, "ns/"+ns)
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "ns/"+ns)
	})

	// A foreground chain whose pod's node is alive (of one on a dead node).
	t.Run("a foreground chain", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "preflight-chain")
		if err := env.GracefulDeploymentChain(ctx, ns, "web", liveNode, 1); err != nil {
			t.Fatal(err)
		}
		wouldBeClear(t, "deployment/web", "-n", ns, "--cascade=foreground")
		fg := metav1.DeletePropagationForeground
		if err := env.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		gone(t, "deployment/web", "-n", ns)
	})

	// An operator uninstalled after its custom resources (of one
	// uninstalled first); a CRD whose instances no finalizer holds.
	t.Run("an operator uninstalled last", func(t *testing.T) {
		t.Parallel()
		ops := namespace(t, "preflight-orderly-system")
		apps := namespace(t, "preflight-orderly-apps")
		const group, finalizer = "orderly.e2e.example.com", "gizmos.orderly.e2e.example.com/cleanup"
		if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
			t.Fatal(err)
		}
		if err := env.Controller(ctx, ops, "orderly-controller", liveNode); err != nil {
			t.Fatal(err)
		}
		if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", apps, "g1", finalizer); err != nil {
			t.Fatal(err)
		}
		wouldBeClear(t, "gizmos."+group+"/g1", "-n", apps) // its controller is alive
		if err := env.DeleteCustomResource(ctx, group, "gizmos", apps, "g1"); err != nil {
			t.Fatal(err)
		}
		// The operator finishes its cleanup and removes its finalizer.
		gizmos := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}).Namespace(apps)
		if _, err := gizmos.Patch(ctx, "g1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "gizmos."+group+"/g1", "-n", apps)
		wouldBeClear(t, "deploy/orderly-controller", "-n", ops)
		if err := env.Client.AppsV1().Deployments(ops).Delete(ctx, "orderly-controller", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "deploy/orderly-controller", "-n", ops)
		if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", apps, "g2"); err != nil {
			t.Fatal(err)
		}
		wouldBeClear(t, "crd/gizmos."+group)
		if err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Delete(ctx, "gizmos."+group, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "crd/gizmos."+group)
	})

	// A node whose pods no budget protects (of one a budget would keep):
	// the drain controller evicts them and removes its finalizer.
	t.Run("a node drain", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "preflight-drain")
		const node, finalizer = "drain-free", "karpenter.sh/termination"
		if err := env.LiveNode(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.ReleaseNode(context.Background(), node) })
		if err := env.RunningPod(ctx, scenario.PodSpec(ns, "batch-0", node)); err != nil {
			t.Fatal(err)
		}
		if err := env.HoldNode(ctx, node, finalizer); err != nil {
			t.Fatal(err)
		}
		wouldBeClear(t, "node/"+node)
		if err := env.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "batch-0", Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		gone(t, "pod/batch-0", "-n", ns)
		if err := env.ReleaseNode(ctx, node); err != nil {
			t.Fatal(err)
		}
		gone(t, "node/"+node)
	})
}

// A Helm chart that writes the cloud's load-balancer cleanup finalizer on a
// ClusterIP Service (aqua-helm's envoy Service), in a cluster where no
// service controller runs (the lab's, as a cluster without a cloud
// provider): preflight says its deletion would stick, and why agrees.
func TestPreflightLoadBalancerFinalizerWithoutAServiceController(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "preflight-envoy")
	const finalizer = "service.kubernetes.io/load-balancer-cleanup"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "envoy", Namespace: ns, Finalizers: []string{finalizer}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "envoy"}, Ports: []corev1.ServicePort{{Port: 8443}}}}
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().Services(ns).Patch(context.Background(), "envoy", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	time.Sleep(31 * time.Second) // a service controller would have removed it by now
	want := "no cloud-controller-manager acts on it: the cloud service controller removes " + finalizer + " from a Service of type ClusterIP at once"
	r, res := diagnose(t, "preflight", "svc/envoy", "-n", ns)
	if fc := only(t, r); res.code != 2 || !fc.Forecast || codesOf(fc)[0] != "LoadBalancerCleanupPending" || fc.Causes[0].Severity != "critical" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: "+want) {
		t.Errorf("preflight: exit %d %+v", res.code, fc)
	}
	if err := env.Client.CoreV1().Services(ns).Delete(ctx, "envoy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	r, res = diagnose(t, "why", "svc/envoy", "-n", ns)
	if it := only(t, r); res.code != 2 || codesOf(it)[0] != "LoadBalancerCleanupPending" || it.Causes[0].Severity != "critical" || !strings.HasPrefix(it.Causes[0].Summary, want) {
		t.Errorf("why after the delete: exit %d %v %+v", res.code, codesOf(it), it.Causes)
	}
}

// A CSI volume still attached whose driver's controller was removed
// (external-provisioner#576): its attacher's leader lease is no longer
// renewed, so preflight says its deletion would stick, and why agrees; a
// volume whose attacher renews its lease is clear.
func TestPreflightVolumeWhoseAttacherIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "preflight-csi-drivers")
	if err := env.AttachedCSIVolume(ctx, "pv-gone-attacher", "pd.csi.gone.example.com", liveNode, ns, time.Now().Add(-20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.ReleaseCSIVolume(context.Background(), "pv-gone-attacher") })
	if err := env.AttachedCSIVolume(ctx, "pv-live-attacher", "pd.csi.live.example.com", liveNode, ns, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.ReleaseCSIVolume(context.Background(), "pv-live-attacher") })
	want := "the volume is still attached (1 attachment) and no detach error is reported: the external-attacher of driver pd.csi.gone.example.com is not running (its leader lease is not renewed)"
	r, res := diagnose(t, "preflight", "pv/pv-gone-attacher")
	if fc := only(t, r); res.code != 2 || codesOf(fc)[0] != "VolumeDetachFailed" || fc.Causes[0].Severity != "critical" || !strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: "+want) ||
		!hasEvidence(fc.Causes[0], "lease "+ns+"/external-attacher-leader-pd-csi-gone-example-com: holder \"csi-controller-0\", renewed 20m") {
		t.Errorf("preflight: exit %d %+v", res.code, fc.Causes)
	}
	if r, res := diagnose(t, "preflight", "pv/pv-live-attacher"); res.code != 0 || only(t, r).Stuck {
		t.Errorf("preflight with the attacher running: exit %d %+v", res.code, only(t, r).Causes)
	}
	if err := env.Client.CoreV1().PersistentVolumes().Delete(ctx, "pv-gone-attacher", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	r, res = diagnose(t, "why", "pv/pv-gone-attacher")
	if it := only(t, r); res.code != 2 || codesOf(it)[0] != "VolumeDetachFailed" || it.Causes[0].Severity != "critical" || !strings.HasPrefix(it.Causes[0].Summary, want) {
		t.Errorf("why after the delete: exit %d %+v", res.code, it.Causes)
	}
}
