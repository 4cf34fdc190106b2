package collect

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "drains", after: nesting, read: (*Collector).readDrains,
		permissions: []Permission{
			{Read: "`list` pods bound to a node (all namespaces, field selector `spec.nodeName`) and poddisruptionbudgets in their namespaces", UsedFor: "`NodeDrainBlocked`: the pods a drain finalizer (Karpenter's, Cluster API's) still has to evict, and the budgets that refuse their eviction", Without: "the generic `FinalizerPending`; `skipped` names the read"},
		}})
}

// readDrains reads, for each node a drain finalizer empties (the node held
// by it, or the node of a Machine or NodeClaim held by it), the pods still
// bound to it, and the PodDisruptionBudgets of their namespaces: what the
// drain's evictions must get past.
func (c *Collector) readDrains(ctx context.Context, s *observed.Snapshot) {
	byNode := map[string][]*observed.Target{}
	var nodes []string
	for _, t := range c.needing(s, diagnose.DrainEvidence) {
		node := diagnose.DrainedNode(t)
		if node == "" {
			continue
		}
		if byNode[node] == nil {
			nodes = append(nodes, node)
		}
		byNode[node] = append(byNode[node], t)
	}
	if len(nodes) == 0 {
		return
	}
	slices.Sort(nodes)
	pods := make([][]corev1.Pod, len(nodes))
	errs := make([]error, len(nodes))
	c.parallel(len(nodes), func(i int) {
		pods[i], errs[i] = listAll[corev1.Pod](ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodes[i]}, pages(c.Clients.Typed.CoreV1().Pods("").List))
	})
	s.NodePods, s.PDBs = map[string][]corev1.Pod{}, map[string][]policyv1.PodDisruptionBudget{}
	var namespaces []string
	for i, node := range nodes {
		if errs[i] != nil {
			for _, t := range byNode[node] {
				c.skipTarget(t, skipOf("pods on node "+node, errs[i]))
			}
			continue
		}
		s.NodePods[node] = pods[i]
		for _, p := range pods[i] {
			if !slices.Contains(namespaces, p.Namespace) {
				namespaces = append(namespaces, p.Namespace)
			}
		}
	}
	pdbs := make([][]policyv1.PodDisruptionBudget, len(namespaces))
	pdbErrs := make([]error, len(namespaces))
	c.parallel(len(namespaces), func(i int) {
		pdbs[i], pdbErrs[i] = listAll[policyv1.PodDisruptionBudget](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.PolicyV1().PodDisruptionBudgets(namespaces[i]).List))
	})
	for i, ns := range namespaces {
		if pdbErrs[i] != nil {
			c.Skip(skipOf("poddisruptionbudgets in "+ns, pdbErrs[i]))
			continue
		}
		s.PDBs[ns] = pdbs[i]
	}
}
