package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
