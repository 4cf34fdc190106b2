package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// podChecks is the kubelet's reclaim gate as a checklist.
func podChecks(pod *corev1.Pod, tm timing, f podFacts) []report.Check {
	checks := []report.Check{graceCheck(tm), nodeCheck(f.node)}
	stopped := report.Check{Name: "containers stopped", Status: report.Pass, Detail: "no container reports state.running"}
	if len(f.containers.running) > 0 {
		stopped.Status, stopped.Detail = report.Fail, "running: "+strings.Join(f.containers.running, ", ")
		if tm.remaining > 0 {
			stopped.Status = report.Pending // they may run until the deadline, when the kubelet kills them
		}
	}
	if fact := f.kubelet.containersFact(); fact != "" {
		stopped.Detail = fact // the kubelet's word decided the row (withKubelet)
	}
	checks = append(checks, stopped)
	checks = append(checks,
		sandboxCheck(pod, f.containers, f.events),
	)
	if c, ok := claimsCheck(f.claims, f.claimsKnown); ok {
		checks = append(checks, c)
	}
	volumes, ok := kubeletVolumesCheck(f.kubelet)
	if !ok {
		volumes = volumesCheck(pod, f.volumes, f.volumesKnown, tm.grace == 0 && isTerminalPhase(pod.Status.Phase))
	}
	cgroup, ok := kubeletCgroupCheck(f.kubelet)
	if !ok {
		cgroup = cgroupCheck(tm, f.kubeletUnread)
	}
	checks = append(checks, phaseCheck(pod, f.node, stopped), volumes, cgroup)
	checks = append(checks, finalDeleteCheck(tm, f.refused, f.kubelet.forgotten(), checks))
	if len(pod.Finalizers) > 0 {
		checks = append(checks, report.Check{Name: "finalizers cleared", Status: report.Fail, Detail: "metadata.finalizers: " + strings.Join(pod.Finalizers, ", ")})
	} else {
		checks = append(checks, report.Check{Name: "finalizers cleared", Status: report.Pass, Detail: "no metadata.finalizers"})
	}
	return checks
}

func statusCheck(name string, ok bool, detail string) report.Check {
	st := report.Fail
	if ok {
		st = report.Pass
	}
	return report.Check{Name: name, Status: st, Detail: detail}
}

func graceCheck(tm timing) report.Check {
	if tm.overdue > 0 || tm.remaining == 0 {
		return report.Check{Name: "grace period over", Status: report.Pass,
			Detail: fmt.Sprintf("%ds grace, deadline passed %s ago", tm.grace, report.HumanDuration(tm.overdue))}
	}
	return report.Check{Name: "grace period over", Status: report.Pending,
		Detail: fmt.Sprintf("%s left of %ds", report.HumanDuration(tm.remaining), tm.grace)}
}

func nodeCheck(n nodeHealth) report.Check {
	c := report.Check{Name: "node alive"}
	switch {
	case n.name == "":
		c.Status, c.Detail = report.Pass, "not scheduled: no kubelet involved"
	case n.missing:
		c.Status, c.Detail = report.Fail, fmt.Sprintf("node %s not found", n.name)
	case n.node == nil:
		c.Status, c.Detail = report.Unknown, fmt.Sprintf("node %s not read", n.name)
	case n.alive() && !n.heard():
		c.Status, c.Detail = report.Unknown, n.summary()+": neither a renewed Lease nor a recent Ready heartbeat shows a kubelet reporting"
	case n.alive():
		c.Status, c.Detail = report.Pass, n.summary()
	default:
		c.Status, c.Detail = report.Fail, n.summary()
	}
	return c
}

// sandboxCheck: the kubelet writes a terminal phase only after stopping the sandbox.
func sandboxCheck(pod *corev1.Pod, c containerState, ev podEvents) report.Check {
	ch := report.Check{Name: "sandbox torn down"}
	switch {
	case isTerminalPhase(pod.Status.Phase):
		ch.Status, ch.Detail = report.Pass, "terminal phase written, which the kubelet does after stopping the sandbox"
	case ev.sandboxFailed != nil:
		ch.Status, ch.Detail = report.Fail, "FailedKillPod event for KillPodSandbox"
	case len(c.running) == 0 && pod.Spec.NodeName != "":
		ch.Status, ch.Detail = report.Fail, "containers stopped, no terminal phase yet"
	default:
		ch.Status, ch.Detail = report.Unknown, "containers not stopped yet"
	}
	return ch
}

// cgroupCheck: the pod cgroup is not visible through the API; the kubelet
// sends its final DELETE only after removing it. When --kubelet asked the
// node and it did not answer, the row says why where it is read.
func cgroupCheck(tm timing, kubeletUnread string) report.Check {
	c := report.Check{Name: "cgroup sandbox removed", Status: report.Unknown, Detail: report.NotVisible}
	switch {
	case tm.grace == 0:
		c.Status, c.Detail = report.Pass, "inferred: the final grace-0 DELETE was sent"
	case kubeletUnread != "":
		c.Detail += "; --kubelet asked the node: " + kubeletUnread
	}
	return c
}

// finalDeleteCheck: the kubelet sends its grace-0 DELETE only once the rows
// before this one pass; until then it is pending (not sent yet), not failed.
// It fails when admission refuses it, when the kubelet will never send it
// (it no longer manages the pod), or when nothing before it is left to wait for.
func finalDeleteCheck(tm timing, refused []refusal, forgotten bool, before []report.Check) report.Check {
	c := report.Check{Name: "final delete admitted", Status: report.Fail, Detail: fmt.Sprintf("metadata.deletionGracePeriodSeconds: %d", tm.grace)}
	switch {
	case tm.grace == 0:
		c.Status = report.Pass
	case len(refused) > 0:
		for _, r := range refused {
			c.Detail += "; " + r.summary
			c.Quotes = append(c.Quotes, r.summary)
		}
	case forgotten:
		c.Detail = "never sent: the kubelet no longer manages the pod (" + c.Detail + ")"
	case slices.ContainsFunc(before, func(b report.Check) bool { return b.Status != report.Pass }):
		c.Status, c.Detail = report.Pending, "not sent yet ("+c.Detail+")"
	}
	return c
}

// phaseCheck: from 1.27 the kubelet writes a terminal phase before its final
// DELETE, once the containers are stopped; older kubelets did not
// (PodResourcesAreReclaimed did not ask for it).
func phaseCheck(pod *corev1.Pod, n nodeHealth, stopped report.Check) report.Check {
	c := statusCheck("terminal phase reported", isTerminalPhase(pod.Status.Phase), fmt.Sprintf("status.phase: %s", pod.Status.Phase))
	switch {
	case c.Status == report.Pass:
	case !n.terminalPhaseGate():
		c.Status = report.Pass
		c.Detail += fmt.Sprintf(" (not a gate for kubelet %s: before 1.27 a pod was removed without a terminal phase)", n.node.Status.NodeInfo.KubeletVersion)
	case stopped.Status != report.Pass:
		c.Status = report.Pending // written once the containers are stopped
	}
	return c
}
