package e2e

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// An unavailable aggregated API blocks every namespace deletion in its
// cluster, so this test runs on a lab of its own. (With aggregated discovery,
// 1.30+, clients are served discovery without the stale group rather than an
// error: the namespace controller's condition is what reveals it.)
func TestUnavailableAPIServiceBlocksNamespaceDeletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own, err := lab.Start(ctx, lab.Options{BinDir: labBins, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Stop()
	env2, err := scenario.NewEnv(own.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := env2.BrokenAPIService(ctx, "metrics.lab.example.com", "v1beta1", "metrics", "metrics-server"); err != nil {
		t.Fatal(err)
	}
	if err := env2.Namespace(ctx, "victim"); err != nil {
		t.Fatal(err)
	}
	if err := env2.DeleteNamespace(ctx, "victim", corev1.NamespaceDeletionDiscoveryFailure); err != nil {
		t.Fatal(err)
	}

	res := runWith(t, "--kubeconfig", own.Kubeconfig, "why", "ns/victim", "-o", "json")
	var r report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("exit %d: %v\nstdout %s\nstderr %s", res.code, err, res.stdout, res.stderr)
	}
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "APIServiceUnavailable" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and APIServiceUnavailable (critical) first", res.code, codesOf(it))
	}
	expectEvidence(t, it.Causes[0], "apiservice v1beta1.metrics.lab.example.com: condition Available=False reason MissingEndpoints",
		"service metrics/metrics-server: 0 ready endpoints")
	if err := checkReadOnly(own.AuditLog, false); err != nil {
		t.Errorf("read-only check on this test's own lab: %v", err)
	}
}
