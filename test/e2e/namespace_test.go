package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// The real namespace controller deletes the content and reports what holds it.
	deleted := time.Now()
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceFinalizersRemaining); err != nil {
		t.Fatal(err)
	}
	// Seconds after the delete, what remains is progress; then it is stuck.
	if r, res := diagnose(t, "why", "ns/"+ns); res.code != 0 || only(t, r).Stuck {
		t.Errorf("right after the delete: exit %d, want 0 and not stuck", res.code)
	}
	settle(t, deleted)

	r, res := diagnose(t, "why", "ns/"+ns)
	if res.code != 2 {
		t.Errorf("exit code = %d, want 2; stderr %s", res.code, res.stderr)
	}
	it := only(t, r)
	codes := codesOf(it)
	if len(codes) < 2 || codes[0] != "NamespaceFinalizersRemaining" || !slices.Contains(codes, "NamespaceContentRemaining") {
		t.Fatalf("causes = %v, want NamespaceFinalizersRemaining first and NamespaceContentRemaining", codes)
	}
	if !hasEvidence(it.Causes[0], "e2e.example.com/cleanup in 3 resource instances") || !hasEvidence(it.Causes[0], "finalizer e2e.example.com/cleanup on 3 objects: removed by a third-party controller") {
		t.Errorf("evidence lacks the controller's count: %q", it.Causes[0].Evidence)
	}
	last := it.Causes[0].Remediation[len(it.Causes[0].Remediation)-1]
	if !strings.Contains(last.Command, "/finalize") || !strings.Contains(last.Risk, "reappear") {
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
}
