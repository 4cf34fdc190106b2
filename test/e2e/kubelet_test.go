package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// finishedPod creates a running pod on node, deletes it with a 1 s grace
// period and then reports its containers stopped (phase Succeeded), as its
// kubelet does: state C, where only the kubelet's final DELETE removes it.
// (A pod already in a terminal phase is deleted at once by the apiserver.)
func finishedPod(t *testing.T, ns, name, node string, volumes ...corev1.Volume) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := scenario.PodSpec(ns, name, node)
	p.Spec.Volumes = volumes
	if err := env.RunOnDyingNode(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, name, 1); err != nil {
		t.Fatal(err)
	}
	got, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = corev1.PodSucceeded
	got.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	if got, err = env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return got
}

// The kubelet's own view, read through the apiserver's node proxy from a
// fake kubelet in a test host: the checklist rows the API leaves unknown turn
// pass or fail with its evidence, and the causes follow it.
func TestKubeletConfirmsTheReclaimChecklist(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "kubelet-view")
	k := kubeletNode(t, "kubelet-1")
	nfs := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "198.18.255.1", Path: "/export"}}}
	k.Manage(finishedPod(t, ns, "cgroup-0", "kubelet-1"), true)
	k.Manage(finishedPod(t, ns, "nfs-0", "kubelet-1", nfs), true, statsv1alpha1.VolumeStats{Name: "data"})
	finishedPod(t, ns, "lost-0", "kubelet-1") // the kubelet reports nothing of it
	settle(t, time.Now())

	for _, tc := range []struct {
		pod, code, severity, row, rowStatus, evidence string
	}{
		{"cgroup-0", "CgroupCleanupPending", "warning", "cgroup sandbox removed", "fail", "reports the pod's cgroup"},
		{"nfs-0", "VolumeTeardownPending", "critical", "volumes unmounted", "fail", "still mounted for the pod: data"},
		{"lost-0", "KubeletNoLongerManagesPod", "critical", "containers stopped", "pass", "not among the pods it manages"},
	} {
		r, res := diagnose(t, "why", "pod/"+tc.pod, "-n", ns, "--kubelet")
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != tc.code || top.Severity != tc.severity || top.Confidence < 0.8 || len(it.Skipped) != 0 {
			t.Errorf("%s: exit %d, causes %v (top %s %.2f), skipped %+v; want %s (%s, confident)", tc.pod, res.code, codesOf(it), top.Severity, top.Confidence, it.Skipped, tc.code, tc.severity)
			continue
		}
		expectEvidence(t, top, "kubelet on kubelet-1", tc.evidence)
		if got := checkStatus(it, tc.row); got != tc.rowStatus {
			t.Errorf("%s: %s = %s, want %s (from the kubelet)", tc.pod, tc.row, got, tc.rowStatus)
		}
	}

	// Without --kubelet: the rows the API cannot see stay unknown, nothing
	// is asked of the kubelet.
	before := k.Served("/pods")
	r, _ := diagnose(t, "why", "pod/cgroup-0", "-n", ns)
	if got := checkStatus(only(t, r), "cgroup sandbox removed"); got != "unknown" || k.Served("/pods") != before {
		t.Errorf("without --kubelet: cgroup row %s, kubelet asked %d time(s)", got, k.Served("/pods")-before)
	}

	// Three pods on one node: one request per endpoint.
	before, beforeSummary := k.Served("/pods"), k.Served("/stats/summary")
	if r, _ := diagnose(t, "why", "pods", "-n", ns, "--kubelet"); len(r.Items) != 3 || k.Served("/pods") != before+1 || k.Served("/stats/summary") != beforeSummary+1 {
		t.Errorf("%d items; /pods asked %d time(s), /stats/summary %d, want once each", len(r.Items), k.Served("/pods")-before, k.Served("/stats/summary")-beforeSummary)
	}

	// A viewer without nodes/proxy: the reads are skipped as Forbidden, the
	// verdict is the one without --kubelet, and the run is no error.
	// Named resources, not "*", which would include nodes/proxy.
	grantClusterRole(t, "kubelet-viewer", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "namespaces", "events", "persistentvolumeclaims", "persistentvolumes", "services", "endpoints"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"admissionregistration.k8s.io", "storage.k8s.io", "resource.k8s.io", "apps", "apiextensions.k8s.io", "apiregistration.k8s.io", "discovery.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	})
	want, _ := diagnose(t, "why", "pod/nfs-0", "-n", ns)
	got, res := diagnose(t, "--as", "kubelet-viewer", "why", "pod/nfs-0", "-n", ns, "--kubelet")
	it := only(t, got)
	forbidden := slices.ContainsFunc(it.Skipped, func(s skip) bool {
		return s.Check == "nodes/kubelet-1/proxy/pods" && s.Reason == "Forbidden"
	})
	if res.code == 0 || !forbidden || !slices.Equal(codesOf(it), codesOf(only(t, want))) {
		t.Errorf("viewer: exit %d, skipped %+v, causes %v, want Forbidden and %v", res.code, it.Skipped, codesOf(it), codesOf(only(t, want)))
	}
}

// A kubelet that hangs costs the run its per-node timeout, not the run's.
func TestKubeletThatHangsIsBounded(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "kubelet-hung")
	k := kubeletNode(t, "kubelet-hung")
	k.Hang()
	finishedPod(t, ns, "web-0", "kubelet-hung")
	pastDeadline(t, ns, "web-0")
	start := time.Now()
	r, res := diagnose(t, "why", "pod/web-0", "-n", ns, "--kubelet")
	took := time.Since(start)
	it := only(t, r)
	timedOut := slices.ContainsFunc(it.Skipped, func(s skip) bool {
		return strings.HasPrefix(s.Check, "nodes/kubelet-hung/proxy/") && s.Reason == "Timeout"
	})
	if took > 20*time.Second || !timedOut || res.code == 0 {
		t.Errorf("took %s, exit %d, skipped %+v; want about 5 s, the kubelet reads skipped as Timeout", took, res.code, it.Skipped)
	}
	// The row the kubelet was asked for says why it is still unknown.
	for _, c := range it.Checks {
		if c.Name == "cgroup sandbox removed" && (c.Status != "unknown" || !strings.Contains(c.Detail, "--kubelet asked the node: nodes/kubelet-hung/proxy/stats/summary, Timeout")) {
			t.Errorf("cgroup row %+v", c)
		}
	}
	if checkStatus(it, "cgroup sandbox removed") == "<missing>" {
		t.Errorf("no cgroup row: %+v", it.Checks)
	}
}

// kubeletNode starts a fake kubelet and its Node for the test.
func kubeletNode(t *testing.T, name string) *scenario.FakeKubelet {
	t.Helper()
	k, err := env.KubeletNode(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// A kwok node's address is loopback, which the apiserver's node proxy
// refuses to dial: --kubelet on a pod there reaches nothing, says which
// reads it skipped, and changes no verdict.
func TestKubeletOfAKwokNodeIsNeverDialled(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "kubelet-kwok")
	heldByFinalizer(t, ns, "held-0", "example.com/hold")
	want, wantRes := diagnose(t, "why", "pod/held-0", "-n", ns)
	got, res := diagnose(t, "why", "pod/held-0", "-n", ns, "--kubelet")
	it := only(t, got)
	skipped := slices.ContainsFunc(it.Skipped, func(s skip) bool {
		return s.Check == "nodes/"+liveNode+"/proxy/pods" && s.Reason == "Unreachable" && strings.Contains(s.Detail, "refuses the node's address")
	})
	wantCode := wantRes.code
	if wantCode == 0 {
		wantCode = 1 // a partial report never exits 0
	}
	if !skipped || res.code != wantCode || !slices.Equal(codesOf(it), codesOf(only(t, want))) {
		t.Errorf("--kubelet on a kwok node: exit %d, skipped %+v, causes %v; want the reads skipped as Unreachable, the refused address explained, exit %d and %v", res.code, it.Skipped, codesOf(it), wantCode, codesOf(only(t, want)))
	} else {
		t.Logf("skipped %+v", it.Skipped)
	}
}
