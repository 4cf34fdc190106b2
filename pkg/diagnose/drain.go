package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A drain finalizer (Karpenter's karpenter.sh/termination on a Node or a
// NodeClaim, Cluster API's machine finalizer) holds its object until the
// node is empty, and empties it through the Eviction API, which refuses a
// pod while a PodDisruptionBudget selecting it allows no disruption, or
// while the pod asks not to be disrupted. The controller is alive and
// retrying; what blocks it is another object, named here.

// Annotations by which a pod refuses voluntary disruption.
const (
	doNotDisrupt = observed.DoNotDisruptAnnotation
	safeToEvict  = observed.SafeToEvictAnnotation
)

// DrainedNode is the node a drain finalizer on t empties: t itself when it
// is a Node, else the node its status names (a Cluster API Machine's
// status.nodeRef.name, a Karpenter NodeClaim's status.nodeName); "" when
// none is named.
func DrainedNode(t *observed.Target) string {
	if t.Ref.Kind == "Node" && t.Ref.APIVersion == "v1" {
		return t.Ref.Name
	}
	if name, _, _ := unstructured.NestedString(t.Object.Object, "status", "nodeRef", "name"); name != "" {
		return name
	}
	name, _, _ := unstructured.NestedString(t.Object.Object, "status", "nodeName")
	return name
}

// evictionBlocker is why one pod cannot be evicted.
type evictionBlocker struct {
	pod    *corev1.Pod
	reason string
	pdb    *policyv1.PodDisruptionBudget
	// annotation the pod refuses disruption with, if any.
	annotation string
}

func drainCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	node := DrainedNode(t)
	pods, found := s.NodePods[node]
	if node == "" || !found {
		return nil // not read: the generic FinalizerPending speaks
	}
	var blocked []evictionBlocker
	var evicting, left []string
	for i := range pods {
		p := &pods[i]
		if !drained(p) {
			continue
		}
		left = append(left, p.Namespace+"/"+p.Name)
		if p.DeletionTimestamp != nil {
			evicting = append(evicting, p.Namespace+"/"+p.Name)
			continue
		}
		blocked = append(blocked, evictionBlockers(s, p)...)
	}
	if len(left) == 0 {
		return nil // drained: the finalizer's controller has no pod left to wait on
	}
	o := catalog.FinalizerOwner(f.name)
	evidence := []report.Fact{
		report.Noted(fmt.Sprintf("finalizer %s: removed by %s once node %s is drained", f.name, o.Owner, node)),
		report.Noted(fmt.Sprintf("pods still on node %s: %d (%d being deleted): %s", node, len(left), len(evicting), strings.Join(left[:min(len(left), 10)], ", "))),
	}
	for _, b := range blocked {
		evidence = append(evidence, report.Noted(fmt.Sprintf("pod %s/%s: %s", b.pod.Namespace, b.pod.Name, b.reason)))
	}
	for _, c := range complaints(s, t, []heldBy{f}) {
		evidence = append(evidence, c.evidence)
	}
	if len(blocked) == 0 {
		c := cause(catalog.NodeDrainBlocked, settling(report.Warning, tm), 0.5,
			fmt.Sprintf("the drain of node %s is still waiting for %s (%d being deleted), and nothing refuses %s eviction", node, report.Count(len(left), "pod"), len(evicting), agree(len(left), "its", "their")),
			evidence,
			step(catalog.NodeDrainBlocked, "see-pods-left", onNode(node, ".")))
		c.About.Node, c.About.Count = node, len(left)
		return []report.Cause{c}
	}
	first := blocked[0]
	summary := fmt.Sprintf("the drain of node %s cannot evict pod %s/%s: %s", node, first.pod.Namespace, first.pod.Name, first.reason)
	if len(blocked) > 1 {
		summary = fmt.Sprintf("the drain of node %s cannot evict %s; pod %s/%s: %s", node, report.Count(len(blocked), "pod"), first.pod.Namespace, first.pod.Name, first.reason)
	}
	sev := report.Critical
	if tm.overdue < settleTime {
		sev = report.Info
	}
	c := cause(catalog.NodeDrainBlocked, sev, 0.85, summary, evidence, drainSteps(t, f, blocked)...)
	c.About.Node, c.About.Count = node, len(blocked)
	return []report.Cause{c}
}

func drainSteps(t *observed.Target, f heldBy, blocked []evictionBlocker) []report.Step {
	first := blocked[0]
	var steps []report.Step
	if i := slices.IndexFunc(blocked, func(b evictionBlocker) bool { return b.pdb != nil }); i >= 0 {
		pdb := blocked[i].pdb
		steps = append(steps,
			step(catalog.NodeDrainBlocked, "read-budget", kubectlOn(pdb.Namespace, "get", "poddisruptionbudget", pdb.Name, "-o", "wide")),
			step(catalog.NodeDrainBlocked, "allow-disruption", ""))
	}
	for _, b := range blocked {
		if b.annotation != "" {
			steps = append(steps, step(catalog.NodeDrainBlocked, "remove-annotation", kubectlOn(b.pod.Namespace, "annotate", "pod", b.pod.Name, b.annotation+"-"), "pod", b.pod.Namespace+"/"+b.pod.Name, "annotation", b.annotation))
		}
	}
	steps = append(steps, step(catalog.NodeDrainBlocked, "delete-pod", kubectlOn(first.pod.Namespace, "delete", "pod", first.pod.Name), "pod", first.pod.Namespace+"/"+first.pod.Name))
	return append(steps, step(catalog.NodeDrainBlocked, "never-remove-finalizer", "", "finalizer", f.name))
}

// drained reports whether a drain must evict the pod: not finished, not a
// static pod's mirror, not a DaemonSet's (drains leave those).
func drained(p *corev1.Pod) bool {
	if isTerminalPhase(p.Status.Phase) {
		return false
	}
	if observed.IsMirrorPod(p) {
		return false
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return false
		}
	}
	return true
}

// evictionBlockers lists why the Eviction API refuses a pod, or nothing.
func evictionBlockers(s *observed.Snapshot, p *corev1.Pod) []evictionBlocker {
	var out []evictionBlocker
	for _, a := range []string{doNotDisrupt, observed.DoNotEvictAnnotation} {
		if p.Annotations[a] == "true" {
			out = append(out, evictionBlocker{pod: p, annotation: a, reason: fmt.Sprintf("annotation %s=true: Karpenter does not disrupt it", a)})
		}
	}
	if p.Annotations[safeToEvict] == "false" {
		out = append(out, evictionBlocker{pod: p, annotation: safeToEvict, reason: fmt.Sprintf("annotation %s=false: the cluster autoscaler does not evict it", safeToEvict)})
	}
	for i := range s.PDBs[p.Namespace] {
		pdb := &s.PDBs[p.Namespace][i]
		if !selects(pdb, p) || pdb.Status.DisruptionsAllowed > 0 || unhealthyEvictable(pdb, p) {
			continue
		}
		out = append(out, evictionBlocker{pod: p, pdb: pdb, reason: fmt.Sprintf(
			"PodDisruptionBudget %s/%s allows 0 disruptions (currentHealthy %d, desiredHealthy %d, expectedPods %d): the eviction is refused (429)",
			pdb.Namespace, pdb.Name, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods)})
	}
	return out
}

// selects: in policy/v1 a nil selector selects no pod, an empty one every pod.
func selects(pdb *policyv1.PodDisruptionBudget, p *corev1.Pod) bool {
	if pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(p.Labels))
}

// unhealthyEvictable: a pod that is not Ready can be evicted under
// unhealthyPodEvictionPolicy AlwaysAllow, or, by default (IfHealthyBudget),
// while the budget's healthy pods are enough.
func unhealthyEvictable(pdb *policyv1.PodDisruptionBudget, p *corev1.Pod) bool {
	if podReady(p) {
		return false
	}
	if pol := pdb.Spec.UnhealthyPodEvictionPolicy; pol != nil && *pol == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
