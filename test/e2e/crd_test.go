package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// A webhook whose backend is gone refuses the namespace controller's
// DELETE of the configmaps left in the namespace.
func TestWebhookRefusesNamespaceContentDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "guarded-content")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.DownWebhookFor(ctx, "cm-guard", scenario.Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
		Resource: "configmaps", NamespaceSelector: scenario.InNamespace(ns)}); err != nil {
		t.Fatal(err)
	}
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "ns/"+ns)
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || codesOf(fc)[0] != "AdmissionWebhookDenied" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "the deletion would stick: ") ||
		!strings.Contains(fc.Causes[0].Summary, "webhook guard.cm-guard.example.com refuses the namespace controller's DELETE of configmaps in namespace "+ns) {
		t.Errorf("preflight: exit %d %+v", pres.code, fc)
	}
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceDeletionContentFailure); err != nil {
		t.Fatal(err)
	}
	r, res := diagnose(t, "why", "ns/"+ns)
	it := only(t, r)
	codes := codesOf(it)
	if res.code != 2 || codes[0] != "AdmissionWebhookDenied" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and AdmissionWebhookDenied (critical) first", res.code, codes)
	}
	top := it.Causes[0]
	if !strings.Contains(top.Summary, "webhook guard.cm-guard.example.com refuses the namespace controller's DELETE of configmaps in namespace "+ns) {
		t.Errorf("summary: %q", top.Summary)
	}
	expectEvidence(t, top, `names webhook "guard.cm-guard.example.com"`, "service webhook-cm-guard/guard: 0 ready endpoints")
}

// A CRD deleted while its instances hold a finalizer nobody removes:
// apiextensions waits for them (customresourcecleanup).
func TestCRDHeldByItsInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const group, crd = "held.e2e.example.com", "sprockets.held.e2e.example.com"
	if err := env.CRD(ctx, group, "Sprocket", "sprockets"); err != nil {
		t.Fatal(err)
	}
	created := map[string]int{"sprockets-a": 3, "sprockets-b": 2}
	for ns, n := range created {
		namespace(t, ns)
		for i := range n {
			if err := env.CustomResource(ctx, group, "Sprocket", "sprockets", ns, fmt.Sprintf("s%d", i), "held.e2e.example.com/teardown"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "crd/"+crd)
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || codesOf(fc)[0] != "CRDInstancesRemaining" || !fc.Causes[0].Forecast || fc.Causes[0].Severity != "critical" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "once deleted, 5 instances (") ||
		!strings.Contains(fc.Causes[0].Summary, ") would wait for finalizer held.e2e.example.com/teardown, and no controller that could remove it is found in the cluster") {
		t.Errorf("preflight: exit %d %+v", pres.code, fc)
	}
	deleted := time.Now()
	if err := env.DeleteCRD(ctx, crd, "InstanceDeletionInProgress"); err != nil {
		t.Fatal(err)
	}
	settle(t, deleted)

	r, res := diagnose(t, "why", "crd/"+crd)
	it := only(t, r)
	codes := codesOf(it)
	if res.code != 2 || codes[0] != "CRDInstancesRemaining" || it.Severity != "critical" {
		t.Fatalf("exit %d causes %v severity %s, want 2, CRDInstancesRemaining first, critical", res.code, codes, it.Severity)
	}
	top := it.Causes[0]
	if !strings.HasPrefix(top.Summary, "5 Sprocket instances remain (sprockets-a: 3, sprockets-b: 2)") ||
		!strings.Contains(top.Summary, "no controller that could remove held.e2e.example.com/teardown is found") {
		t.Errorf("summary: %q", top.Summary)
	}
	expectEvidence(t, top, "status.conditions[type=Terminating]: status True, reason InstanceDeletionInProgress",
		"finalizer held.e2e.example.com/teardown on 5 instances")
	if len(top.BlockedBy) != 3 || top.BlockedBy[0].Object.Kind != "Sprocket" || codesOf(top.BlockedBy[0])[0] != "FinalizerPending" {
		t.Errorf("nested instances: %+v", top.BlockedBy)
	}

	// The report's own last resort, pasted as an operator would: it removes
	// that finalizer from every instance, and the CRD then goes.
	var removal string
	for _, st := range top.Remediation {
		if st.RiskLevel == "high" && strings.Contains(st.Action, "held.e2e.example.com/teardown") {
			removal = st.Command
		}
	}
	if removal == "" {
		t.Fatalf("no high-risk step removes the instances' finalizer: %+v", top.Remediation)
	}
	if res := runSuggested(t, removal); res.code != 0 || res.stderr != "" {
		t.Fatalf("%s: exit %d, stderr %s", removal, res.code, res.stderr)
	}
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, crd, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Errorf("the CRD is still there after the instances' finalizer was removed: %v", err)
	}
}
