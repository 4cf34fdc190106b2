package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Objects other than pods and namespaces, each held by a finalizer whose
// rule names what it waits for; then `list -A` over all of them, beside a
// pod that is only inside its grace period.
func TestStuckObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "objects")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.ForegroundOwner(ctx, ns, "owner", "dependent", "keep.tidy.io/flush"))
	must(env.ClaimOnPVC(ctx, ns, "data", "db-0", liveNode))
	must(env.BoundVolume(ctx, ns, "archive", "pv-objects-archive"))
	must(env.FailedDetach(ctx, "csi-objects-detach", "csi.e2e.example.com", liveNode, "pv-objects-gone", "rpc error: disk is busy at the backend"))
	must(env.FailedLoadBalancerCleanup(ctx, ns, "web", "Error deleting load balancer: quota exceeded"))
	must(env.FailedVolumeDelete(ctx, "pv-objects-released", "ebs.csi.e2e.example.com", "rpc error: code = FailedPrecondition desc = volume is still attached"))
	// A webhook whose backend is gone refuses the UPDATE that removes a finalizer.
	must(env.DownWebhookFor(ctx, "cm-update-guard", scenario.Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Resource: "configmaps", NamespaceSelector: scenario.InNamespace(ns), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}}))
	guarded := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Labels: map[string]string{"guarded": "yes"}, Finalizers: []string{"guard.tidy.io/export"}}}
	_, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, guarded, metav1.CreateOptions{})
	must(err)
	// Before the delete, preflight forecasts what why reports after it (the case below).
	if pr, pres := diagnose(t, "preflight", "configmap/guarded", "-n", ns); pres.code != 2 || codesOf(only(t, pr))[0] != "AdmissionWebhookDenied" ||
		!strings.Contains(only(t, pr).Causes[0].Summary, "refuses UPDATE configmaps (the patch that removes a finalizer)") {
		t.Errorf("preflight of configmap/guarded: exit %d %+v", pres.code, pr.Items)
	}
	must(env.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "guarded", metav1.DeleteOptions{}))
	// Healthy: a pod inside a one-hour grace period.
	slow := scenario.PodSpec(ns, "slow-0", liveNode)
	hour := int64(3600)
	slow.Spec.TerminationGracePeriodSeconds = &hour
	slow.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"}
	must(env.RunningPod(ctx, slow))
	must(env.Client.CoreV1().Pods(ns).Delete(ctx, "slow-0", deleteOpts(nil)))
	settle(t, time.Now())

	cases := []struct {
		args              []string
		code, severity    string
		summary, evidence string
	}{
		{[]string{"configmap/owner", "-n", ns}, "ForegroundDeletionBlocked", "critical",
			"1 dependent with blockOwnerDeletion still exists: configmap/dependent is stuck", "dependent configmap/dependent -n " + ns + ": ownerReference to ConfigMap/owner, blockOwnerDeletion true"},
		{[]string{"pvc/data", "-n", ns}, "PVCInUse", "warning", "1 pod still uses the claim: db-0", "pod " + ns + "/db-0: phase Running on node \"" + liveNode + "\", not being deleted"},
		{[]string{"pv/pv-objects-archive"}, "PVBound", "warning", "Bound to claim " + ns + "/archive", "spec.claimRef: " + ns + "/archive"},
		{[]string{"volumeattachment/csi-objects-detach"}, "VolumeDetachFailed", "critical", "detach failed: csi-objects-detach from node " + liveNode + ": rpc error: disk is busy", "status.detachError at"},
		{[]string{"service/web", "-n", ns}, "LoadBalancerCleanupPending", "critical", "quota exceeded", "event Warning DeleteLoadBalancerFailed"},
		{[]string{"pv/pv-objects-released"}, "VolumeDeleteFailed", "critical", "CSI external-provisioner of driver ebs.csi.e2e.example.com fails to delete the backend volume: rpc error", "event Warning VolumeFailedDelete"},
		{[]string{"configmap/guarded", "-n", ns}, "AdmissionWebhookDenied", "critical", "refuses UPDATE configmaps (the patch that removes a finalizer)", "service webhook-cm-update-guard/guard: 0 ready endpoints"},
	}
	for _, tc := range cases {
		r, res := diagnose(t, append([]string{"why"}, tc.args...)...)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != 2 || top.Code != tc.code || top.Severity != tc.severity || !strings.Contains(top.Summary, tc.summary) {
			t.Errorf("why %v: exit %d, top %s %s %q; want 2, %s %s %q", tc.args, res.code, top.Code, top.Severity, top.Summary, tc.code, tc.severity, tc.summary)
			continue
		}
		expectEvidence(t, top, tc.evidence)
	}

	// list -A finds every one of them, and the pod in its grace period as not stuck.
	r, res := diagnose(t, "list", "-A")
	if res.code != 2 {
		t.Errorf("list -A: exit %d, want 2", res.code)
	}
	want := map[string]string{
		"ConfigMap/" + ns + "/owner": "ForegroundDeletionBlocked", "ConfigMap/" + ns + "/dependent": "FinalizerPending",
		"PersistentVolumeClaim/" + ns + "/data": "PVCInUse", "PersistentVolume//pv-objects-archive": "PVBound", "PersistentVolume//pv-objects-released": "VolumeDeleteFailed",
		"VolumeAttachment//csi-objects-detach": "VolumeDetachFailed", "Service/" + ns + "/web": "LoadBalancerCleanupPending",
		"ConfigMap/" + ns + "/guarded": "AdmissionWebhookDenied", "Pod/" + ns + "/slow-0": "WithinGracePeriod",
	}
	for _, it := range r.Items {
		key := it.Object.Kind + "/" + it.Object.Namespace + "/" + it.Object.Name
		code, ok := want[key]
		if !ok {
			continue
		}
		delete(want, key)
		if codesOf(it)[0] != code || it.Stuck != (code != "WithinGracePeriod") {
			t.Errorf("list -A: %s: %v stuck %t, want %s first", key, codesOf(it), it.Stuck, code)
		}
	}
	if len(want) > 0 {
		t.Errorf("list -A missed %v", want)
	}
}

// Issue 35: a chain of owners in foreground deletion deeper than the walk
// goes (50 levels, the last held by a finalizer) is cut honestly: the
// report names the deepest object it reached, says the chain goes on, is
// partial (stderr says so), and a diagnosis from that object reads on.
func TestDeepForegroundChainSaysWhereItWasCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "deep-chain")
	if err := env.ForegroundChain(ctx, ns, "link", 50, "keep.tidy.io/flush"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "link-49", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	settle(t, time.Now())
	r, res := diagnose(t, "why", "configmap/link-0", "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	cut := regexp.MustCompile(`configmap/link-1 waits on configmap/link-2 -> .* -> configmap/(link-\d+); `).FindStringSubmatch(top.Summary)
	if res.code != 2 || top.Code != "ForegroundDeletionBlocked" || cut == nil || !strings.Contains(top.Summary, "deeper than 8 levels: not followed from here") ||
		r.Complete == nil || *r.Complete || !strings.Contains(res.stderr, "warning: the report is partial: could not read dependents of configmaps/"+cut[1]+" (DepthLimit)") {
		t.Fatalf("exit %d, top %s %q, complete %v\n%s", res.code, top.Code, top.Summary, r.Complete, res.stderr)
	}
	// From the deepest object reached, the walk reads on.
	r, _ = diagnose(t, "why", "configmap/"+cut[1], "-n", ns)
	next := regexp.MustCompile(`configmap/(link-\d+); `).FindAllStringSubmatch(only(t, r).Causes[0].Summary, -1)
	if len(next) == 0 || next[len(next)-1][1] == cut[1] {
		t.Errorf("from %s: %q", cut[1], only(t, r).Causes[0].Summary)
	}
}
