package collect

import (
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// readGrants reads what RBAC lets service accounts write (cluster roles and
// roles, through their bindings), reduced to the rules that let one update
// or patch the resources of named API groups: a controller is allowed to
// remove its finalizer, so the grant names it when its name does not. Four
// lists at once; nil and a skip when one fails.
func (c *Collector) readGrants(ctx context.Context) ([]observed.Grant, *report.Skip) {
	rbac := c.rbacLists(ctx)
	clusterRoles, clusterBindings, roles, bindings := rbac.clusterRoles, rbac.clusterBindings, rbac.roles, rbac.bindings
	for i, err := range rbac.errs {
		if err != nil {
			sk := skipOf("list "+[]string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}[i], err)
			return nil, &sk
		}
	}
	clusterRules := map[string][]rbacv1.PolicyRule{}
	for _, cr := range clusterRoles {
		clusterRules[cr.Name] = cr.Rules
	}
	roleRules := map[string][]rbacv1.PolicyRule{}
	for _, ro := range roles {
		roleRules[ro.Namespace+"/"+ro.Name] = ro.Rules
	}
	grants := []observed.Grant{}
	for _, b := range clusterBindings {
		if b.RoleRef.Kind == "ClusterRole" {
			grants = append(grants, grantsOf(b.Subjects, "", clusterRules[b.RoleRef.Name], "clusterrole "+b.RoleRef.Name+" (clusterrolebinding "+b.Name+")", "")...)
		}
	}
	for _, b := range bindings {
		rules, kind := roleRules[b.Namespace+"/"+b.RoleRef.Name], "role"
		if b.RoleRef.Kind == "ClusterRole" {
			rules, kind = clusterRules[b.RoleRef.Name], "clusterrole"
		}
		grants = append(grants, grantsOf(b.Subjects, b.Namespace, rules, kind+" "+b.RoleRef.Name+" (rolebinding "+b.Namespace+"/"+b.Name+")", b.Namespace)...)
	}
	return grants, nil
}

// grantsOf is, for each service account among subjects, each rule that
// lets it update or patch resources of named groups.
func grantsOf(subjects []rbacv1.Subject, bindingNS string, rules []rbacv1.PolicyRule, via, scope string) []observed.Grant {
	var out []observed.Grant
	for _, sub := range subjects {
		if sub.Kind != rbacv1.ServiceAccountKind {
			continue
		}
		ns := sub.Namespace
		if ns == "" {
			ns = bindingNS
		}
		for _, rule := range rules {
			writes := slices.ContainsFunc(rule.Verbs, func(v string) bool { return v == "update" || v == "patch" || v == rbacv1.VerbAll })
			if !writes || len(rule.Resources) == 0 || slices.Contains(rule.APIGroups, rbacv1.APIGroupAll) {
				continue
			}
			out = append(out, observed.Grant{ServiceAccount: ns + "/" + sub.Name, APIGroups: rule.APIGroups, Resources: rule.Resources, Via: via, Namespace: scope})
		}
	}
	return out
}

// rbacRead is what the four RBAC lists read.
type rbacRead struct {
	clusterRoles    []rbacv1.ClusterRole
	clusterBindings []rbacv1.ClusterRoleBinding
	roles           []rbacv1.Role
	bindings        []rbacv1.RoleBinding
	errs            [4]error
}

// rbacLists lists the roles and their bindings at once, each once per run:
// the scan may have started them (early.go).
func (c *Collector) rbacLists(ctx context.Context) rbacRead {
	var out rbacRead
	concurrently(
		func() { out.clusterRoles, out.errs[0] = clusterRoleList.read(c, ctx) },
		func() { out.clusterBindings, out.errs[1] = clusterRoleBindingList.read(c, ctx) },
		func() { out.roles, out.errs[2] = roleList.read(c, ctx) },
		func() { out.bindings, out.errs[3] = roleBindingList.read(c, ctx) },
	)
	return out
}
