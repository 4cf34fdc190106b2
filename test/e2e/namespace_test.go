package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

func TestNamespaceHeldByCustomResourceFinalizers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "widgets")
	if err := env.CRD(ctx, "e2e.example.com", "Gadget", "gadgets"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := env.CustomResource(ctx, "e2e.example.com", "Gadget", "gadgets", ns, fmt.Sprintf("gadget-%d", i), "e2e.example.com/cleanup"); err != nil {
			t.Fatal(err)
		}
	}
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "ns/"+ns)
	if fc := only(t, pr); pres.code != 2 || !fc.Forecast || codesOf(fc)[0] != "FinalizerPending" || fc.Causes[0].Severity != "critical" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "once deleted, 3 objects (gadget.e2e.example.com/gadget-1, gadget.e2e.example.com/gadget-2, gadget.e2e.example.com/gadget-3) would wait for finalizer e2e.example.com/cleanup") {
		t.Errorf("preflight: exit %d %+v", pres.code, fc)
	}
	// The real namespace controller deletes the content and reports what holds it.
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceFinalizersRemaining); err != nil {
		t.Fatal(err)
	}
	emptied := time.Now() // see settle
	// Seconds after the delete, what remains is progress; then it is stuck.
	if r, res := diagnose(t, "why", "ns/"+ns); res.code != 0 || only(t, r).Stuck {
		t.Errorf("right after the delete: exit %d, want 0 and not stuck", res.code)
	}
	settle(t, emptied)

	r, res := diagnose(t, "why", "ns/"+ns)
	if res.code != 2 {
		t.Errorf("exit code = %d, want 2; stderr %s", res.code, res.stderr)
	}
	it := only(t, r)
	codes := codesOf(it)
	if len(codes) < 3 || codes[0] != "FinalizerPending" || !slices.Contains(codes, "NamespaceFinalizersRemaining") || !slices.Contains(codes, "NamespaceContentRemaining") {
		t.Fatalf("causes = %v, want the grouped FinalizerPending first, then the controller's conditions", codes)
	}
	top := it.Causes[0]
	if top.Severity != "critical" || !strings.HasPrefix(top.Summary, "3 objects in the namespace are held by finalizer e2e.example.com/cleanup") {
		t.Errorf("top cause: %s %q", top.Severity, top.Summary)
	}
	if len(top.BlockedBy) != 3 || top.BlockedBy[0].Object.Kind != "Gadget" || codesOf(top.BlockedBy[0])[0] != "FinalizerPending" {
		t.Errorf("nested examples: %+v", top.BlockedBy)
	}
	// The first step looks for the controller by the finalizer's words and
	// by the field manager that added it (the held objects are read in full,
	// as a named object is: here the test's own client).
	if first := top.Remediation[0]; first.Command != "kubectl get deployments,statefulsets,daemonsets -A --show-labels | grep -Fi -e e2e -e e2e.test" || first.RiskLevel != "none" {
		t.Errorf("first step: %+v", first)
	}
	fin := it.Causes[slices.Index(codes, "NamespaceFinalizersRemaining")]
	if !hasEvidence(fin, "e2e.example.com/cleanup in 3 resource instances") || !hasEvidence(fin, "finalizer e2e.example.com/cleanup on 3 objects: removed by a third-party controller") {
		t.Errorf("evidence lacks the controller's count: %q", fin.Evidence)
	}
	if rem := it.Causes[slices.Index(codes, "NamespaceContentRemaining")]; !hasEvidence(rem, "live scan: gadgets.e2e.example.com: 3 objects left") {
		t.Errorf("live scan evidence: %q", rem.Evidence)
	}
	last := fin.Remediation[len(fin.Remediation)-1]
	if !strings.Contains(last.Command, "/finalize") || !strings.Contains(last.Risk, "reappear") || last.RiskLevel != "destructive" {
		t.Errorf("clearing spec.finalizers must come last and say the leftovers reappear: %+v", last)
	}

	// In that namespace's scope, list shows the namespace and the three leftovers.
	r, res = diagnose(t, "list", "-n", ns)
	if res.code != 2 || len(r.Items) != 4 {
		t.Fatalf("list -n %s: exit %d, %d items, want 2 and 4", ns, res.code, len(r.Items))
	}
	var gadgets int
	for _, it := range r.Items {
		if it.Object.Kind == "Gadget" {
			gadgets++
			if codesOf(it)[0] != "FinalizerPending" || it.Object.Resource != "gadgets.e2e.example.com" {
				t.Errorf("gadget %s: resource %s causes %v", it.Object.Name, it.Object.Resource, codesOf(it))
			}
		}
	}
	if gadgets != 3 {
		t.Errorf("found %d gadgets, want 3", gadgets)
	}
	names := run(t, "list", "-n", ns, "-o", "name")
	want := []string{"gadget.e2e.example.com/gadget-1", "gadget.e2e.example.com/gadget-2", "gadget.e2e.example.com/gadget-3", "namespace/" + ns}
	got := strings.Fields(names.stdout)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("-o name = %v, want %v", got, want)
	}

	// The report's removal by hand, pasted as an operator would: the
	// finalizer goes from all three gadgets, not the first example alone.
	removal := top.Remediation[len(top.Remediation)-1]
	if removal.RiskLevel != "high" || !strings.Contains(removal.Action, "from all 3 objects in the namespace") {
		t.Fatalf("the last step is not the removal from all three: %+v", removal)
	}
	if res := runSuggested(t, removal.Command); res.code != 0 || res.stderr != "" {
		t.Fatalf("%s: exit %d, stderr %s", removal.Command, res.code, res.stderr)
	}
	left := runSuggested(t, "kubectl get gadgets.e2e.example.com -n "+ns+" -o name")
	if left.code != 0 || strings.TrimSpace(left.stdout) != "" {
		t.Errorf("gadgets left after the removal (exit %d): %q %s", left.code, left.stdout, left.stderr)
	}
}

// A namespace held by a pod whose node died: the report's first line names
// the pod, and nests its diagnosis down to the node.
func TestNamespaceBlockedByAPodOnADeadNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "ns-dead-node")
	podOnDeadNode(t, ns, "web-0", "dead-ns")
	// Before the delete, preflight forecasts what why reports after it.
	pr, pres := diagnose(t, "preflight", "ns/"+ns, "pod/web-0", "-n", ns)
	byKind := map[string]item{}
	for _, it := range pr.Items {
		byKind[it.Object.Kind] = it
	}
	if fc := byKind["Namespace"]; pres.code != 2 || !fc.Forecast || len(fc.Causes) == 0 || fc.Causes[0].Code != "PodStuckTerminating" ||
		!strings.HasPrefix(fc.Causes[0].Summary, "once deleted, pod web-0 would be stuck terminating: node dead-ns stopped reporting") ||
		len(fc.Causes[0].BlockedBy) != 1 || codesOf(fc.Causes[0].BlockedBy[0])[0] != "NodeUnreachable" {
		t.Errorf("preflight of the namespace: exit %d %+v", pres.code, fc)
	}
	if fc := byKind["Pod"]; !fc.Forecast || !fc.Stuck || len(fc.Causes) == 0 || fc.Causes[0].Code != "NodeUnreachable" {
		t.Errorf("preflight of the pod: %+v", fc)
	}
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceDeletionContentFailure); err != nil { // "unexpected items still remain"
		t.Fatal(err)
	}
	pastDeadline(t, ns, "web-0")
	r, res := diagnose(t, "why", "ns/"+ns)
	it := only(t, r)
	if res.code != 2 || codesOf(it)[0] != "PodStuckTerminating" || it.Causes[0].Severity != "critical" {
		t.Fatalf("exit %d causes %v, want 2 and PodStuckTerminating (critical) first", res.code, codesOf(it))
	}
	nested := it.Causes[0].BlockedBy
	if len(nested) != 1 || nested[0].Object.Name != "web-0" || codesOf(nested[0])[0] != "NodeUnreachable" {
		t.Fatalf("nested: %+v", nested)
	}
	if !slices.Contains(codesOf(it), "NamespaceContentFailure") {
		t.Errorf("the controller's own condition is reported too: %v", codesOf(it))
	}
	if !strings.Contains(it.Causes[0].Summary, "pod web-0 is stuck terminating: node dead-ns stopped reporting") {
		t.Errorf("the first line must name the root cause: %q", it.Causes[0].Summary)
	}
	table := run(t, "why", "ns/"+ns)
	if !strings.Contains(table.prose(), "blocked by:") || !strings.Contains(table.prose(), "critical NodeUnreachable") {
		t.Errorf("the table must draw the chain:\n%s", table.stdout)
	}
}

// A namespace with 55 custom resource types and 2,200 leftover objects:
// the report groups them by finalizer, with counts equal to what was made.
func TestNamespaceWithThousandsOfLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "bulk")
	kinds := scenario.BulkKinds("bulk", 55)
	const perKind = 40
	hold, archive := "bulk.e2e.example.com/hold", "archive.e2e.example.com/export"
	err := env.Bulk(ctx, ns, kinds, perKind, func(i int) []string {
		if i%10 == 0 {
			return []string{hold, archive}
		}
		return []string{hold}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.ReleaseBulk(context.Background(), ns, kinds); err != nil {
			t.Logf("releasing the bulk objects: %v", err)
		}
	})
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceFinalizersRemaining); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now()) // see settle

	r, res := diagnose(t, "why", "ns/"+ns)
	it := only(t, r)
	codes := codesOf(it)
	total := len(kinds) * perKind
	if res.code != 2 || len(codes) < 4 || codes[0] != "FinalizerPending" || codes[1] != "FinalizerPending" {
		t.Fatalf("exit %d causes %v, want 2 and one FinalizerPending per finalizer first", res.code, codes)
	}
	want := map[string]string{
		archive: fmt.Sprintf("%d objects in the namespace are held by finalizer %s", total/10, archive),
		hold:    fmt.Sprintf("%d objects in the namespace are held by finalizer %s", total, hold),
	}
	for _, c := range it.Causes[:2] {
		found := false
		for _, prefix := range want {
			found = found || strings.HasPrefix(c.Summary, prefix)
		}
		if !found || len(c.BlockedBy) != 3 {
			t.Errorf("grouped cause %q with %d examples, want one of %v with 3", c.Summary, len(c.BlockedBy), want)
		}
	}
	fin := it.Causes[slices.Index(codes, "NamespaceFinalizersRemaining")]
	expectEvidence(t, fin, fmt.Sprintf("%s in %d resource instances", hold, total), fmt.Sprintf("%s in %d resource instances", archive, total/10))
	rem := it.Causes[slices.Index(codes, "NamespaceContentRemaining")]
	for _, k := range kinds {
		expectEvidence(t, rem, fmt.Sprintf("live scan: %s: %d objects left", k.Resource(), perKind))
	}

	// Read by a person: the namespace, and its 2,200 leftovers one by one,
	// each fit on two screens at 80 columns (wrapped, a long message cut to
	// a few lines), the objects held the same way in one block.
	for _, args := range [][]string{{"why", "ns/" + ns}, {"why", "-n", ns}} {
		table := run(t, args...)
		if lines := strings.Count(table.stdout, "\n"); table.code != 2 || lines > 120 {
			t.Errorf("%v: exit %d, %d lines (at most 120):\n%s", args, table.code, lines, table.stdout)
		}
	}
	if table := run(t, "why", "-n", ns); !strings.Contains(table.prose(), fmt.Sprintf("%d objects held the same way: ", total-total/10)) {
		t.Errorf("why -n %s: the objects held by %s alone are one block:\n%s", ns, hold, table.stdout)
	}
}
