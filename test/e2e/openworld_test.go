package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Issue 36: operators the catalogue has never seen, emulated as they write
// (their own field managers, finalizers added to an object a person created,
// status through the status subresource). What the API records answers
// without knowing them: the controller's words in any shape, and who wrote
// the object since its deletion began.
func TestOperatorsNeverSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "openworld")
	// AWS Controllers for Kubernetes: runtime apis/core/v1alpha1/conditions.go
	// (ACK.Terminal, no reason), rds-controller descriptor.go (the
	// finalizer), the binary /bin/controller (its field manager).
	rds := scenario.Operator{Group: "rds.services.k8s.aws", Kind: "DBInstance", Plural: "dbinstances",
		Manager: "controller", Finalizer: "finalizers.rds.services.k8s.aws/DBInstance"}
	// Velero: restore_controller.go's ExternalResourcesFinalizer, the
	// server's user agent velero-server, RestoreStatus.progress.
	velero := scenario.Operator{Group: "velero.io", Kind: "Restore", Plural: "restores",
		Manager: "velero-server", Finalizer: "restores.velero.io/external-resources-finalizer"}
	// A cloud-resource controller that reports in status.error.
	cloud := scenario.Operator{Group: "sql.openworld.e2e.example.com", Kind: "Instance", Plural: "instances",
		Manager: "cloudsql-manager", Finalizer: "sql.openworld.e2e.example.com/instance"}
	for _, o := range []scenario.Operator{rds, velero, cloud} {
		if err := env.StatusCRD(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, ctl := range []string{"ack-rds-controller", "velero", "cloudsql-operator"} {
		if err := env.Controller(ctx, ns, ctl, liveNode); err != nil {
			t.Fatal(err)
		}
	}
	restoring := func(n int) map[string]any {
		return map[string]any{"phase": "InProgress", "progress": map[string]any{"totalItems": int64(500), "itemsRestored": int64(10 * n)}}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.Adopt(ctx, rds, ns, "orders-db", map[string]any{"conditions": []any{
		map[string]any{"type": "ACK.ResourceSynced", "status": "True", "lastTransitionTime": metaNow()}}}))
	must(env.Adopt(ctx, velero, ns, "nightly", restoring(0)))
	must(env.Adopt(ctx, velero, ns, "last-week", map[string]any{"phase": "Completed"}))
	must(env.Adopt(ctx, cloud, ns, "billing", map[string]any{"state": "RUNNABLE"}))
	time.Sleep(1100 * time.Millisecond) // managedFields and deletionTimestamp are to the second: the writes come before the deletion
	deleted := time.Now()
	for _, o := range []struct {
		op   scenario.Operator
		name string
	}{{rds, "orders-db"}, {velero, "nightly"}, {velero, "last-week"}, {cloud, "billing"}} {
		must(env.Delete(ctx, o.op, ns, o.name))
	}
	// After the delete: ACK's delete call fails terminally, the cloud
	// controller records its error, the nightly restore keeps counting.
	must(env.OperatorWrites(ctx, rds, ns, "orders-db", map[string]any{"conditions": []any{
		map[string]any{"type": "ACK.ResourceSynced", "status": "True", "lastTransitionTime": metaNow()},
		map[string]any{"type": "ACK.Terminal", "status": "True", "lastTransitionTime": metaNow(),
			"message": "api error InvalidParameterCombination: Cannot delete protected DB Instance, please disable deletion protection and try again."}}}))
	must(env.OperatorWrites(ctx, cloud, ns, "billing", map[string]any{"state": "DELETING",
		"error": map[string]any{"code": 403, "message": "googleapi: Error 403: The client is not authorized to make this request., notAuthorized"}}))
	writing, stop := context.WithCancel(ctx)
	defer stop()
	go env.KeepWriting(writing, velero, ns, "nightly", 3*time.Second, restoring)
	settle(t, deleted)

	want := map[string]struct {
		resource  string
		code      int
		severity  string
		summary   string
		finalizer string // whose adding managedFields records
	}{
		"orders-db": {"dbinstances", 2, "critical", "it reports ACK.Terminal=True: api error InvalidParameterCombination: Cannot delete protected DB Instance", rds.Finalizer},
		"nightly":   {"restores", 0, "info", "progressing: field manager velero-server wrote its status", velero.Finalizer},
		"last-week": {"restores", 2, "warning", "looks healthy but has not removed it, nor written to the object since its deletion began", velero.Finalizer},
		"billing":   {"instances", 2, "critical", "it reports status.error.message: googleapi: Error 403", cloud.Finalizer},
	}
	for name, w := range want {
		r, res := diagnose(t, "why", w.resource+"/"+name, "-n", ns)
		it := only(t, r)
		top := it.Causes[0]
		if res.code != w.code || top.Code != "FinalizerPending" || top.Severity != w.severity || !strings.Contains(top.Summary, w.summary) {
			t.Errorf("%s: exit %d, %s %s: %s; want exit %d, FinalizerPending %s saying %q", name, res.code, top.Code, top.Severity, top.Summary, w.code, w.severity, w.summary)
		}
		expectEvidence(t, top, "managedFields: finalizer "+w.finalizer+" was added by field manager")
	}
	// The namespace's scan reads the same verdicts from the objects' metadata
	// and, where a controller wrote since the deletion, their status.
	r, _ := diagnose(t, "why", "-n", ns)
	for _, it := range r.Items {
		w, ok := want[it.Object.Name]
		if !ok {
			continue
		}
		delete(want, it.Object.Name)
		if top := it.Causes[0]; top.Severity != w.severity || !strings.Contains(top.Summary, w.summary) {
			t.Errorf("why -n: %s: %s: %s; want %s saying %q", it.Object.Name, top.Severity, top.Summary, w.severity, w.summary)
		}
	}
	if len(want) > 0 {
		t.Errorf("why -n did not report %v", want)
	}
}

func metaNow() string { return time.Now().UTC().Format(time.RFC3339) }
