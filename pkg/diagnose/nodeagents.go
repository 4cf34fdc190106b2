package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A node agent is a controller that runs as a DaemonSet, one pod per node:
// for an object pinned to a node (a local volume's spec.ownerNodeID), only
// its pod on that node can do the cleanup (remove the logical volume, then
// the finalizer). The DaemonSet's ready count says nothing of that one pod:
// 9 of 10 ready reads as healthy while the one that matters crashes, or was
// never placed there (a taint it does not tolerate).

// AgentRead is a read the node-agent rule needs: the pods of a namespace
// on a node (the DaemonSets' pods there are among them).
type AgentRead struct{ Namespace, Node string }

// NodeAgentReads lists, for an object held by a third-party finalizer that
// names a node, the namespaces and nodes where the pods of the DaemonSets
// that look like its finalizers' controllers are to be read.
func NodeAgentReads(s *observed.Snapshot, t *observed.Target) []AgentRead {
	var out []AgentRead
	for _, a := range agentsOf(s, t) {
		r := AgentRead{Namespace: a.daemonSet.Namespace, Node: a.node.Node}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// nodeAgent is a DaemonSet that looks like a finalizer's controller, and a
// node the held object names: its pod there (nil: none) alone can act.
type nodeAgent struct {
	finalizer string
	daemonSet observed.Workload
	node      observed.NodeReference
	pod       *corev1.Pod
}

// agentsOf pairs each node t names with each DaemonSet that looks like
// the controller of one of its third-party finalizers.
func agentsOf(s *observed.Snapshot, t *observed.Target) []nodeAgent {
	if t.Pod != nil || s.Controllers == nil || t.Object.GetDeletionTimestamp() == nil {
		return nil
	}
	nodes := observed.NodeReferences(t.Object)
	var out []nodeAgent
	for _, f := range t.Object.GetFinalizers() {
		if !catalog.ThirdPartyFinalizer(f) {
			continue
		}
		for _, w := range ownerWorkloads(s.Controllers, f) {
			if !strings.EqualFold(w.Kind, "DaemonSet") {
				continue
			}
			for _, n := range nodes {
				out = append(out, nodeAgent{finalizer: f, daemonSet: w, node: n, pod: agentPod(t.NodeAgents, w, n.Node)})
			}
		}
	}
	return out
}

// agentPod is the DaemonSet's pod on node among pods, nil when none.
func agentPod(pods []corev1.Pod, ds observed.Workload, node string) *corev1.Pod {
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ds.Namespace || p.Spec.NodeName != node {
			continue
		}
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" && ref.Name == ds.Name && ref.Controller != nil && *ref.Controller {
				return p
			}
		}
	}
	return nil
}

// agentTrouble is what stops a node agent on a live node: its pod is
// missing, being deleted, or not ready ("" when it runs, ready).
func (a nodeAgent) trouble() string {
	ds := a.daemonSet.Namespace + "/" + a.daemonSet.Name
	switch p := a.pod; {
	case p == nil:
		return fmt.Sprintf("DaemonSet %s runs no pod on node %s", ds, a.node.Node)
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("its pod %s/%s on node %s is being deleted", p.Namespace, p.Name, a.node.Node)
	case !podReady(p):
		return fmt.Sprintf("its pod %s/%s on node %s is not ready%s", p.Namespace, p.Name, a.node.Node, containerTrouble(p))
	}
	return ""
}

// containerTrouble says why a pod's containers do not run:
// ": container agent waiting CrashLoopBackOff, restarted 9 times".
func containerTrouble(p *corev1.Pod) string {
	for _, cs := range statusesOf(p) {
		if cs.Ready {
			continue
		}
		var state string
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			state = "waiting " + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("terminated %s (exit code %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		case cs.State.Running != nil:
			state = "running, not ready"
		default:
			continue
		}
		if cs.RestartCount > 0 {
			state += fmt.Sprintf(", restarted %s", report.Count(int(cs.RestartCount), "time"))
		}
		return fmt.Sprintf(": container %s %s", cs.Name, state)
	}
	if p.Status.Phase != "" && p.Status.Phase != corev1.PodRunning {
		return ": phase " + string(p.Status.Phase)
	}
	return ""
}

// stuckAgent finds, among the node agents of t on the nodes it names that
// are alive (a node gone or silent is its own cause), the first that
// cannot act, and says what was read of each.
func stuckAgent(s *observed.Snapshot, t *observed.Target) (nodeAgent, string, []report.Fact) {
	if t.NodeAgents == nil {
		return nodeAgent{}, "", nil // not read
	}
	var stuck nodeAgent
	var why string
	var evidence []report.Fact
	for _, a := range agentsOf(s, t) {
		if !nodeHealthOf(s, a.node.Node).alive() {
			continue
		}
		trouble := a.trouble()
		line := fmt.Sprintf("node agent of %s on node %s (%s): ", a.finalizer, a.node.Node, a.node.Field)
		switch {
		case trouble != "":
			line += trouble
		default:
			line += fmt.Sprintf("DaemonSet %s/%s's pod %s runs, ready", a.daemonSet.Namespace, a.daemonSet.Name, a.pod.Name)
		}
		evidence = append(evidence, report.Noted(line))
		if trouble != "" && why == "" {
			stuck, why = a, trouble
		}
	}
	return stuck, why, evidence
}

// agentSteps read the agent's pods on the node and its logs, then repair it.
func agentSteps(a nodeAgent) []report.Step {
	steps := []report.Step{step(catalog.FinalizerPending, "read-node-agent",
		kubectl(a.daemonSet.Namespace, "get", "pods", "-o", "wide", "--field-selector", "spec.nodeName="+a.node.Node), "node", a.node.Node)}
	if a.pod != nil {
		logs := []string{"logs", "pod/" + a.pod.Name, "--all-containers"}
		if restarted(a.pod) {
			logs = append(logs, "--previous") // the crash, not the start that follows it
		}
		steps = append(steps, step(catalog.FinalizerPending, "read-node-agent-logs", kubectl(a.pod.Namespace, logs...)))
	} else {
		steps = append(steps, step(catalog.FinalizerPending, "read-node-agent-placement",
			kubectlOn(a.daemonSet.Namespace, "describe", "daemonset", a.daemonSet.Name)))
	}
	return append(steps, step(catalog.FinalizerPending, "repair-node-agent", "", "node", a.node.Node))
}

func restarted(p *corev1.Pod) bool {
	for _, cs := range statusesOf(p) {
		if cs.RestartCount > 0 {
			return true
		}
	}
	return false
}

// statusesOf is a pod's init and app containers' statuses, in that order.
func statusesOf(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}
