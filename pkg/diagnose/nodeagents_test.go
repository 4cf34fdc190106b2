package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// agentPodOn is virt-handler's pod on node, as its DaemonSet controls it.
func agentPodOn(node string, ready bool, change func(*corev1.Pod)) corev1.Pod {
	yes := true
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-x7k", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "virt-handler", UID: "ds-uid", Controller: &yes}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if change != nil {
		change(&p)
	}
	return p
}

// A held object pinned to a live node is judged by the node agent's pod
// there (the DaemonSet that looks like its finalizer's controller), not by
// the DaemonSet's ready count over every node.
func TestANodeAgentIsJudgedOnItsNode(t *testing.T) {
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", RestartCount: 9,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}}}
	}
	deleting := func(p *corev1.Pod) {
		now := metav1.NewTime(time.Now())
		p.DeletionTimestamp = &now
	}
	other := agentPodOn("node-2", false, crashing) // another node's agent says nothing of node-1
	for _, tc := range []struct {
		name    string
		pods    []corev1.Pod
		summary string
		steps   []string
		command string
	}{
		{"its pod crashing", []corev1.Pod{other, agentPodOn("node-1", false, crashing)},
			"the node agent that removes " + vmiFinalizer + " on node node-1 (status.nodeName) cannot act: its pod kubevirt/virt-handler-x7k on node node-1 is not ready: container agent waiting CrashLoopBackOff, restarted 9 times",
			[]string{"read-node-agent", "read-node-agent-logs", "repair-node-agent", "remove-finalizer"},
			"kubectl logs pod/virt-handler-x7k -n kubevirt --all-containers --previous"},
		{"no pod on its node", []corev1.Pod{other},
			"cannot act: DaemonSet kubevirt/virt-handler runs no pod on node node-1",
			[]string{"read-node-agent", "read-node-agent-placement", "repair-node-agent", "remove-finalizer"},
			"kubectl describe daemonset virt-handler -n kubevirt"},
		{"its pod being deleted", []corev1.Pod{agentPodOn("node-1", true, deleting)},
			"cannot act: its pod kubevirt/virt-handler-x7k on node node-1 is being deleted",
			[]string{"read-node-agent", "read-node-agent-logs", "repair-node-agent", "remove-finalizer"},
			"kubectl get pods -n kubevirt -o wide --field-selector spec.nodeName=node-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(vmi("node-1"), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
			s.Controllers = virtController
			s.Targets[0].NodeAgents = tc.pods
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if c.Code != "FinalizerPending" || c.Severity != report.Critical || !strings.Contains(c.Summary, tc.summary) || !it.Stuck {
				t.Errorf("%v: %s %s: %s", codes(it), c.Code, c.Severity, c.Summary)
			}
			if got := stepIDs(c); !slices.Equal(got, tc.steps) {
				t.Errorf("steps %v, want %v", got, tc.steps)
			}
			if !slices.ContainsFunc(c.Remediation, func(s report.Step) bool { return s.Command == tc.command }) {
				t.Errorf("no step runs %q: %+v", tc.command, c.Remediation)
			}
			if !hasLine(c.Evidence, "node agent of "+vmiFinalizer+" on node node-1 (status.nodeName): ") {
				t.Errorf("evidence %q", c.Evidence)
			}
			expectGradedSteps(t, it)
		})
	}
	t.Run("its pod ready: the controller looks healthy, as before", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		s.Targets[0].NodeAgents = []corev1.Pod{agentPodOn("node-1", true, nil)}
		c := Diagnose(s).Items[0].Causes[0]
		if strings.Contains(c.Summary, "node agent") || !strings.Contains(c.Summary, "looks healthy") {
			t.Errorf("%s: %s", c.Severity, c.Summary)
		}
		if !hasLine(c.Evidence, "node agent of "+vmiFinalizer+" on node node-1 (status.nodeName): DaemonSet kubevirt/virt-handler's pod virt-handler-x7k runs, ready") {
			t.Errorf("evidence %q", c.Evidence)
		}
	})
	t.Run("not read: nothing is claimed of the agents", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		c := Diagnose(s).Items[0].Causes[0]
		if strings.Contains(c.Summary, "node agent") || slices.ContainsFunc(c.Evidence, func(l string) bool { return strings.Contains(l, "node agent") }) {
			t.Errorf("%s %q", c.Summary, c.Evidence)
		}
	})
	t.Run("what the collector reads", func(t *testing.T) {
		s := snap(vmi("node-1"))
		s.Controllers = virtController
		if !Needs(s.Targets[0]).Has(NodeAgentEvidence) {
			t.Error("a held object naming a node does not ask for its node agents")
		}
		if got := NodeAgentReads(s, s.Targets[0]); !slices.Equal(got, []AgentRead{{Namespace: "kubevirt", Node: "node-1"}}) {
			t.Errorf("reads %v", got)
		}
		s.Controllers = &observed.Controllers{Workloads: virtController.Workloads[:1]} // no DaemonSet
		if got := NodeAgentReads(s, s.Targets[0]); len(got) != 0 {
			t.Errorf("reads %v with no DaemonSet", got)
		}
	})
}
