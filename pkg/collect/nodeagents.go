package collect

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "node agents", after: []string{"controllers"}, read: (*Collector).readNodeAgents,
		permissions: []Permission{
			{Read: "`list` pods in the namespace of a DaemonSet that looks like a finalizer's controller, on a node a held object names (field selector `spec.nodeName`)", UsedFor: "whether the node agent's pod on the object's node can act (none, being deleted, not ready)", Without: "`skipped` names the read; the DaemonSet is judged by its ready count alone"},
		}})
}

// readNodeAgents gives each held object that names a node the pods there of
// the namespaces of the DaemonSets that look like its finalizers'
// controllers (diagnose.NodeAgentReads): one list per namespace and node,
// by field selector, shared by the objects that need it.
func (c *Collector) readNodeAgents(ctx context.Context, s *observed.Snapshot) {
	read := map[diagnose.AgentRead][]corev1.Pod{}
	for _, t := range c.needing(s, diagnose.NodeAgentEvidence) {
		agents, ok := []corev1.Pod{}, true
		for _, r := range diagnose.NodeAgentReads(s, t) {
			pods, done := read[r]
			if !done {
				list, err := c.Clients.Typed.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + r.Node})
				if err != nil { // unread is not none: the rule says nothing of the agents
					c.skipTarget(t, skipOf("list pods -n "+r.Namespace+" on node "+r.Node, err))
					ok = false
					break
				}
				pods = daemonSetPods(list.Items, r.Node)
				read[r] = pods
			}
			agents = append(agents, pods...)
		}
		if ok {
			t.NodeAgents = agents
		}
	}
}

// daemonSetPods keeps the pods on node a DaemonSet controls.
func daemonSetPods(pods []corev1.Pod, node string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}
