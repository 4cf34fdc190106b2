package diagnose

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Taints the node lifecycle controller and operators put on dead nodes.
const (
	taintUnreachable  = "node.kubernetes.io/unreachable"
	taintNotReady     = "node.kubernetes.io/not-ready"
	taintOutOfService = "node.kubernetes.io/out-of-service"
)

// podGCDelay is about how long the pod GC controller takes to force-delete
// the pods of a node object that no longer exists (40 s quarantine plus its period).
const podGCDelay = 2 * time.Minute

// nodeHealth is what the API says about the kubelet that must finish a pod.
type nodeHealth struct {
	name     string
	node     *corev1.Node
	missing  bool // looked up, does not exist
	lease    *coordinationv1.Lease
	leaseAge time.Duration
	ready    *corev1.NodeCondition
	now      time.Time
}

func nodeHealthOf(s *observed.Snapshot, name string) nodeHealth {
	n := nodeHealth{name: name, node: s.Nodes[name], missing: s.MissingNodes[name], lease: s.Leases[name], now: s.Now}
	if n.lease != nil && n.lease.Spec.RenewTime != nil {
		n.leaseAge = nonNegative(s.Now.Sub(n.lease.Spec.RenewTime.Time))
	}
	if n.node != nil {
		for i := range n.node.Status.Conditions {
			if n.node.Status.Conditions[i].Type == corev1.NodeReady {
				n.ready = &n.node.Status.Conditions[i]
			}
		}
	}
	return n
}

// terminalPhaseGate reports whether the node's kubelet writes a terminal
// phase before its final DELETE: 1.27 and later do (PodIsFinished); before,
// PodResourcesAreReclaimed let a pod go with phase Running. Unknown versions
// are taken as current.
func (n nodeHealth) terminalPhaseGate() bool {
	if n.node == nil {
		return true
	}
	v, err := version.ParseGeneric(n.node.Status.NodeInfo.KubeletVersion)
	return err != nil || v.AtLeast(version.MajorMinor(1, 27))
}

// leaseStale is true when the kubelet has not renewed its Lease within its duration.
func (n nodeHealth) leaseStale() bool {
	if n.lease == nil || n.lease.Spec.RenewTime == nil {
		return false
	}
	d := 40 * time.Second
	if n.lease.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*n.lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return n.leaseAge > d
}

func (n nodeHealth) hasTaint(key string) bool {
	if n.node == nil {
		return false
	}
	for _, t := range n.node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func (n nodeHealth) unreachable() bool {
	return n.node != nil && (n.leaseStale() || n.hasTaint(taintUnreachable) ||
		(n.ready != nil && n.ready.Status == corev1.ConditionUnknown))
}

func (n nodeHealth) notReady() bool {
	return n.node != nil && !n.unreachable() && n.ready != nil && n.ready.Status == corev1.ConditionFalse
}

// statusReportGrace is how old the Ready condition's heartbeat may be
// while a kubelet still runs: it rewrites an unchanged status every
// nodeStatusReportFrequency (5m by default), and the node lifecycle
// controller waits its node-monitor-grace-period (40s) on top.
const statusReportGrace = 5*time.Minute + 40*time.Second

// heard is true when the API shows a kubelet reporting recently: its Lease
// renewed within its duration, or, with no Lease, a Ready condition whose
// heartbeat is recent. A Node with neither (no Lease, a Ready condition
// written once and never renewed, or none) says nothing either way.
func (n nodeHealth) heard() bool {
	if n.lease != nil && n.lease.Spec.RenewTime != nil {
		return !n.leaseStale()
	}
	return n.ready != nil && !n.ready.LastHeartbeatTime.IsZero() && n.now.Sub(n.ready.LastHeartbeatTime.Time) <= statusReportGrace
}

// alive is true when a kubelet is known to be running and reporting.
func (n nodeHealth) alive() bool {
	return n.node != nil && !n.unreachable() && !n.notReady()
}

// evidence lists what was read about the node.
func (n nodeHealth) evidence() []report.Fact {
	node := nodeRef(n.name)
	if n.missing {
		return []report.Fact{{Text: fmt.Sprintf("node %s: not found", n.name), Object: node}}
	}
	if n.node == nil {
		return nil
	}
	node.UID = string(n.node.UID)
	var out []report.Fact
	lease := &report.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases", Namespace: "kube-node-lease", Name: n.name}
	if n.lease == nil {
		out = append(out, report.Fact{Text: fmt.Sprintf("lease kube-node-lease/%s: not found", n.name), Object: lease})
	} else if renew := n.lease.Spec.RenewTime; renew != nil {
		dur := "unset"
		if n.lease.Spec.LeaseDurationSeconds != nil {
			dur = fmt.Sprint(*n.lease.Spec.LeaseDurationSeconds)
		}
		lease.UID = string(n.lease.UID)
		out = append(out, report.Fact{Text: fmt.Sprintf("lease kube-node-lease/%s: spec.renewTime %s (%s ago, leaseDurationSeconds %s)",
			n.name, renew.UTC().Format(time.RFC3339), report.HumanDuration(n.leaseAge), dur),
			Object: lease, Field: "spec.renewTime", Value: renew.UTC().Format(time.RFC3339), At: timeOf(renew.Time)})
	}
	if r := n.ready; r != nil {
		e := fmt.Sprintf("node %s: condition Ready=%s reason %s since %s", n.name, r.Status, r.Reason, r.LastTransitionTime.UTC().Format(time.RFC3339))
		if r.Message != "" {
			e += ": " + r.Message
		}
		out = append(out, report.Fact{Text: e, Object: node, Field: "status.conditions[Ready]", Value: string(r.Status), Reason: r.Reason, Quote: r.Message, At: timeOf(r.LastTransitionTime.Time)})
	}
	var taints []string
	for _, t := range n.node.Spec.Taints {
		taints = append(taints, fmt.Sprintf("%s:%s", t.Key, t.Effect))
	}
	if len(taints) > 0 {
		value := "[" + strings.Join(taints, ", ") + "]"
		out = append(out, report.Fact{Text: fmt.Sprintf("node %s: spec.taints %s", n.name, value), Object: node, Field: "spec.taints", Value: value})
	}
	if v := n.node.Status.NodeInfo.KubeletVersion; v != "" {
		out = append(out, report.Fact{Text: fmt.Sprintf("node %s: status.nodeInfo.kubeletVersion %s", n.name, v), Object: node, Field: "status.nodeInfo.kubeletVersion", Value: v})
	}
	return out
}

// summary is the node's liveness in one line, for the checklist.
func (n nodeHealth) summary() string {
	var parts []string
	switch {
	case n.lease == nil:
		parts = append(parts, "no lease")
	case n.lease.Spec.RenewTime != nil:
		d := "?"
		if n.lease.Spec.LeaseDurationSeconds != nil {
			d = fmt.Sprint(*n.lease.Spec.LeaseDurationSeconds)
		}
		parts = append(parts, fmt.Sprintf("lease %s old (leaseDurationSeconds %s)", report.HumanDuration(n.leaseAge), d))
	}
	switch {
	case n.ready == nil:
		parts = append(parts, "no Ready condition")
	case n.lease == nil && n.ready.LastHeartbeatTime.IsZero():
		parts = append(parts, fmt.Sprintf("Ready=%s (%s), no heartbeat", n.ready.Status, n.ready.Reason))
	case n.lease == nil:
		parts = append(parts, fmt.Sprintf("Ready=%s (%s), heartbeat %s ago", n.ready.Status, n.ready.Reason, report.HumanDuration(nonNegative(n.now.Sub(n.ready.LastHeartbeatTime.Time)))))
	default:
		parts = append(parts, fmt.Sprintf("Ready=%s (%s)", n.ready.Status, n.ready.Reason))
	}
	for _, key := range []string{taintUnreachable, taintNotReady, taintOutOfService} {
		if n.hasTaint(key) {
			parts = append(parts, "tainted "+strings.TrimPrefix(key, "node.kubernetes.io/"))
		}
	}
	return strings.Join(parts, "; ")
}

// causes reports a node that cannot finish the pod's deletion.
func (n nodeHealth) causes(pod *corev1.Pod, tm timing) []report.Cause {
	switch {
	case n.name == "":
		return nil
	case n.missing:
		sev := report.Warning
		if tm.overdue > podGCDelay {
			sev = report.Critical
		}
		return []report.Cause{cause(catalog.NodeNotFound, sev, 0.9,
			fmt.Sprintf("spec.nodeName %s names no Node: no kubelet will finish this pod", n.name),
			append([]report.Fact{report.FieldFact("spec.nodeName", n.name)}, n.evidence()...),
			step(catalog.NodeNotFound, "wait-pod-gc", waitCommand(report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, podGCDelay)),
			step(catalog.NodeNotFound, "check-pod-gc", kubectlOn(pod.Namespace, "get", "pod", pod.Name, "-o", "jsonpath={.metadata.finalizers}")),
			forceDelete(catalog.NodeNotFound, "force-delete", pod))}
	case n.unreachable():
		return []report.Cause{cause(catalog.NodeUnreachable, report.Critical, 0.9,
			fmt.Sprintf("node %s stopped reporting%s: no kubelet is running the pod's shutdown", n.name, n.since()),
			n.evidence(), deadNodeSteps(pod, n)...)}
	case n.notReady():
		return []report.Cause{cause(catalog.NodeNotReady, report.Critical, 0.7,
			fmt.Sprintf("node %s is NotReady (%s) while its kubelet still reports: the kubelet cannot finish the pod", n.name, n.ready.Reason),
			n.evidence(),
			onTheNode(n.name, step(catalog.NodeNotReady, "repair-runtime", "systemctl restart containerd kubelet")),
			forceDelete(catalog.NodeNotReady, "force-delete", pod))}
	}
	return nil
}

// since says how long ago the node was last heard of.
func (n nodeHealth) since() string {
	if n.lease != nil && n.lease.Spec.RenewTime != nil {
		return fmt.Sprintf(" (lease last renewed %s ago)", report.HumanDuration(n.leaseAge))
	}
	return ""
}

// deadNodeSteps is the safe-to-risky path out of a dead node: check, fence,
// out-of-service taint, and only then force delete.
// The taint is planned for the Node the diagnosis read (its uid and
// resourceVersion): fix never taints a node recreated under its name.
func deadNodeSteps(pod *corev1.Pod, n nodeHealth) []report.Step {
	node := n.name
	taint := step(catalog.NodeUnreachable, "fence-node", kubectlOn("", "taint", "nodes", node, taintOutOfService+"=nodeshutdown:NoExecute"))
	taint.Apply = &report.Action{Verb: report.ActionTaintOutOfService,
		Object:          report.ObjectRef{APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: node, UID: string(n.node.UID)},
		ResourceVersion: n.node.ResourceVersion}
	return []report.Step{
		step(catalog.NodeUnreachable, "check-node", kubectlOn("", "get", "node", node, "-o", "wide")),
		step(catalog.NodeUnreachable, "restore-node", ""),
		taint,
		forceDelete(catalog.NodeUnreachable, "force-delete", pod),
	}
}
