package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// guardedPodInStateC deletes a pod, then lets guard install what refuses
// DELETE before the (fake) kubelet sends its final one: the pod stops, writes
// its terminal phase and stays (state C), its final DELETE really refused.
func guardedPodInStateC(t *testing.T, ns, name string, guard func(context.Context, string) error) (deadline time.Time) {
	t.Helper()
	return guardedPodInStateCOn(t, env, liveNode, ns, name, guard)
}

// guardedPodInStateCOn is guardedPodInStateC in the lab e drives (a release
// of the version matrix), on its live node.
func guardedPodInStateCOn(t *testing.T, env *scenario.Env, liveNode, ns, name string, guard func(context.Context, string) error) (deadline time.Time) {
	t.Helper()
	ctx := context.Background()
	pod := scenario.PodSpec(ns, name, liveNode)
	pod.Labels[scenario.GuardLabel] = ns
	pod.Annotations = map[string]string{lab.KillDelayAnnotation: "4s"}
	if err := env.RunningPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, name, 5); err != nil {
		t.Fatal(err)
	}
	if err := guard(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitPod(ctx, ns, name, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }); err != nil {
		t.Fatal(err)
	}
	p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, p.DeletionTimestamp.Time)
	// The kubelet's final DELETE was refused all along: the grace period is still 5 s.
	if p, err = env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil || *p.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("the final DELETE went through (or the pod is gone): %v", err)
	}
	return p.DeletionTimestamp.Time
}

func TestFinalDeleteRefusedByAWebhookWhoseServiceIsGone(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "guarded-webhook")
	guardedPodInStateC(t, ns, "api-0", env.DownWebhook)

	r, res := diagnose(t, "why", "pod/api-0", "-n", ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "AdmissionWebhookDenied" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and AdmissionWebhookDenied (critical) first", res.code, codesOf(it))
	}
	expectEvidence(t, it.Causes[0], "validatingwebhookconfiguration "+ns+" webhook guard."+ns+".example.com: matches DELETE pods", "service webhook-"+ns+"/guard: 0 ready endpoints")
	if got := checkStatus(it, "final delete admitted"); got != "fail" {
		t.Errorf("final delete admitted = %s", got)
	}
}

func TestFinalDeleteRefusedByAnAdmissionPolicy(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "guarded-policy")
	policyRefusesTheFinalDelete(t, env, liveNode, theLab.Kubeconfig, ns)
}

// policyRefusesTheFinalDelete plays that scenario in the lab env drives (any
// release of the matrix) and checks the report.
func policyRefusesTheFinalDelete(t *testing.T, env *scenario.Env, liveNode, kubeconfig, ns string) {
	t.Helper()
	guardedPodInStateCOn(t, env, liveNode, ns, "api-0", env.DenyPolicy)
	r, res := diagnoseIn(t, kubeconfig, "why", "pod/api-0", "-n", ns)
	it := only(t, r)
	// Its validation, evaluated against the kubelet's DELETE, is false: a certain refusal.
	if top := it.Causes[0]; res.code != 2 || top.Code != "AdmissionPolicyDenied" || top.Severity != "critical" || !strings.Contains(top.Summary, "may not be deleted") {
		t.Fatalf("exit %d causes %v, top %s %q; want 2 and AdmissionPolicyDenied (critical) with the policy's message", res.code, codesOf(it), top.Severity, top.Summary)
	}
	expectEvidence(t, it.Causes[0], "validation request.operation != 'DELETE' is false for this request")
}

// Class e: two webhooks whose backends are gone intercept the same pods;
// their CEL matchConditions, evaluated as the apiserver does, pick the one
// that refuses this pod's final DELETE, and the other is not blamed.
func TestFinalDeleteWebhookMatchConditions(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "guarded-cel")
	guardedPodInStateC(t, ns, "api-0", func(ctx context.Context, ns string) error { return env.DownWebhooksOnConditions(ctx, ns, "api-0") })

	r, res := diagnose(t, "why", "pod/api-0", "-n", ns)
	it := only(t, r)
	top := it.Causes[0]
	if res.code != 2 || top.Code != "AdmissionWebhookDenied" || top.Severity != "critical" || top.Confidence < 0.9 {
		t.Fatalf("exit %d causes %v, top %s %.2f; want 2 and AdmissionWebhookDenied (critical, certain) first", res.code, codesOf(it), top.Severity, top.Confidence)
	}
	expectEvidence(t, top, "webhook guard."+ns+"-match.example.com", "matchCondition by-name (oldObject.metadata.name == 'api-0') is true for this request")
	for _, c := range it.Causes {
		for _, e := range c.Evidence {
			if strings.Contains(e, ns+"-skip") {
				t.Errorf("the webhook whose matchConditions exclude the pod is blamed: %s", e)
			}
		}
	}
}
