package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Class a: a namespace held only by its own metadata.finalizers once the
// real namespace controller has deleted the content and emptied
// spec.finalizers: FinalizerPending naming the finalizer, as for any kind.
func TestNamespaceHeldByItsOwnFinalizer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, finalizer = "owned-ns", "platform.e2e.example.com/teardown"
	if err := env.NamespaceWithFinalizer(ctx, ns, finalizer); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNamespaceFinalized(ctx, ns); err != nil {
		t.Fatal(err)
	}
	settle(t, deleted)
	r, res := diagnose(t, "why", "ns/"+ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "FinalizerPending" || top.Severity != "critical" || !strings.Contains(top.Summary, finalizer) {
		t.Fatalf("exit %d, causes %v, top %s %q; want 2 and FinalizerPending (critical) naming %s", res.code, codesOf(it), top.Severity, top.Summary, finalizer)
	}
	expectEvidence(t, top, "spec.finalizers: []", "metadata.finalizers: ["+finalizer+"]", "looks gone")
	if cmd := top.Remediation[len(top.Remediation)-1].Command; !strings.Contains(cmd, "kubectl patch namespaces "+ns) || !strings.Contains(cmd, `"op":"test"`) {
		t.Errorf("removal command: %q", cmd)
	}
}

// Class b: foreground deletion followed down a chain the garbage collector
// builds, Deployment -> ReplicaSet -> Pod, to the pod's dead node.
func TestForegroundChainToADeadNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "chain")
	const node = "dead-chain"
	if err := env.DyingNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := env.DeploymentChain(ctx, ns, "web", node); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNodeUnreachable(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Before the delete, preflight forecasts what why reports after it:
	// in the foreground the Deployment would wait on the chain; in the
	// background (the default) it would go at once.
	pr, pres := diagnose(t, "preflight", "deployment/web", "-n", ns, "--cascade=foreground")
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || len(fc.Causes) == 0 || fc.Causes[0].Code != "ForegroundDeletionBlocked" || !fc.Causes[0].Forecast ||
		!strings.HasPrefix(fc.Causes[0].Summary, "deleted with --cascade=foreground, it would wait on replicaset.apps/web-rs -> pod/web-rs-0, whose deletion would stick: node "+node+" stopped reporting") {
		t.Errorf("preflight --cascade=foreground: exit %d %+v", pres.code, fc)
	}
	if pr, pres := diagnose(t, "preflight", "deployment/web", "-n", ns); pres.code != 0 || only(t, pr).Stuck {
		t.Errorf("preflight in the background: exit %d %+v", pres.code, pr.Items)
	}
	if err := env.DeleteForeground(ctx, ns, "web", "web-rs-0"); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "web-rs-0")
	r, res := diagnose(t, "why", "deployment/web", "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "ForegroundDeletionBlocked" || top.Severity != "critical" {
		t.Fatalf("exit %d, causes %v (%s); want 2 and ForegroundDeletionBlocked (critical)", res.code, codesOf(it), top.Severity)
	}
	if !strings.Contains(top.Summary, "replicaset.apps/web-rs waits on pod/web-rs-0; pod/web-rs-0 is stuck: node "+node+" stopped reporting") {
		t.Errorf("summary: %q", top.Summary)
	}
	expectEvidence(t, top, "chain of objects waiting in foreground deletion: deployment.apps/web -> replicaset.apps/web-rs -> pod/web-rs-0")
	rs := top.BlockedBy[0]
	if rs.Object.Kind != "ReplicaSet" || codesOf(rs)[0] != "ForegroundDeletionBlocked" || len(rs.Causes[0].BlockedBy) != 1 ||
		codesOf(rs.Causes[0].BlockedBy[0])[0] != "NodeUnreachable" {
		t.Errorf("nested: %s %v", rs.Object.Kind, codesOf(rs))
	}
}

// Class c: network volumes never appear in node.status.volumesInUse; a pod
// whose kubelet stopped its containers but not its teardown names them.
func TestPodWithNetworkVolumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "nfs")
	pod := scenario.PodSpec(ns, "files-0", liveNode)
	pod.Labels[lab.KubeletLabel] = "hang-delete" // the kubelet never finishes the teardown
	if err := env.NFSVolumes(ctx, pod, "files"); err != nil {
		t.Fatal(err)
	}
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, pod.Name, 1); err != nil {
		t.Fatal(err)
	}
	var deadline time.Time
	if err := env.WaitPod(ctx, ns, pod.Name, "Failed", func(p *corev1.Pod) bool {
		deadline = p.DeletionTimestamp.Time
		return p.Status.Phase == corev1.PodFailed
	}); err != nil {
		t.Fatal(err)
	}
	settle(t, deadline)
	r, res := diagnose(t, "why", "pod/"+pod.Name, "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "VolumeTeardownPending" || !slices.Contains(codesOf(it), "CgroupCleanupPending") {
		t.Fatalf("exit %d, causes %v; want 2, VolumeTeardownPending first, CgroupCleanupPending after", res.code, codesOf(it))
	}
	for _, name := range []string{"inline nfs volume (server 198.18.0.50, path /exports/shared)", "persistentvolume pv-" + ns + "-files (nfs: server 198.18.0.51, path /exports/files)"} {
		if !strings.Contains(top.Summary, name) {
			t.Errorf("summary lacks %q: %q", name, top.Summary)
		}
	}
	expectChecks(t, it, map[string]string{"volumes unmounted": "unknown", "containers stopped": "pass", "terminal phase reported": "pass"})
}

// Class d: ordered namespace deletion deletes pods first and leaves the
// rest until they are gone. A namespace whose pods are inside their grace
// period is progressing (exit 0) whatever else it holds; it is stuck once a
// pod is, and then the pod is what it names.
func TestNamespaceWaitingForItsPods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	build := func(ns string, pods []*corev1.Pod) time.Time {
		t.Helper()
		namespace(t, ns)
		for _, p := range pods {
			if err := env.RunningPod(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "export", Finalizers: []string{"gone.e2e.example.com/export"}}}
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if err := env.WaitPod(ctx, ns, p.Name, "deleted by the namespace controller", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }); err != nil {
				t.Fatal(err)
			}
		}
		return deleted
	}
	slow := func(ns, name string) *corev1.Pod {
		p := scenario.PodSpec(ns, name, liveNode)
		grace := int64(600)
		p.Spec.TerminationGracePeriodSeconds = &grace
		p.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"} // shuts down slowly, inside its grace period
		return p
	}
	// Content not deleted yet is never blamed; the configmap whose
	// finalizer's controller is gone is forecast, as information.
	notBlamed := func(it item) bool {
		for _, c := range it.Causes {
			if (c.Code == "FinalizerPending" || c.Code == "NamespaceContentRemaining") && c.Severity != "info" {
				return false
			}
		}
		return true
	}

	settle(t, build("ordered", []*corev1.Pod{slow("ordered", "db-0"), slow("ordered", "db-1")}))
	r, res := diagnose(t, "why", "ns/ordered")
	it := only(t, r)
	if res.code != 0 || it.Stuck || !slices.Equal(codesOf(it), []string{"FinalizerPending", "WithinGracePeriod"}) || !notBlamed(it) {
		t.Fatalf("exit %d, stuck %t, causes %v; want 0, not stuck, the forecast, WithinGracePeriod and nothing blamed on the content not deleted yet", res.code, it.Stuck, codesOf(it))
	}
	if s := it.Causes[0].Summary; !strings.HasPrefix(s, "forecast: once the pods are gone, 1 object carrying gone.e2e.example.com/export will be deleted, and no controller that could remove it is found") {
		t.Errorf("forecast: %q", s)
	}
	if s := it.Causes[1].Summary; !strings.Contains(s, "2 pods are terminating normally") || !strings.Contains(s, "grace period ends in") {
		t.Errorf("summary: %q", s)
	}
	if r.Server == nil || !strings.HasPrefix(r.Server.GitVersion, "v1.36.") {
		t.Errorf("report.server: %+v", r.Server)
	}
	if res := run(t, "list", "-A", "--stuck-only", "-o", "name"); strings.Contains(res.stdout, "namespace/ordered\n") {
		t.Errorf("list -A --stuck-only lists the progressing namespace: %q", res.stdout)
	}

	// A pod whose containers never stop: now the namespace is stuck on it.
	hung := scenario.PodSpec("ordered-stuck", "worker-0", liveNode)
	one := int64(1)
	hung.Spec.TerminationGracePeriodSeconds = &one
	hung.Labels[lab.KubeletLabel] = "hang-kill"
	build("ordered-stuck", []*corev1.Pod{hung})
	p, err := env.Client.CoreV1().Pods("ordered-stuck").Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, p.DeletionTimestamp.Time)
	r, res = diagnose(t, "why", "ns/ordered-stuck")
	it = only(t, r)
	if res.code != 2 || !it.Stuck || codesOf(it)[0] != "PodStuckTerminating" || !notBlamed(it) {
		t.Fatalf("exit %d, stuck %t, causes %v; want 2, PodStuckTerminating first and nothing blamed on the content not deleted yet", res.code, it.Stuck, codesOf(it))
	}
	if nested := it.Causes[0].BlockedBy; len(nested) != 1 || codesOf(nested[0])[0] != "ContainersStillRunning" {
		t.Errorf("nested: %+v", nested)
	}
}

// Issue 23: a live controller that cannot finish a deletion says why in the
// object; the report quotes it instead of "looks healthy: read its logs".
// The controller (a ready Deployment named like the finalizer) is alive in
// every variant: what it says is each operator's shape of failure.
func TestTheControllerSaysWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "says")
	const group = "says.e2e.example.com"
	if err := env.CRD(ctx, group, "Bucket", "buckets"); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, ns, "bucketctl", liveNode); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	cond := func(typ, status, reason, message string) map[string]any {
		c := map[string]any{"type": typ, "reason": reason, "message": message, "lastTransitionTime": since}
		if status != "" {
			c["status"] = status
		}
		return c
	}
	const finalizer = "bucketctl.says.e2e.example.com/cleanup"
	cases := []struct {
		name string
		c    scenario.Complaint
		want string
		says string // before the delete; "" when nothing is said
	}{
		{"synced", scenario.Complaint{Conditions: []map[string]any{cond("Ready", "False", "Deleting", ""), cond("Synced", "False", "ReconcileError", "cannot delete bucket: AccessDenied: not authorized")}},
			"it reports Synced=False (ReconcileError): cannot delete bucket: AccessDenied", "Synced=False (ReconcileError): cannot delete bucket: AccessDenied"},
		{"deletion-error", scenario.Complaint{Conditions: []map[string]any{cond("DeletionError", "", "", "failed to delete resources: connection refused")}},
			"it reports DeletionError: failed to delete resources", "DeletionError: failed to delete resources"},
		{"event", scenario.Complaint{EventReason: "CannotDeleteExternalResource", Message: "InvalidClientTokenId: the security token is invalid", Component: "bucketctl"},
			"it reports CannotDeleteExternalResource: InvalidClientTokenId", "CannotDeleteExternalResource: InvalidClientTokenId"},
		{"quiet", scenario.Complaint{Conditions: []map[string]any{cond("Ready", "False", "Deleting", "deleting")}},
			"looks healthy but has not removed it", ""},
	}
	for _, tc := range cases {
		if err := env.ComplainingResource(ctx, group, "Bucket", "buckets", ns, tc.name, finalizer, tc.c); err != nil {
			t.Fatal(err)
		}
		// Before the delete: a failure its live controller reports now,
		// the deletion may stick on (exit 2); nothing said, it is clear.
		r, res := diagnose(t, "preflight", "buckets/"+tc.name, "-n", ns)
		fc := only(t, r)
		if tc.says == "" && (res.code != 0 || fc.Stuck) ||
			tc.says != "" && (res.code != 2 || fc.Severity != "warning" || !strings.Contains(fc.Causes[0].Summary, "reports a failure about the object now, "+tc.says)) {
			t.Errorf("%s: preflight exit %d %+v", tc.name, res.code, fc.Causes)
		}
		if err := env.DeleteCustomResource(ctx, group, "buckets", ns, tc.name); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(31 * time.Second) // controllers act within seconds: past that, it is stuck
	for _, tc := range cases {
		r, res := diagnose(t, "why", "buckets/"+tc.name, "-n", ns)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != "FinalizerPending" || !strings.Contains(top.Summary, tc.want) {
			t.Errorf("%s: exit %d, %s %s: %s; want exit 2 and a summary saying %q", tc.name, res.code, top.Code, top.Severity, top.Summary, tc.want)
		}
		if tc.name != "quiet" && (top.Severity != "critical" || !strings.HasPrefix(top.Remediation[0].Command, "kubectl describe buckets."+group+" "+tc.name)) {
			t.Errorf("%s: %s, first step %+v", tc.name, top.Severity, top.Remediation[0])
		}
	}
}

// Issue 23: an owner in foreground deletion whose chain ends in pods inside
// their grace period is progressing (exit 0), as the garbage collector, the
// replicaset controller and a live kubelet leave it.
func TestForegroundChainInsideGracePeriods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "graceful")
	if err := env.GracefulDeploymentChain(ctx, ns, "web", liveNode, 600); err != nil {
		t.Fatal(err)
	}
	if err := env.DeleteForeground(ctx, ns, "web", "web-rs-0"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(31 * time.Second) // the owner is past its own (zero) grace period and settling
	r, res := diagnose(t, "why", "deployment/web", "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 0 || it.Stuck || top.Code != "ForegroundDeletionBlocked" || top.Severity != "info" || !strings.HasPrefix(top.Summary, "progressing") {
		t.Errorf("exit %d, stuck %v, %s %s: %s; want exit 0 and a progressing chain", res.code, it.Stuck, top.Code, top.Severity, top.Summary)
	}
	rs := top.BlockedBy[0]
	if len(rs.Causes) == 0 || len(rs.Causes[0].BlockedBy) != 1 || codesOf(rs.Causes[0].BlockedBy[0])[0] != "WithinGracePeriod" {
		t.Errorf("the chain's leaf: %+v", rs)
	}
}

// Issue 23: what blocks the controller. A node held by Karpenter's drain
// finalizer cannot be emptied: its pod is under a PodDisruptionBudget the
// real disruption controller computes at 0 disruptions allowed; another pod
// asks not to be disrupted. The report names the pods and what refuses
// their eviction.
func TestNodeDrainBlockedByABudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "drain")
	const node, finalizer = "drain-node", "karpenter.sh/termination"
	if err := env.LiveNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.ReleaseNode(context.Background(), node) })
	db := scenario.PodSpec(ns, "db-0", node)
	db.Labels = map[string]string{"app": "db"}
	if err := env.BudgetedPod(ctx, db, "db"); err != nil {
		t.Fatal(err)
	}
	batch := scenario.PodSpec(ns, "batch-0", node)
	batch.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
	if err := env.RunningPod(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := env.HoldNode(ctx, node, finalizer); err != nil {
		t.Fatal(err)
	}
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "node/"+node)
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || len(fc.Causes) == 0 || fc.Causes[0].Code != "NodeDrainBlocked" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: the drain of node "+node+" cannot evict 2 pods;") {
		t.Errorf("preflight: exit %d %+v", pres.code, fc)
	}
	if err := env.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(31 * time.Second) // the drain controller would act within seconds
	r, res := diagnose(t, "why", "node/"+node)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "NodeDrainBlocked" || top.Severity != "critical" || !strings.Contains(top.Summary, "the drain of node "+node+" cannot evict 2 pods;") {
		t.Fatalf("exit %d, %v %s: %s; want exit 2 and NodeDrainBlocked (critical)", res.code, codesOf(it), top.Severity, top.Summary)
	}
	expectEvidence(t, top, "pod "+ns+"/db-0: PodDisruptionBudget "+ns+"/db allows 0 disruptions (currentHealthy 1, desiredHealthy 1, expectedPods 1)",
		"pod "+ns+"/batch-0: annotation karpenter.sh/do-not-disrupt=true")
	if top.Remediation[0].Command != "kubectl get poddisruptionbudget db -n "+ns+" -o wide" {
		t.Errorf("first step: %+v", top.Remediation[0])
	}
	// The budget allows a disruption once a second replica is Ready: the
	// drain is then only waiting.
	db1 := scenario.PodSpec(ns, "db-1", liveNode)
	db1.Labels = map[string]string{"app": "db"}
	if err := env.RunningPod(ctx, db1); err != nil {
		t.Fatal(err)
	}
	if err := scenario.Until(ctx, time.Minute, "budget db allows 1", func(ctx context.Context) (bool, error) {
		pdb, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && pdb.Status.DisruptionsAllowed == 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	r, _ = diagnose(t, "why", "node/"+node)
	if top := only(t, r).Causes[0]; strings.Contains(strings.Join(top.Evidence, "\n"), "db-0: PodDisruptionBudget") || !strings.Contains(top.Summary, "cannot evict pod "+ns+"/batch-0") {
		t.Errorf("with the budget allowing one: %s: %s %q", top.Code, top.Summary, top.Evidence)
	}
}

// Issue 23: the controller's own finalizer-removal write broken by
// admission. The real job controller cannot remove
// batch.kubernetes.io/job-tracking from a finished pod: a mutating webhook
// (served on 127.0.0.1, failurePolicy Ignore, since it answers) turns its
// patch into an invalid update of the pod's resources. The pod, deleted,
// stays Terminating; the report names the webhook.
func TestMutatingWebhookBreaksTheFinalizerRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "mutated")
	stop, err := env.ResourcesMutator(ctx, "mutated")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	pod, err := env.FinishedJobPod(ctx, ns, "report", liveNode, "mutated")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the job controller has tried, and failed, to remove its finalizer
	got, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil || !slices.Contains(got.Finalizers, "batch.kubernetes.io/job-tracking") {
		t.Fatalf("the job controller removed its finalizer through the webhook (%v): %v", err, got.Finalizers)
	}
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "pod/"+pod, "-n", ns)
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || len(fc.Causes) == 0 || fc.Causes[0].Code != "AdmissionWebhookDenied" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: mutating webhook defaults.mutated.example.com (mutated) changes UPDATE pods") {
		t.Errorf("preflight: exit %d %+v", pres.code, fc)
	}
	if err := env.DeletePod(ctx, ns, pod, 30); err != nil {
		t.Fatal(err)
	}
	time.Sleep(31 * time.Second)
	r, res := diagnose(t, "why", "pod/"+pod, "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "AdmissionWebhookDenied" || !strings.Contains(top.Summary, "mutating webhook defaults.mutated.example.com (mutated) changes UPDATE pods") {
		t.Fatalf("exit %d, %v %s: %s; want exit 2 and the mutating webhook first", res.code, codesOf(it), top.Severity, top.Summary)
	}
	if !slices.Contains(codesOf(it), "FinalizerPending") {
		t.Errorf("the finalizer itself is not reported: %v", codesOf(it))
	}
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "mutated", metav1.DeleteOptions{})
	})
}

// Issue 23: what blocks the snapshot-controller. A claim held by
// pvc-as-source-protection while a VolumeSnapshot taken from it cannot
// finish; a VolumeSnapshot held by volumesnapshot-as-source-protection while
// a claim restored from it stays Pending. Each report names the other object.
func TestSnapshotSourceInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "snapsrc")
	if err := env.VolumeSnapshotAPI(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.SnapshottedClaim(ctx, ns, "data", "nightly", `VolumeSnapshotClass "fast" not found`); err != nil {
		t.Fatal(err)
	}
	if err := env.RestoringSnapshot(ctx, ns, "weekly", "restore-1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(31 * time.Second)
	for _, tc := range []struct{ args, severity, summary string }{
		{"pvc/data", "critical", `VolumeSnapshot nightly, taken from the claim, cannot finish: VolumeSnapshotClass "fast" not found`},
		{"volumesnapshots.snapshot.storage.k8s.io/weekly", "warning", "claim restore-1 is still being restored from the snapshot"},
	} {
		r, res := diagnose(t, "why", tc.args, "-n", ns)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != "SnapshotSourceInUse" || top.Severity != tc.severity || !strings.Contains(top.Summary, tc.summary) {
			t.Errorf("%s: exit %d, %v %s: %s; want exit 2, SnapshotSourceInUse (%s) saying %q", tc.args, res.code, codesOf(it), top.Severity, top.Summary, tc.severity, tc.summary)
		}
	}
	// Released as the snapshot-controller would, so the namespace can go.
	t.Cleanup(func() {
		ctx := context.Background()
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = env.Client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType, patch, metav1.PatchOptions{})
		_, _ = env.Dynamic.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}).Namespace(ns).Patch(ctx, "weekly", types.MergePatchType, patch, metav1.PatchOptions{})
	})
}
