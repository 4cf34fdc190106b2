package diagnose

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// podCauses mirrors the kubelet's gate before it removes a pod and explains
// what holds it.
func podCauses(s *snapshot.Snapshot, pod *corev1.Pod, tm timing) ([]report.Cause, []report.Check) {
	node := nodeHealthOf(s, pod.Spec.NodeName)
	containers := containersOf(pod)
	var causes []report.Cause

	if tm.grace < 0 {
		causes = append(causes, negativeGrace(pod, tm))
	}
	causes = append(causes, node.causes(pod, tm)...)
	if node.alive() && tm.overdue > 0 && len(containers.running) > 0 {
		causes = append(causes, containersRunning(pod, containers, tm))
	}
	if node.alive() && tm.overdue > 0 && len(containers.running) == 0 && tm.grace > 0 && len(pod.Finalizers) == 0 {
		causes = append(causes, kubeletCleanupPending(pod, tm))
	}
	causes = append(causes, finalizerCauses(pod.Finalizers, podRef(pod), tm)...)
	return causes, podChecks(pod, tm, node, containers)
}

// forecast turns findings about an object still inside its grace period into
// information, after the one that says so: nothing is stuck yet.
func forecast(found []report.Cause, tm timing) []report.Cause {
	out := []report.Cause{cause(catalog.WithinGracePeriod, report.Info, 1,
		fmt.Sprintf("inside its grace period: %s left of %ds", report.HumanDuration(tm.remaining), tm.grace),
		[]string{
			fmt.Sprintf("metadata.deletionTimestamp: %s (the deadline)", tm.deadline.UTC().Format(time.RFC3339)),
			fmt.Sprintf("metadata.deletionGracePeriodSeconds: %d", tm.grace),
			fmt.Sprintf("deletion requested at %s", tm.requestedAt.UTC().Format(time.RFC3339)),
		},
		step("Wait for the grace period to end", "", "none"))}
	for _, c := range found {
		c.Severity = report.Info
		c.Summary = "once the grace period ends: " + c.Summary
		out = append(out, c)
	}
	return out
}

func negativeGrace(pod *corev1.Pod, tm timing) report.Cause {
	return cause(catalog.NegativeGracePeriod, report.Critical, 0.9,
		fmt.Sprintf("deletionGracePeriodSeconds is %d: the runtime waits without killing the containers", tm.grace),
		[]string{fmt.Sprintf("metadata.deletionGracePeriodSeconds: %d (set by a pre-1.22 client)", tm.grace)},
		forceDelete(pod, "the pod's processes may still run on the node until the kubelet catches up"))
}

func containersRunning(pod *corev1.Pod, c containerState, tm timing) report.Cause {
	sev := report.Warning
	code := catalog.ContainersStillRunning
	summary := fmt.Sprintf("%d container(s) still running %s past the deadline: %s", len(c.running), report.HumanDuration(tm.overdue), strings.Join(c.running, ", "))
	if tm.overdue < settleTime {
		code, sev = catalog.GracePeriodOverrun, report.Info
		summary = fmt.Sprintf("%s past the deadline; the kubelet is still stopping %s", report.HumanDuration(tm.overdue), strings.Join(c.running, ", "))
	}
	return cause(code, sev, 0.6, summary,
		append([]string{fmt.Sprintf("status.phase: %s", pod.Status.Phase)}, c.evidence...),
		step("Look at the pod's events and the kubelet on its node", fmt.Sprintf("kubectl describe pod %s -n %s", pod.Name, pod.Namespace), "none: read-only"),
		forceDelete(pod, "the containers may keep running on the node; a StatefulSet replacement can then run twice (split brain)"))
}

func kubeletCleanupPending(pod *corev1.Pod, tm timing) report.Cause {
	return cause(catalog.CgroupCleanupPending, report.Warning, 0.4,
		fmt.Sprintf("containers stopped but the kubelet has not sent its final delete (%s past the deadline)", report.HumanDuration(tm.overdue)),
		[]string{
			fmt.Sprintf("status.phase: %s", pod.Status.Phase),
			fmt.Sprintf("metadata.deletionGracePeriodSeconds: %d (the kubelet's final delete sets 0)", tm.grace),
			"no container reports state.running",
		},
		step("Read the kubelet's log on the node at -v=3 for volume, cgroup or status errors", "journalctl -u kubelet | grep "+string(pod.UID), "none: read-only"),
		forceDelete(pod, "unmounts and cgroup cleanup may be left undone on the node"))
}

func forceDelete(pod *corev1.Pod, risk string) report.Step {
	return step("Force-delete the pod from the API",
		fmt.Sprintf("kubectl delete pod %s -n %s --grace-period=0 --force", pod.Name, pod.Namespace),
		risk)
}

// containerState sorts the pod's containers (init, main, ephemeral) by state.
type containerState struct {
	running  []string
	evidence []string
}

func containersOf(pod *corev1.Pod) containerState {
	var c containerState
	groups := []struct {
		field    string
		statuses []corev1.ContainerStatus
	}{
		{"status.initContainerStatuses", pod.Status.InitContainerStatuses},
		{"status.containerStatuses", pod.Status.ContainerStatuses},
		{"status.ephemeralContainerStatuses", pod.Status.EphemeralContainerStatuses},
	}
	for _, g := range groups {
		for _, st := range g.statuses {
			switch {
			case st.State.Running != nil:
				c.running = append(c.running, st.Name)
				c.evidence = append(c.evidence, fmt.Sprintf("%s[%s].state.running.startedAt: %s", g.field, st.Name, st.State.Running.StartedAt.UTC().Format(time.RFC3339)))
			case st.State.Terminated != nil:
				c.evidence = append(c.evidence, fmt.Sprintf("%s[%s].state.terminated: exitCode %d, reason %s", g.field, st.Name, st.State.Terminated.ExitCode, st.State.Terminated.Reason))
			case st.State.Waiting != nil:
				c.evidence = append(c.evidence, fmt.Sprintf("%s[%s].state.waiting: %s", g.field, st.Name, st.State.Waiting.Reason))
			}
		}
	}
	return c
}

func podRef(pod *corev1.Pod) report.ObjectRef {
	return report.ObjectRef{Resource: "pods", Namespace: pod.Namespace, Name: pod.Name}
}

func isTerminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}
