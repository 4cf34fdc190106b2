package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

func TestPodOnDeadNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "dead-node")
	if err := env.DyingNode(ctx, "dead-1"); err != nil {
		t.Fatal(err)
	}
	if err := env.RunOnDyingNode(ctx, scenario.PodSpec(ns, "web-0", "dead-1")); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
		t.Fatal(err)
	}
	// The real node lifecycle controller gives up on the node.
	if err := env.WaitNodeUnreachable(ctx, "dead-1"); err != nil {
		t.Fatal(err)
	}

	r, res := diagnose(t, "why", "pod/web-0", "-n", ns)
	if res.code != 2 {
		t.Errorf("exit code = %d, want 2 (stuck); stderr %s", res.code, res.stderr)
	}
	it := only(t, r)
	if got := codesOf(it); len(got) == 0 || got[0] != "NodeUnreachable" {
		t.Fatalf("causes = %v, want NodeUnreachable first", got)
	}
	top := it.Causes[0]
	if !it.Stuck || top.Severity != "critical" {
		t.Errorf("stuck/severity = %v/%s", it.Stuck, top.Severity)
	}
	expectEvidence(t, top, "lease kube-node-lease/dead-1: spec.renewTime", "Ready=Unknown", "node.kubernetes.io/unreachable:NoExecute")
	if slices.Contains(codesOf(it), "ContainersStillRunning") {
		t.Errorf("running containers are a symptom of the dead node, not a cause of their own: %v", codesOf(it))
	}
	// The final DELETE waits on the rows above: pending (not sent yet), not an admission failure.
	expectChecks(t, it, map[string]string{"node alive": "fail", "containers stopped": "fail", "finalizers cleared": "pass", "grace period over": "pass", "final delete admitted": "pending"})
	if it.Object.Kind != "Pod" || it.Object.Namespace != ns || it.Object.UID == "" || it.GracePeriodSeconds != 1 {
		t.Errorf("object/grace = %+v / %d", it.Object, it.GracePeriodSeconds)
	}

	// The same through the table, as an operator reads it: concise (the
	// first, safe step and how risky the rest get), every step with -o wide.
	table := run(t, "why", "pod/web-0", "-n", ns)
	for _, want := range []string{"pod/web-0 -n " + ns, "critical NodeUnreachable", "$ kubectl get node", "3 more steps, up to risk destructive: -o wide"} {
		if !strings.Contains(table.prose(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.stdout)
		}
	}
	// A runbook names the step it trusts by its id (docs/runbooks.md).
	picked := runSuggested(t, `kubectl terminating why pod/web-0 -n `+ns+` -o json |
  jq -r '.items[].causes[] | select(.code == "NodeUnreachable") | .remediation[] | select(.id == "check-node") | .command'`)
	if picked.stdout != "kubectl get node dead-1 -o wide\n" {
		t.Errorf("the check-node step by its id: %q (stderr %q)", picked.stdout, picked.stderr)
	}
	wide := run(t, "why", "pod/web-0", "-n", ns, "-o", "wide")
	for _, want := range []string{"out-of-service", "--grace-period=0 --force", "risk: destructive: "} {
		if !strings.Contains(wide.prose(), want) {
			t.Errorf("-o wide lacks %q:\n%s", want, wide.stdout)
		}
	}
}

func TestPodHeldByFinalizerAfterFinalDelete(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "finalizer")
	// The fake kubelet stops the containers and sends the final grace-0 DELETE (state D).
	settle(t, heldByFinalizer(t, ns, "cache-0", "example.com/drain"))

	r, res := diagnose(t, "why", "pods", "cache-0", "-n", ns)
	if res.code != 2 {
		t.Errorf("exit code = %d, want 2", res.code)
	}
	it := only(t, r)
	if got := codesOf(it); !slices.Equal(got, []string{"FinalizerPending"}) {
		t.Fatalf("causes = %v, want [FinalizerPending]", got)
	}
	if !hasEvidence(it.Causes[0], "example.com/drain") {
		t.Errorf("evidence lacks the finalizer: %q", it.Causes[0].Evidence)
	}
	expectChecks(t, it, map[string]string{"node alive": "pass", "containers stopped": "pass", "terminal phase reported": "pass", "final delete admitted": "pass", "finalizers cleared": "fail"})
	last := it.Causes[0].Remediation[len(it.Causes[0].Remediation)-1]
	if !strings.Contains(last.Command, "/metadata/finalizers") || last.RiskLevel != "high" || !strings.HasPrefix(last.Risk, "high: ") {
		t.Errorf("removing a finalizer must come last, with its risk: %+v", last)
	}
}

func TestPodInsideGracePeriodIsNotStuck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "grace")
	pod := scenario.PodSpec(ns, "batch-0", liveNode)
	hour := int64(3600)
	pod.Spec.TerminationGracePeriodSeconds = &hour
	pod.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"}
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "batch-0", deleteOpts(nil)); err != nil {
		t.Fatal(err)
	}
	r, res := diagnose(t, "why", "pod/batch-0", "-n", ns)
	if res.code != 0 {
		t.Errorf("exit code = %d, want 0: inside its grace period nothing is stuck", res.code)
	}
	it := only(t, r)
	if it.Stuck || it.Severity != "info" || codesOf(it)[0] != "WithinGracePeriod" {
		t.Fatalf("stuck %v severity %s causes %v", it.Stuck, it.Severity, codesOf(it))
	}
	if it.GracePeriodSeconds != 3600 || it.OverdueSeconds != 0 || it.TerminatingSeconds > 60 {
		t.Errorf("grace %d overdue %d terminating %d", it.GracePeriodSeconds, it.OverdueSeconds, it.TerminatingSeconds)
	}
	// Not yet, as expected: pending, not fail.
	expectChecks(t, it, map[string]string{"grace period over": "pending", "containers stopped": "pending", "final delete admitted": "pending"})
}

func TestPodWhoseKubeletNeverKills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "hang-kill")
	pod := scenario.PodSpec(ns, "api-0", liveNode)
	pod.Labels[lab.KubeletLabel] = "hang-kill"
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "api-0", 1); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "api-0")
	// Just past the deadline: the kubelet may still be at it.
	r, res := diagnose(t, "why", "pod/api-0", "-n", ns)
	it := only(t, r)
	if res.code != 0 || it.Stuck || codesOf(it)[0] != "GracePeriodOverrun" {
		t.Fatalf("just past the deadline: exit %d stuck %v causes %v, want 0/false/GracePeriodOverrun", res.code, it.Stuck, codesOf(it))
	}
	settle(t, time.Now())
	r, res = diagnose(t, "why", "pod/api-0", "-n", ns)
	it = only(t, r)
	if res.code != 2 || !it.Stuck || codesOf(it)[0] != "ContainersStillRunning" {
		t.Fatalf("long past the deadline: exit %d stuck %v causes %v, want 2/true/ContainersStillRunning", res.code, it.Stuck, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], "status.containerStatuses[app].state.running") {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
}

func TestPodWhoseKubeletNeverSendsTheFinalDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "hang-delete")
	pod := scenario.PodSpec(ns, "job-0", liveNode)
	pod.Labels[lab.KubeletLabel] = "hang-delete"
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "job-0", 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitPod(ctx, ns, "job-0", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())
	r, res := diagnose(t, "why", "pod/job-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "CgroupCleanupPending" {
		t.Fatalf("exit %d causes %v, want 2 and CgroupCleanupPending (state C)", res.code, codesOf(it))
	}
	// Nothing refuses the final DELETE: the kubelet has not sent it (it waits on the cgroup, which the API does not show).
	expectChecks(t, it, map[string]string{"containers stopped": "pass", "terminal phase reported": "pass", "final delete admitted": "pending"})
}

func TestPodThatWasDeletedNormally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "normal")
	if err := env.RunningPod(ctx, scenario.PodSpec(ns, "ok-0", liveNode)); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "ok-0", 1); err != nil {
		t.Fatal(err)
	}
	// The fake kubelet kills the containers and sends the final DELETE: the pod goes away.
	if err := env.WaitGone(ctx, ns, "ok-0"); err != nil {
		t.Fatal(err)
	}
	res := run(t, "why", "pod/ok-0", "-n", ns)
	if res.code != 1 || !strings.Contains(res.stderr, `pods "ok-0" not found`) || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
		t.Errorf("a missing object: exit %d, stderr %q; want 1 and one line", res.code, res.stderr)
	}
	r, res := diagnose(t, "why", "pod/ok-0", "-n", ns, "--ignore-not-found")
	if res.code != 0 || len(r.Items) != 0 {
		t.Errorf("--ignore-not-found: exit %d, %d items", res.code, len(r.Items))
	}
}

func TestPodWhoseRuntimeCannotKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fail-kill")
	pod := scenario.PodSpec(ns, "db-0", liveNode)
	pod.Labels[lab.KubeletLabel] = "fail-kill"
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "db-0", 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitEvent(ctx, ns, "db-0", "FailedKillPod"); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "db-0")
	r, res := diagnose(t, "why", "pod/db-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "ContainerKillFailed" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and ContainerKillFailed (critical)", res.code, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], `FailedKillPod`) || !hasEvidence(it.Causes[0], `failed to "KillContainer" for "app"`) {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
}

func TestPodWhoseSandboxCannotBeTornDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fail-sandbox")
	pod := scenario.PodSpec(ns, "web-0", liveNode)
	pod.Labels[lab.KubeletLabel] = "fail-sandbox"
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitEvent(ctx, ns, "web-0", "FailedKillPod"); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "web-0")
	r, res := diagnose(t, "why", "pod/web-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "SandboxTeardownFailed" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and SandboxTeardownFailed (critical)", res.code, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], "failed to destroy network for sandbox") {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
	expectChecks(t, it, map[string]string{"containers stopped": "pass", "sandbox torn down": "fail", "terminal phase reported": "fail"})
}

// The CSI node plugin is gone (the driver is not in the node's CSINode), the
// volume is still in use on the node, so the kubelet never sends its final DELETE.
func TestPodWhoseVolumeCannotBeUnmounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "csi")
	if err := env.LiveNode(ctx, "kwok-csi"); err != nil {
		t.Fatal(err)
	}
	unique, err := env.CSIClaim(ctx, ns, "data-db-0", "csi.lab.example.com")
	if err != nil {
		t.Fatal(err)
	}
	pod := scenario.WithClaim(scenario.PodSpec(ns, "db-0", "kwok-csi"), "data-db-0")
	pod.Labels[lab.KubeletLabel] = "hang-delete" // the real kubelet waits for the unmount
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.MountedOnNode(ctx, "kwok-csi", unique); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "db-0", 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitPod(ctx, ns, "db-0", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "db-0")
	r, res := diagnose(t, "why", "pod/db-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "VolumeTeardownPending" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and VolumeTeardownPending (critical) first", res.code, codesOf(it))
	}
	expectEvidence(t, it.Causes[0], "node kwok-csi: status.volumesInUse lists "+unique, "does not list csi.lab.example.com")
	if got := checkStatus(it, "volumes unmounted"); got != "fail" {
		t.Errorf("volumes unmounted = %s", got)
	}
}

// A static pod's mirror on a node whose kubelet died: only that kubelet removes it.
func TestMirrorPodOfADeadKubelet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "mirror")
	if err := env.DyingNode(ctx, "dead-mirror"); err != nil {
		t.Fatal(err)
	}
	pod := scenario.PodSpec(ns, "etcd-dead-mirror", "dead-mirror")
	pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "3f1c2b"}
	if err := env.RunOnDyingNode(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, pod.Name, 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNodeUnreachable(ctx, "dead-mirror"); err != nil {
		t.Fatal(err)
	}
	r, res := diagnose(t, "why", "pod/"+pod.Name, "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "MirrorPodKubeletNotSyncing" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and MirrorPodKubeletNotSyncing (critical)", res.code, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], "kubernetes.io/config.mirror") || !hasEvidence(it.Causes[0], "lease kube-node-lease/dead-mirror") {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
}

// A pod whose Node object is gone: the pod GC controller removes it, and a
// finalizer still holds it afterwards.
func TestPodWhoseNodeIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "node-gone")
	pod := scenario.PodSpec(ns, "orphan-0", "no-such-node")
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := scenario.PodSpec(ns, "orphan-held", "no-such-node")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "orphan-0", 1); err != nil {
		t.Fatal(err)
	}
	// Past its 1 s deadline, well inside pod GC's 40 s quarantine.
	pastDeadline(t, ns, "orphan-0")
	r, _ := diagnose(t, "why", "pod/orphan-0", "-n", ns)
	it := only(t, r)
	if codesOf(it)[0] != "NodeNotFound" || it.Causes[0].Severity != "warning" {
		t.Fatalf("causes %v severity %s, want NodeNotFound (warning: pod GC may still act)", codesOf(it), it.Causes[0].Severity)
	}
	if got := checkStatus(it, "node alive"); got != "fail" {
		t.Errorf("node alive = %s", got)
	}
	// The pod GC controller force-deletes the orphan (about 40 s after it notices the node is missing).
	if err := env.WaitGone(ctx, ns, "orphan-0"); err != nil {
		t.Fatal(err)
	}
	// The one with a finalizer got the same grace-0 delete from pod GC, and stays.
	r, res := diagnose(t, "why", "pod/orphan-held", "-n", ns)
	it = only(t, r)
	if !slices.Contains(codesOf(it), "FinalizerPending") || !slices.Contains(codesOf(it), "NodeNotFound") {
		t.Errorf("exit %d causes %v, want NodeNotFound and FinalizerPending", res.code, codesOf(it))
	}
	if it.GracePeriodSeconds != 0 {
		t.Errorf("pod GC deletes with grace 0, got %d", it.GracePeriodSeconds)
	}
}

// The pod's DRA driver publishes no ResourceSlice on the node (its kubelet
// plugin is gone): the kubelet cannot unprepare the claim and never writes
// the terminal phase (state B').
func TestPodWhoseResourceClaimCannotBeUnprepared(t *testing.T) {
	t.Parallel()
	namespace(t, "dra")
	claimNotUnprepared(t, env, liveNode, theLab.Kubeconfig, "dra")
}

// claimNotUnprepared plays that scenario in the lab env drives (any release
// of the matrix that serves resource.k8s.io) and checks the report.
func claimNotUnprepared(t *testing.T, env *scenario.Env, liveNode, kubeconfig, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := env.AllocatedClaim(ctx, ns, "gpu-claim", "gpu.lab.example.com", liveNode); err != nil {
		t.Fatal(err)
	}
	pod := scenario.PodSpec(ns, "train-0", liveNode)
	claim := "gpu-claim"
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	pod.Labels[lab.KubeletLabel] = "hang-unprepare"
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	created, err := env.Client.CoreV1().Pods(ns).Get(ctx, "train-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.WaitClaimReserved(ctx, ns, claim, created); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "train-0", 1); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitPod(ctx, ns, "train-0", "containers stopped", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Terminated != nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitPod(ctx, ns, "train-0", "past its deadline", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && time.Now().After(p.DeletionTimestamp.Add(time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	r, res := diagnoseIn(t, kubeconfig, "why", "pod/train-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "ResourceClaimCleanupPending" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and ResourceClaimCleanupPending (critical)", res.code, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], "none of driver gpu.lab.example.com") {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
	if got := checkStatus(it, "resource claims unprepared"); got != "fail" {
		t.Errorf("resource claims unprepared = %s", got)
	}
}

// A live kubelet that reports Ready=False (its CNI is not initialised): the
// Lease is fresh, so the node is NotReady, not unreachable.
func TestPodOnANotReadyNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "not-ready")
	stop, err := env.NotReadyNode(ctx, "sick-1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := env.RunOnDyingNode(ctx, scenario.PodSpec(ns, "web-0", "sick-1")); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "web-0")
	// Well past the node lifecycle controller's 20 s grace: a dead kubelet would be Unknown by now.
	time.Sleep(25 * time.Second)
	r, res := diagnose(t, "why", "pod/web-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "NodeNotReady" {
		t.Fatalf("exit %d causes %v, want 2 and NodeNotReady first", res.code, codesOf(it))
	}
	if !hasEvidence(it.Causes[0], "Ready=False reason KubeletNotReady") || !hasEvidence(it.Causes[0], "cni plugin not initialized") {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
}
