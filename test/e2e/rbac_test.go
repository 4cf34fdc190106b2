package e2e

import (
	"context"
	"fmt"
	"os"
	"sigs.k8s.io/yaml"
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
	grantClusterRole(t, "pod-reader", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list"}}})
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

// The RBAC matrix: a user with the built-in view ClusterRole bound in one
// namespace, and a user with the ClusterRole docs/rbac.md gives, whose
// verdicts must be the administrator's, complete.
func TestRBACMatrix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	viewed, calm := namespace(t, "viewed"), namespace(t, "calm")
	if err := env.ConfigMapWithFinalizer(ctx, viewed, "held", "e2e.example.com/hold"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{viewed, calm} {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "ns-viewer", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "ns-viewer"}},
		}
		if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grantClusterRole(t, "docs-reader", roleFromDocs(t).Rules)
	settle(t, time.Now())

	t.Run("namespace view", func(t *testing.T) {
		// The stuck configmap is found and explained; what view may not read
		// (secrets, cluster-scoped types, other namespaces' controllers) is
		// named, and the report says it is partial.
		r, res := diagnose(t, "--as", "ns-viewer", "list", "-n", viewed)
		if res.code != 2 || len(r.Items) != 1 || codesOf(r.Items[0])[0] != "FinalizerPending" {
			t.Fatalf("exit %d, items %+v; stderr %s", res.code, r.Items, res.stderr)
		}
		if r.Complete == nil || *r.Complete {
			t.Errorf("complete = %v, want false", r.Complete)
		}
		forbidden := map[string]bool{}
		for _, s := range r.Skipped {
			if s.Reason == "Forbidden" {
				forbidden[s.Check] = true
			}
		}
		if !forbidden["list secrets"] || !forbidden["list deployments.apps"] {
			t.Errorf("skipped %+v, want the secrets and the cluster-wide deployments lists named Forbidden", r.Skipped)
		}
		// Nothing stuck, but not everything read: not "all clear".
		res = run(t, "--as", "ns-viewer", "list", "-n", calm)
		if res.code != 1 || !strings.Contains(res.stderr, "could not read") {
			t.Errorf("nothing stuck, partial: exit %d, stderr %q; want 1 naming what could not be read", res.code, res.stderr)
		}
		if res = run(t, "--as", "ns-viewer", "list", "-n", calm, "--allow-partial"); res.code != 0 {
			t.Errorf("--allow-partial: exit %d, stderr %q", res.code, res.stderr)
		}
	})

	t.Run("the documented role", func(t *testing.T) {
		for _, args := range [][]string{{"why", "-n", viewed}, {"why", "configmap/held", "-n", viewed}, {"why", "ns/" + viewed}} {
			admin, resAdmin := diagnose(t, args...)
			docs, resDocs := diagnose(t, append([]string{"--as", "docs-reader"}, args...)...)
			if resDocs.code != resAdmin.code || verdicts(docs) != verdicts(admin) {
				t.Errorf("%v: the documented role sees\n%s(exit %d)\nthe administrator\n%s(exit %d)", args, verdicts(docs), resDocs.code, verdicts(admin), resAdmin.code)
			}
			if docs.Complete == nil || !*docs.Complete || len(docs.Skipped) > 0 {
				t.Errorf("%v: the documented role's report is partial: %+v", args, docs.Skipped)
			}
		}
	})
}

// roleFromDocs reads the ClusterRole docs/rbac.md gives, so the test and the
// docs cannot drift apart.
func roleFromDocs(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	doc, err := os.ReadFile("../../docs/rbac.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "```yaml\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		t.Fatal("docs/rbac.md has no yaml block")
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict([]byte(block), role); err != nil {
		t.Fatalf("docs/rbac.md's ClusterRole: %v", err)
	}
	if role.Kind != "ClusterRole" || len(role.Rules) == 0 {
		t.Fatalf("docs/rbac.md's yaml block is not a ClusterRole with rules: %+v", role)
	}
	return role
}

// verdicts is what a report concludes, object by object: stuck or not,
// severity, causes, checks and skipped reads (times and messages aside).
func verdicts(r report) string {
	var b strings.Builder
	var walk func(depth int, it item)
	walk = func(depth int, it item) {
		fmt.Fprintf(&b, "%s%s/%s/%s stuck=%v %s %v", strings.Repeat("  ", depth), it.Object.Kind, it.Object.Namespace, it.Object.Name, it.Stuck, it.Severity, codesOf(it))
		for _, c := range it.Checks {
			fmt.Fprintf(&b, " %s=%s", c.Name, c.Status)
		}
		for _, s := range it.Skipped {
			fmt.Fprintf(&b, " skipped:%s(%s)", s.Check, s.Reason)
		}
		b.WriteString("\n")
		for _, c := range it.Causes {
			for _, d := range c.BlockedBy {
				walk(depth+1, d)
			}
		}
	}
	for _, it := range r.Items {
		walk(0, it)
	}
	return b.String()
}

// grantClusterRole binds a ClusterRole of these rules, e2e-USER, to the user.
func grantClusterRole(t *testing.T, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + user}, Rules: rules}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
