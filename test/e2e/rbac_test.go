package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// A user who may read nothing gets an error, not a reassuring "nothing stuck".
func TestUserWithNoRightsGetsAnError(t *testing.T) {
	t.Parallel()
	res := run(t, "--context", "lab-nobody", "list")
	if res.code != 1 || !strings.Contains(res.stderr, "could not list any") || !strings.Contains(res.stderr, "forbidden") {
		t.Errorf("exit %d stderr %q", res.code, res.stderr)
	}
}

// A user who may read pods but not nodes gets the pod's diagnosis, with the
// node checks reported as skipped instead of guessed.
func TestForbiddenReadsAreReportedAndSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "limited")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-pod-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-pod-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "pod-reader"}},
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.DyingNode(ctx, "dead-2"); err != nil {
		t.Fatal(err)
	}
	if err := env.RunOnDyingNode(ctx, scenario.PodSpec(ns, "web-0", "dead-2")); err != nil {
		t.Fatal(err)
	}
	if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
		t.Fatal(err)
	}
	settle(t, time.Now())

	r, res := diagnose(t, "--as", "pod-reader", "why", "pod/web-0", "-n", ns)
	if res.code != 2 {
		t.Errorf("exit %d, want 2 (past its deadline, cause unknown); stderr %s", res.code, res.stderr)
	}
	it := only(t, r)
	var skipped bool
	for _, s := range it.Skipped {
		skipped = skipped || (s.Check == "nodes/dead-2" && s.Reason == "Forbidden")
	}
	if !skipped {
		t.Errorf("skipped = %+v, want nodes/dead-2 Forbidden", it.Skipped)
	}
	if got := checkStatus(it, "node alive"); got != "unknown" {
		t.Errorf("node alive = %s, want unknown", got)
	}
	if codesOf(it)[0] != "DiagnosisIncomplete" || !hasEvidence(it.Causes[0], "not read: nodes/dead-2 (Forbidden)") {
		t.Errorf("causes %v evidence %q", codesOf(it), it.Causes[0].Evidence)
	}

	// A scan with most types forbidden carries on with what it may read.
	r, res = diagnose(t, "--as", "pod-reader", "list", "-n", ns)
	if res.code != 2 || len(r.Items) != 1 {
		t.Fatalf("list: exit %d, %d items; stderr %s", res.code, len(r.Items), res.stderr)
	}
	var forbidden int
	for _, s := range r.Skipped {
		if s.Reason == "Forbidden" && strings.HasPrefix(s.Check, "list ") {
			forbidden++
		}
	}
	if forbidden < 10 {
		t.Errorf("want the forbidden types listed under skipped, got %d: %+v", forbidden, r.Skipped)
	}
}
