package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/celeval"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// podFactsOf gathers what the snapshot says about one pod's shutdown.
func podFactsOf(s *observed.Snapshot, t *observed.Target, tm timing) podFacts {
	pod := t.Pod
	f := podFacts{
		node:       nodeHealthOf(s, pod.Spec.NodeName),
		containers: containersOf(pod),
		events:     podEventsOf(s.Events[pod.UID]),
		refused:    finalDeleteRefusals(s, pod, tm),
	}
	f.volumes, f.volumesKnown = podVolumesOf(s, pod)
	f.claims, f.claimsKnown = podClaimsOf(s, pod)
	if f.kubelet = kubeletViewOf(s, pod); f.kubelet != nil {
		f.containers = withKubelet(f.containers, f.kubelet)
	}
	f.kubeletUnread = kubeletUnread(t)
	return f
}

// podRuleCauses mirrors the kubelet's gate before it removes a pod and
// explains what holds it (its finalizers are the generic rule's).
func podRuleCauses(x subject) []report.Cause {
	s, pod, tm, f := x.s, x.t.Pod, x.tm, *x.pod
	var causes []report.Cause
	if tm.grace < 0 {
		causes = append(causes, negativeGrace(pod, tm))
	}
	if observed.IsMirrorPod(pod) {
		causes = append(causes, mirrorPodCauses(pod, tm, f)...)
	} else {
		causes = append(causes, f.node.causes(pod, tm)...)
	}
	if f.node.alive() {
		causes = append(causes, kubeletCauses(pod, tm, f, s.Now)...)
	}
	return aboutNode(causes, pod.Spec.NodeName)
}

// mirrorPodCauses: a static pod's mirror is removed only by the kubelet that
// runs the static pod; no controller, pod GC included, acts on it.
func mirrorPodCauses(pod *corev1.Pod, tm timing, f podFacts) []report.Cause {
	nodeCauses := f.node.causes(pod, tm)
	if len(nodeCauses) == 0 && (!f.node.alive() || tm.overdue < settleTime) {
		return nil
	}
	evidence := []report.Fact{{Text: fmt.Sprintf("metadata.annotations[%s]: %s (a static pod's mirror)", observed.MirrorPodAnnotation, pod.Annotations[observed.MirrorPodAnnotation]),
		Field: "metadata.annotations[" + observed.MirrorPodAnnotation + "]", Value: pod.Annotations[observed.MirrorPodAnnotation]}}
	sev, summary := report.Warning, fmt.Sprintf("the kubelet on %s has not removed this static pod's mirror %s past the deadline", pod.Spec.NodeName, report.HumanDuration(tm.overdue))
	var quotes quoted
	for _, c := range nodeCauses {
		evidence = append(evidence, c.Facts...)
		sev, summary = report.Critical, fmt.Sprintf("static pod mirror: only the kubelet on %s removes it, and it is not syncing (%s)", pod.Spec.NodeName, c.Summary)
		quotes = quotedOf(c)
	}
	mirror := cause(catalog.MirrorPodKubeletNotSyncing, sev, 0.8, summary, evidence,
		onTheNode(pod.Spec.NodeName, step(catalog.MirrorPodKubeletNotSyncing, "check-kubelet", "systemctl status kubelet; journalctl -u kubelet --since -1h")),
		step(catalog.MirrorPodKubeletNotSyncing, "fix-kubelet", ""),
		step(catalog.MirrorPodKubeletNotSyncing, "force-delete-mirror", forceDeleteCommand(pod)))
	quotes.on(&mirror)
	return []report.Cause{mirror}
}

// podFacts is what the snapshot says about one pod's shutdown.
type podFacts struct {
	node         nodeHealth
	containers   containerState
	events       podEvents
	refused      []refusal // admission that refuses, or may refuse, the final DELETE
	volumes      []podVolume
	volumesKnown bool
	claims       []podClaim // read only while the kubelet should unprepare them
	claimsKnown  bool
	kubelet      *kubeletView // nil: not read (no --kubelet)
	// kubeletUnread is why --kubelet could not read the node's
	// /stats/summary ("": not asked, or it answered).
	kubeletUnread string
}

// kubeletCauses explains a live kubelet that has not finished the pod, by the
// step it is stuck at (kubeletSteps): the first that holds explains it.
func kubeletCauses(pod *corev1.Pod, tm timing, f podFacts, now time.Time) []report.Cause {
	if tm.overdue == 0 {
		return nil
	}
	at := kubeletAt{pod: pod, tm: tm, f: f, now: now}
	for _, st := range kubeletSteps {
		if st.holds(at) {
			return st.causes(at)
		}
	}
	return nil
}

// kubeletAt is a pod whose live kubelet has not finished it, past its
// deadline.
type kubeletAt struct {
	pod *corev1.Pod
	tm  timing
	f   podFacts
	now time.Time
}

// kubeletSteps are where a live kubelet can be stuck, in the order it shuts
// a pod down: it no longer manages the pod (--kubelet); killing containers
// (state B); tearing down the sandbox or unpreparing claims (B'); unmounting
// volumes and sending its final DELETE (C).
var kubeletSteps = []struct {
	name   string
	holds  func(kubeletAt) bool
	causes func(kubeletAt) []report.Cause
}{
	{"the kubelet no longer manages the pod", func(a kubeletAt) bool { return a.f.kubelet.forgotten() && a.tm.grace > 0 }, func(a kubeletAt) []report.Cause {
		var causes []report.Cause
		for _, r := range a.f.refused {
			causes = append(causes, r.asCause(a.tm, report.Noted("the kubelet gave up its final DELETE: nothing retries it")))
		}
		return append(causes, kubeletForgot(a.pod, a.tm, a.f.kubelet))
	}},
	{"the runtime fails to kill containers", func(a kubeletAt) bool { return a.f.events.killFailed != nil && len(a.f.containers.running) > 0 }, func(a kubeletAt) []report.Cause {
		return []report.Cause{killFailed(a.pod, a.tm, a.f.containers, a.f.events, a.now)}
	}},
	{"containers still running", func(a kubeletAt) bool { return len(a.f.containers.running) > 0 }, func(a kubeletAt) []report.Cause {
		return []report.Cause{containersRunning(a.pod, a.f.containers, a.tm, a.f.events, a.now)}
	}},
	{"the sandbox's teardown failed", func(a kubeletAt) bool {
		return a.f.events.sandboxFailed != nil && !isTerminalPhase(a.pod.Status.Phase)
	}, func(a kubeletAt) []report.Cause {
		return []report.Cause{sandboxFailed(a.pod, a.tm, a.f.events, a.now, 0.85)}
	}},
	{"no terminal phase: the sandbox or the claims (state B')", func(a kubeletAt) bool {
		return !isTerminalPhase(a.pod.Status.Phase) && a.f.node.terminalPhaseGate()
	}, func(a kubeletAt) []report.Cause {
		if dra := claimCauses(a.pod, a.f.claims, a.tm); len(dra) > 0 {
			return append(dra, sandboxFailed(a.pod, a.tm, a.f.events, a.now, 0.3))
		}
		return []report.Cause{sandboxFailed(a.pod, a.tm, a.f.events, a.now, 0.5)}
	}},
	{"volumes, the cgroup and the final DELETE (state C)", func(a kubeletAt) bool { return a.tm.grace > 0 }, func(a kubeletAt) []report.Cause {
		return stateCCauses(a.pod, a.tm, a.f)
	}},
}

// stateCCauses: everything observable is done; the final DELETE is refused by
// admission, or the kubelet still waits on volumes and the cgroup.
func stateCCauses(pod *corev1.Pod, tm timing, f podFacts) []report.Cause {
	var causes []report.Cause
	for _, r := range f.refused {
		causes = append(causes, r.asCause(tm, report.Noted("the kubelet only logs \"Failed to delete status for pod\" when its final DELETE is refused: no event")))
	}
	if vols, known := f.kubelet.volumes(); known {
		// The kubelet's own view of every volume replaces what the API hints.
		if len(vols) > 0 {
			causes = append(causes, kubeletVolumesCause(pod, tm, f.kubelet, vols, f.volumes))
		}
	} else {
		causes = append(causes, volumeCauses(pod, f.volumes, tm)...)
	}
	if !slices.ContainsFunc(causes, func(c report.Cause) bool { return c.Severity == report.Critical }) {
		causes = append(causes, kubeletCleanupPending(pod, tm, f.kubelet))
	}
	return causes
}

// finalDeleteRefusals finds the admission webhooks and policies that refuse,
// or may refuse, the kubelet's final DELETE of a pod in state C.
func finalDeleteRefusals(s *observed.Snapshot, pod *corev1.Pod, tm timing) []refusal {
	if s.Admission == nil || !awaitsFinalDelete(pod) {
		return nil
	}
	ns := s.Namespaces[pod.Namespace]
	nsLabels := namespaceLabels(ns)
	// The kubelet sends it as its node; admission passes the pod as oldObject.
	sent := lazy(func() *celeval.Request {
		return &celeval.Request{Operation: string(admissionregistrationv1.Delete), Version: "v1", Resource: "pods", Kind: "Pod",
			Namespace: pod.Namespace, Name: pod.Name, OldObject: objectMap(pod), NamespaceObject: objectMap(ns),
			User: &celeval.User{Username: "system:node:" + pod.Spec.NodeName, Groups: []string{"system:nodes", "system:authenticated"}}}
	})
	return refusals(*s.Admission, request{operation: admissionregistrationv1.Delete, version: "v1", resource: "pods",
		namespaced: true, objLabels: pod.Labels, nsLabels: nsLabels, cel: sent}, "DELETE pods (the kubelet's final grace-0 delete, sent as system:node:"+pod.Spec.NodeName+")")
}

// forecast turns findings about an object still inside its grace period into
// information, after the one that says so: nothing is stuck yet.
func forecast(ref report.ObjectRef, found []report.Cause, tm timing) []report.Cause {
	out := []report.Cause{cause(catalog.WithinGracePeriod, report.Info, 1,
		fmt.Sprintf("inside its grace period: %s left of %ds", report.HumanDuration(tm.remaining), tm.grace),
		[]report.Fact{
			report.FieldFact("metadata.deletionTimestamp", tm.deadline.UTC().Format(time.RFC3339)+" (the deadline)"),
			report.FieldFact("metadata.deletionGracePeriodSeconds", fmt.Sprint(tm.grace)),
			report.Noted(fmt.Sprintf("deletion requested at %s", tm.requestedAt.UTC().Format(time.RFC3339))),
		},
		step(catalog.WithinGracePeriod, "wait", waitCommand(ref, tm.remaining+settleTime)))}
	for _, c := range found {
		c.Severity = report.Info
		prefixed(&c, "once the grace period ends: ")
		out = append(out, c)
	}
	return out
}

func negativeGrace(pod *corev1.Pod, tm timing) report.Cause {
	return cause(catalog.NegativeGracePeriod, report.Critical, 0.9,
		fmt.Sprintf("deletionGracePeriodSeconds is %d: the runtime waits without killing the containers", tm.grace),
		[]report.Fact{report.FieldFact("metadata.deletionGracePeriodSeconds", fmt.Sprintf("%d (set by a pre-1.22 client)", tm.grace))},
		forceDelete(catalog.NegativeGracePeriod, "force-delete", pod))
}

func containersRunning(pod *corev1.Pod, c containerState, tm timing, ev podEvents, now time.Time) report.Cause {
	sev := report.Warning
	code := catalog.ContainersStillRunning
	summary := fmt.Sprintf("%s still running %s past the deadline: %s", report.Count(len(c.running), "container"), report.HumanDuration(tm.overdue), strings.Join(c.running, ", "))
	if tm.overdue < settleTime {
		code, sev = catalog.GracePeriodOverrun, report.Info
		summary = fmt.Sprintf("%s past the deadline; the kubelet is still stopping %s", report.HumanDuration(tm.overdue), strings.Join(c.running, ", "))
	}
	evidence := append([]report.Fact{report.FieldFact("status.phase", string(pod.Status.Phase))}, c.evidence...)
	for _, e := range []*corev1.Event{ev.killing, ev.exceeded, ev.preStopFailed} {
		if e != nil {
			evidence = append(evidence, eventFact(e, now))
		}
	}
	evidence = append(evidence, noEventSeen(reasonFailedKillPod))
	return cause(code, sev, 0.6, summary, evidence,
		step(code, "read-events", kubectlOn(pod.Namespace, "describe", "pod", pod.Name)),
		forceDelete(code, "force-delete", pod))
}

func killFailed(pod *corev1.Pod, tm timing, c containerState, ev podEvents, now time.Time) report.Cause {
	return cause(catalog.ContainerKillFailed, report.Critical, 0.85,
		fmt.Sprintf("the container runtime on %s fails to kill %s (%s past the deadline)", pod.Spec.NodeName, strings.Join(c.running, ", "), report.HumanDuration(tm.overdue)),
		append([]report.Fact{eventFact(ev.killFailed, now)}, c.evidence...),
		onTheNode(pod.Spec.NodeName, step(catalog.ContainerKillFailed, "inspect-runtime", then(command("crictl", "pods", "--name", pod.Name), command("journalctl", "-u", "containerd", "--since", "-1h")))),
		onTheNode(pod.Spec.NodeName, step(catalog.ContainerKillFailed, "restart-runtime", "systemctl restart containerd")),
		forceDelete(catalog.ContainerKillFailed, "force-delete", pod))
}

func sandboxFailed(pod *corev1.Pod, tm timing, ev podEvents, now time.Time, confidence float64) report.Cause {
	sev, summary := report.Critical, fmt.Sprintf("the pod sandbox on %s cannot be torn down (usually the CNI plugin)", pod.Spec.NodeName)
	evidence := []report.Fact{{Text: fmt.Sprintf("status.phase: %s while no container runs: the kubelet writes a terminal phase only after the sandbox is stopped", pod.Status.Phase), Field: "status.phase", Value: string(pod.Status.Phase)}}
	if ev.sandboxFailed != nil {
		evidence = append(evidence, eventFact(ev.sandboxFailed, now))
	} else {
		sev = settling(report.Warning, tm)
		summary = fmt.Sprintf("containers stopped but no terminal phase %s past the deadline: sandbox (CNI) or resource-claim teardown is probably failing", report.HumanDuration(tm.overdue))
		evidence = append(evidence, noEventSeen(reasonFailedKillPod))
	}
	return cause(catalog.SandboxTeardownFailed, sev, confidence, summary, evidence,
		step(catalog.SandboxTeardownFailed, "check-cni", onNode(pod.Spec.NodeName, "calico|cilium|flannel|weave|cni")),
		step(catalog.SandboxTeardownFailed, "restore-cni", ""),
		forceDelete(catalog.SandboxTeardownFailed, "force-delete", pod))
}

func kubeletCleanupPending(pod *corev1.Pod, tm timing, v *kubeletView) report.Cause {
	confidence := 0.4
	summary := fmt.Sprintf("containers stopped but the kubelet has not sent its final delete (%s past the deadline)", report.HumanDuration(tm.overdue))
	evidence := []report.Fact{
		report.FieldFact("status.phase", string(pod.Status.Phase)),
		report.FieldFact("metadata.deletionGracePeriodSeconds", fmt.Sprintf("%d (the kubelet's final delete sets 0)", tm.grace)),
		report.Noted("no container reports state.running"),
	}
	cgroup, known := v.cgroup()
	switch {
	case known && cgroup:
		confidence = 0.85
		summary = fmt.Sprintf("the kubelet on %s still reports the pod's cgroup: it sends its final delete once the cgroup is removed (%s past the deadline)", v.node, report.HumanDuration(tm.overdue))
		evidence = append(evidence, report.Noted(v.says("/stats/summary", "reports the pod's cgroup (CPU and memory stats)")))
	case known:
		confidence = 0.3
		summary = fmt.Sprintf("the kubelet on %s reports the pod's cgroup gone but has not sent its final delete (%s past the deadline): a volume it cannot unmount is reported nowhere once the cgroup is gone", v.node, report.HumanDuration(tm.overdue))
		evidence = append(evidence, report.Noted(v.says("/stats/summary", "no cgroup stats for the pod, and so no volume stats either")))
	}
	return cause(catalog.CgroupCleanupPending, settling(report.Warning, tm), confidence, summary, evidence,
		onTheNode(pod.Spec.NodeName, step(catalog.CgroupCleanupPending, "read-kubelet-log", pipe(command("journalctl", "-u", "kubelet"), command("grep", string(pod.UID))))),
		forceDelete(catalog.CgroupCleanupPending, "force-delete", pod))
}

func forceDelete(code catalog.Code, id string, pod *corev1.Pod) report.Step {
	return step(code, id, forceDeleteCommand(pod))
}

// containerState sorts the pod's containers (init, main, ephemeral) by state.
type containerState struct {
	running  []string
	evidence []report.Fact
}

func containersOf(pod *corev1.Pod) containerState {
	var c containerState
	sidecars := map[string]bool{}
	for _, ic := range pod.Spec.InitContainers {
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[ic.Name] = true // restartable init container: stops after the main containers
		}
	}
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
			name := st.Name
			if g.field == "status.initContainerStatuses" && sidecars[st.Name] {
				name += " (sidecar)"
			}
			switch {
			case st.State.Running != nil:
				c.running = append(c.running, name)
				c.evidence = append(c.evidence, report.FieldFact(fmt.Sprintf("%s[%s].state.running.startedAt", g.field, name), st.State.Running.StartedAt.UTC().Format(time.RFC3339)))
			case st.State.Terminated != nil:
				c.evidence = append(c.evidence, report.FieldFact(fmt.Sprintf("%s[%s].state.terminated", g.field, name), fmt.Sprintf("exitCode %d, reason %s", st.State.Terminated.ExitCode, st.State.Terminated.Reason)))
			case st.State.Waiting != nil:
				c.evidence = append(c.evidence, report.FieldFact(fmt.Sprintf("%s[%s].state.waiting", g.field, name), st.State.Waiting.Reason))
			}
		}
	}
	return c
}

func isTerminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}
