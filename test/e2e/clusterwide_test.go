package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An unavailable aggregated API, a failing conversion webhook or an
// aggregated API whose lists hang block namespace deletions beyond their
// own, so these run on a lab of their own, one after the other. (With aggregated discovery, 1.30+, clients are
// served discovery without the stale group rather than an error: the
// namespace controller's condition is what reveals it.)
func TestClusterWideBlockers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own, env2 := ownLab(t)
	why := func(t *testing.T, ns string, flags ...string) (item, result) {
		t.Helper()
		res := runWith(t, append([]string{"--kubeconfig", own.Kubeconfig, "why", "ns/" + ns, "-o", "json"}, flags...)...)
		var r report
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
		}
		return only(t, r), res
	}

	// The control: with every aggregated API available and every kind
	// converting, a namespace is clear, and its deletion completes.
	t.Run("nothing unavailable", func(t *testing.T) {
		if err := env2.Namespace(ctx, "calm"); err != nil {
			t.Fatal(err)
		}
		if res := runWith(t, "--kubeconfig", own.Kubeconfig, "preflight", "ns/calm"); res.code != 0 || !strings.Contains(res.stdout, "CLEAR") {
			t.Errorf("preflight: exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
		}
		if err := env2.Client.CoreV1().Namespaces().Delete(ctx, "calm", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if res := runWith(t, "--kubeconfig", own.Kubeconfig, "wait", "ns/calm", "--timeout", "2m"); res.code != 0 {
			t.Errorf("the clear namespace's deletion: exit %d %s", res.code, res.stderr)
		}
	})

	t.Run("unavailable APIService", func(t *testing.T) {
		if err := env2.BrokenAPIService(ctx, "metrics.lab.example.com", "v1beta1", "metrics", "metrics-server"); err != nil {
			t.Fatal(err)
		}
		if err := env2.Namespace(ctx, "victim"); err != nil {
			t.Fatal(err)
		}
		// Before the delete, preflight forecasts what why reports after it.
		res := runWith(t, "--kubeconfig", own.Kubeconfig, "preflight", "ns/victim", "-o", "json")
		var pr report
		if err := json.Unmarshal([]byte(res.stdout), &pr); err != nil || res.code != 2 || len(pr.Items) != 1 || !pr.Items[0].Forecast ||
			codesOf(pr.Items[0])[0] != "APIServiceUnavailable" || !strings.HasPrefix(pr.Items[0].Causes[0].Summary, "deleting the namespace now would stop at discovery: aggregated API metrics.lab.example.com/v1beta1 is unavailable") {
			t.Errorf("preflight: exit %d %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
		}
		if err := env2.DeleteNamespace(ctx, "victim", corev1.NamespaceDeletionDiscoveryFailure); err != nil {
			t.Fatal(err)
		}
		it, res := why(t, "victim")
		if res.code != 2 || codesOf(it)[0] != "APIServiceUnavailable" || it.Causes[0].Severity != "critical" {
			t.Fatalf("exit %d causes %v, want 2 and APIServiceUnavailable (critical) first", res.code, codesOf(it))
		}
		expectEvidence(t, it.Causes[0], "apiservice v1beta1.metrics.lab.example.com: condition Available=False reason MissingEndpoints",
			"service metrics/metrics-server: 0 ready endpoints")
		// The controller's listing failed: its conditions cannot stand in
		// for a scan of every type (issue 38's discovery-failure fallback).
		full, _ := why(t, "victim", "--full-scan")
		if rd := it.ContentsRead; rd == nil || rd.Index || !strings.Contains(rd.Why, "NamespaceDeletionDiscoveryFailure condition is True") ||
			strings.Join(codesOf(it), ",") != strings.Join(codesOf(full), ",") {
			t.Errorf("read %+v, causes %v; want every type read because discovery failed, and the full scan's causes %v", rd, codesOf(it), codesOf(full))
		}
		// Repaired as the report advises for an uninstalled add-on.
		apiservices := env2.Dynamic.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
		if err := apiservices.Delete(ctx, "v1beta1.metrics.lab.example.com", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("failing conversion webhook", func(t *testing.T) {
		const group = "conv.e2e.example.com"
		if err := env2.ConversionCRD(ctx, group, "Gizmo", "gizmos", "gizmo-system", "gizmo-webhook"); err != nil {
			t.Fatal(err)
		}
		if err := env2.Namespace(ctx, "gizmos"); err != nil {
			t.Fatal(err)
		}
		if err := env2.CustomResource(ctx, group, "Gizmo", "gizmos", "gizmos", "g1"); err != nil {
			t.Fatal(err)
		}
		// Before the delete, preflight forecasts what why reports after it.
		res := runWith(t, "--kubeconfig", own.Kubeconfig, "preflight", "ns/gizmos", "-o", "json")
		var pr report
		if err := json.Unmarshal([]byte(res.stdout), &pr); err != nil || res.code != 2 || len(pr.Items) != 1 || !pr.Items[0].Forecast ||
			codesOf(pr.Items[0])[0] != "ConversionWebhookFailing" ||
			!strings.HasPrefix(pr.Items[0].Causes[0].Summary, "deleting the namespace now would stop at its content: the conversion webhook of CRD gizmos."+group+" fails (its service gizmo-system/gizmo-webhook has no ready endpoints)") {
			t.Errorf("preflight: exit %d %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
		}
		if err := env2.DeleteNamespace(ctx, "gizmos", corev1.NamespaceDeletionContentFailure); err != nil {
			t.Fatal(err)
		}
		it, res := why(t, "gizmos")
		codes := codesOf(it)
		if res.code != 2 || codes[0] != "ConversionWebhookFailing" || it.Causes[0].Severity != "critical" {
			t.Fatalf("exit %d causes %v, want 2 and ConversionWebhookFailing (critical) first", res.code, codes)
		}
		top := it.Causes[0]
		if !strings.Contains(top.Summary, "the conversion webhook of CRD gizmos."+group+" fails (its service gizmo-system/gizmo-webhook has no ready endpoints)") {
			t.Errorf("summary %q", top.Summary)
		}
		expectEvidence(t, top, "spec.conversion.strategy Webhook, storage version v1, served [v1 v2]", "service gizmo-system/gizmo-webhook: 0 ready endpoints")
	})

	t.Run("aggregated API whose lists hang", func(t *testing.T) {
		stop, err := env2.HangingAPI(ctx, "hang.e2e.example.com", "v1", "stalls", "Stall")
		if stop != nil {
			defer stop()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := env2.Namespace(ctx, "slowpoke"); err != nil {
			t.Fatal(err)
		}
		if err := env2.Client.CoreV1().Namespaces().Delete(ctx, "slowpoke", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Every list of stalls hangs: the scan gives up on that type after
		// the request timeout, says so, and reports on the rest.
		start := time.Now()
		res := runWith(t, "--kubeconfig", own.Kubeconfig, "--request-timeout", "3s", "why", "ns/slowpoke", "-o", "json")
		took := time.Since(start)
		var r report
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
		}
		it := only(t, r)
		found := false
		for _, sk := range it.Skipped {
			found = found || (sk.Check == "list stalls.hang.e2e.example.com in namespace slowpoke" && sk.Reason == "Timeout")
		}
		if !found || took > 20*time.Second {
			t.Errorf("took %s (request timeout 3s); skipped %+v", took, it.Skipped)
		}

		// The run's own deadline bounds it whatever the request timeout:
		// the hanging list is given up at --timeout, and a partial report
		// never exits 0.
		start = time.Now()
		res = runWith(t, "--kubeconfig", own.Kubeconfig, "why", "ns/slowpoke", "--timeout", "8s", "-o", "json")
		took = time.Since(start)
		if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
			t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
		}
		it = only(t, r)
		found = false
		for _, sk := range it.Skipped {
			found = found || (sk.Check == "list stalls.hang.e2e.example.com in namespace slowpoke" && sk.Reason == "Timeout")
		}
		if !found || took > 25*time.Second || res.code == 0 {
			t.Errorf("--timeout 8s: took %s, exit %d; skipped %+v", took, res.code, it.Skipped)
		}
	})

	if err := checkReadOnly(own.AuditLog, false); err != nil {
		t.Errorf("read-only check on this test's own lab: %v", err)
	}
	if err := checkNetworkRule(own.Dir); err != nil {
		t.Errorf("network rule on this test's own lab: %v", err)
	}
}
