package collect

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// What RBAC lets service accounts write, kept only where it names a
// controller: update or patch of resources in named groups, bound to a
// service account (a RoleBinding's subject without a namespace is in the
// binding's); a wildcard group is an administrator's, reads write nothing.
func TestGrantsNameWhoMayWrite(t *testing.T) {
	sa := func(ns, name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	fake := kubefake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "capa-manager-role"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"awsclusters"}, Verbs: []string{"get", "list", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin-ish"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "capa-manager-rolebinding"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "capa-manager-role"},
			Subjects: []rbacv1.Subject{sa("capa-system", "capa-controller-manager"), {Kind: rbacv1.UserKind, Name: "alice"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gc"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin-ish"}, Subjects: []rbacv1.Subject{sa("kube-system", "generic-garbage-collector")}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "ops"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"widgets.example.com"}, Resources: []string{"widgets/finalizers"}, Verbs: []string{"update"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "ops"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "leader"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "widget-operator"}}},
	)
	grants, failed := (&Collector{Clients: &kube.Clients{Typed: fake}}).readGrants(context.Background())
	if failed != nil {
		t.Fatal(failed)
	}
	if len(grants) != 2 {
		t.Fatalf("grants %+v, want 2", grants)
	}
	byAccount := map[string]string{}
	for _, g := range grants {
		byAccount[g.ServiceAccount] = g.Via + " " + g.Namespace
	}
	if byAccount["capa-system/capa-controller-manager"] != "clusterrole capa-manager-role (clusterrolebinding capa-manager-rolebinding) " ||
		byAccount["ops/widget-operator"] != "role leader (rolebinding ops/leader) ops" {
		t.Errorf("grants %v", byAccount)
	}
}
