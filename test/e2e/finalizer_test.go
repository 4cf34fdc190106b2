package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A custom resource held by a third-party finalizer: the plugin judges its
// controller by the workloads in the cluster, and never calls a healthy one
// gone; a healthy one does not act on an object paused (Cluster API's
// annotation), before the delete as after it.
func TestThirdPartyFinalizerOwnerLiveness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name, node, severity, summary, evidence, paused string
	}{
		{"acme", "", "critical", "has no ready replica", "deployment owners-acme/acme-controller: 0/1 ready", ""},
		{"zenith", liveNode, "warning", "looks healthy", "deployment owners-zenith/zenith-controller: 1/1 ready", ""},
		{"tranquil", liveNode, "critical", "looks healthy, but the object is paused (metadata.annotations[cluster.x-k8s.io/paused])",
			"deployment owners-tranquil/tranquil-controller: 1/1 ready", "cluster.x-k8s.io/paused"},
	}
	for _, tc := range cases {
		ns := namespace(t, "owners-"+tc.name)
		group := tc.name + ".io"
		if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
			t.Fatal(err)
		}
		if err := env.Controller(ctx, ns, tc.name+"-controller", tc.node); err != nil {
			t.Fatal(err)
		}
		if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", ns, "g1", "gizmos."+group+"/cleanup"); err != nil {
			t.Fatal(err)
		}
		if tc.paused != "" {
			gizmos := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}).Namespace(ns)
			if _, err := gizmos.Patch(ctx, "g1", types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+tc.paused+`":""}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if res := run(t, "why", "gizmos."+group+"/g1", "-n", ns); res.code != 0 || !strings.Contains(res.stderr, "is not being deleted") {
			t.Fatalf("before the delete: exit %d stderr %q", res.code, res.stderr)
		}
		// preflight judges the controller as why does after the delete: a
		// controller with no ready replica would leave it stuck, a live one not.
		r, res := diagnose(t, "preflight", "gizmos."+group+"/g1", "-n", ns)
		fc := only(t, r)
		if wantStuck := tc.severity == "critical"; res.code != map[bool]int{true: 2, false: 0}[wantStuck] || fc.Stuck != wantStuck || !fc.Forecast ||
			codesOf(fc)[0] != "FinalizerPending" || !hasEvidence(fc.Causes[0], tc.evidence) {
			t.Errorf("%s: preflight exit %d %+v", tc.name, res.code, fc)
		}
		if err := env.DeleteCustomResource(ctx, group, "gizmos", ns, "g1"); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, time.Now())
	for _, tc := range cases {
		r, res := diagnose(t, "why", "gizmos."+tc.name+".io/g1", "-n", "owners-"+tc.name)
		it := only(t, r)
		c := it.Causes[0]
		if res.code != 2 || c.Code != "FinalizerPending" || c.Severity != tc.severity || !strings.Contains(c.Summary, tc.summary) {
			t.Errorf("%s: exit %d %s %s %q", tc.name, res.code, c.Code, c.Severity, c.Summary)
		}
		if !hasEvidence(c, tc.evidence) || !hasEvidence(c, "CRDs of API group "+tc.name+".io are installed") {
			t.Errorf("%s: evidence %q", tc.name, c.Evidence)
		}
	}
}
