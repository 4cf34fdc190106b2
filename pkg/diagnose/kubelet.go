package diagnose

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// kubeletView is what the pod's own kubelet reports of it (--kubelet): the
// checklist rows the API leaves unknown, confirmed or refuted from the node.
type kubeletView struct {
	node                  string
	readAt                time.Time
	podsRead, summaryRead bool
	pod                   *observed.KubeletPod // nil: it reports nothing of the pod
}

// kubeletViewOf is nil when the pod's kubelet was not read (no --kubelet,
// or neither endpoint answered: the skip says why).
func kubeletViewOf(s *observed.Snapshot, pod *corev1.Pod) *kubeletView {
	k := s.Kubelets[pod.Spec.NodeName]
	if k == nil {
		return nil
	}
	return &kubeletView{node: pod.Spec.NodeName, readAt: k.ReadAt, podsRead: k.PodsRead, summaryRead: k.SummaryRead, pod: k.Pods[pod.UID]}
}

// kubeletUnread says why --kubelet could not read the pod's node's
// /stats/summary, the endpoint that reports its cgroup ("" when it was not
// asked or answered).
func kubeletUnread(t *observed.Target) string {
	path := "nodes/" + t.Pod.Spec.NodeName + "/proxy/stats/summary"
	for _, sk := range t.Skipped {
		if sk.Check == path {
			return strings.TrimSpace(fmt.Sprintf("%s, %s %s", path, sk.Reason, sk.Detail))
		}
	}
	return ""
}

// says prefixes a fact with where it comes from.
func (v *kubeletView) says(endpoint, fact string) string {
	return fmt.Sprintf("kubelet on %s, %s through the node proxy at %s: %s", v.node, endpoint, v.readAt.UTC().Format(time.RFC3339), fact)
}

// forgotten: both endpoints answered and neither reports the pod: the
// kubelet no longer manages it, so no status and no final DELETE will come.
func (v *kubeletView) forgotten() bool {
	return v != nil && v.podsRead && v.summaryRead && (v.pod == nil || (!v.pod.Managed && !v.pod.Cgroup && len(v.pod.Volumes) == 0))
}

// running lists the containers the kubelet reports running; known is false
// when /pods did not answer.
func (v *kubeletView) running() (names []string, known bool) {
	if v == nil || !v.podsRead {
		return nil, false
	}
	if v.pod != nil {
		for _, st := range v.pod.Containers {
			if st.State.Running != nil {
				names = append(names, st.Name)
			}
		}
	}
	return names, true
}

// volumes lists the volumes the kubelet still reports for the pod; known
// only while /stats/summary reports the pod at all. It lists a pod, with
// its volumes, from the pod's cgroup: once the cgroup is gone, a volume the
// kubelet still fails to unmount is reported nowhere (seen on a real node:
// a busy emptyDir, the pod absent from /stats/summary, listed by /pods).
func (v *kubeletView) volumes() (vols []observed.KubeletVolume, known bool) {
	if v == nil || !v.summaryRead || v.pod == nil || (!v.pod.Cgroup && len(v.pod.Volumes) == 0) {
		return nil, false
	}
	return v.pod.Volumes, true
}

// cgroup says whether the kubelet still reports the pod's cgroup.
func (v *kubeletView) cgroup() (present, known bool) {
	if v == nil || !v.summaryRead {
		return false, false
	}
	return v.pod != nil && v.pod.Cgroup, true
}

// withKubelet replaces the API's view of the running containers by the
// kubelet's, which is the node's truth (the API's status lags, or never
// comes from a kubelet that forgot the pod).
func withKubelet(c containerState, v *kubeletView) containerState {
	names, known := v.running()
	if !known {
		return c
	}
	c.evidence = append(c.evidence, report.Noted(v.containersFact()))
	c.running = names
	return c
}

// containersFact is what the kubelet's /pods says of the pod's containers
// ("" when /pods did not answer).
func (v *kubeletView) containersFact() string {
	names, known := v.running()
	switch {
	case !known:
		return ""
	case len(names) > 0:
		return v.says("/pods", "running: "+strings.Join(names, ", "))
	case v.pod != nil && v.pod.Managed:
		return v.says("/pods", "no container running")
	}
	return v.says("/pods", "the pod is not among the pods it manages")
}

func describeVolumes(vols []observed.KubeletVolume) string {
	names := make([]string, 0, len(vols))
	for _, vol := range vols {
		if vol.Claim != "" {
			names = append(names, fmt.Sprintf("%s (claim %s)", vol.Name, vol.Claim))
		} else {
			names = append(names, vol.Name)
		}
	}
	return strings.Join(names, ", ")
}

// kubeletVolumesCheck is the "volumes unmounted" row from the kubelet's own
// stats, for every volume type (the API sees only attachable ones).
func kubeletVolumesCheck(v *kubeletView) (report.Check, bool) {
	vols, known := v.volumes()
	if !known {
		return report.Check{}, false
	}
	if len(vols) > 0 {
		return report.Check{Name: "volumes unmounted", Status: report.Fail, Detail: v.says("/stats/summary", "still mounted: "+describeVolumes(vols))}, true
	}
	return report.Check{Name: "volumes unmounted", Status: report.Pass, Detail: v.says("/stats/summary", "no volume reported for the pod")}, true
}

// kubeletCgroupCheck is the "cgroup sandbox removed" row from the kubelet.
func kubeletCgroupCheck(v *kubeletView) (report.Check, bool) {
	present, known := v.cgroup()
	if !known {
		return report.Check{}, false
	}
	if present {
		return report.Check{Name: "cgroup sandbox removed", Status: report.Fail, Detail: v.says("/stats/summary", "reports the pod's cgroup (CPU and memory stats)")}, true
	}
	return report.Check{Name: "cgroup sandbox removed", Status: report.Pass, Detail: v.says("/stats/summary", "no cgroup stats for the pod")}, true
}

// kubeletForgot: the API still has the pod, its kubelet has nothing of it.
func kubeletForgot(pod *corev1.Pod, tm timing, v *kubeletView) report.Cause {
	return cause(catalog.KubeletNoLongerManagesPod, report.Critical, 0.85,
		fmt.Sprintf("the kubelet on %s no longer manages the pod: it reports no container, cgroup or volume of it, so it will write no status and send no final DELETE (%s past the deadline)", v.node, report.HumanDuration(tm.overdue)),
		[]report.Fact{
			report.Noted(v.says("/pods", "the pod is not among the pods it manages")),
			report.Noted(v.says("/stats/summary", "no stats and no volume for the pod")),
			report.FieldFact("metadata.deletionGracePeriodSeconds", fmt.Sprintf("%d (the kubelet's final DELETE sets 0)", tm.grace)),
		},
		onTheNode(pod.Spec.NodeName, step(catalog.KubeletNoLongerManagesPod, "read-kubelet-log", pipe(command("journalctl", "-u", "kubelet"), command("grep", string(pod.UID))))),
		forceDelete(catalog.KubeletNoLongerManagesPod, "force-delete", pod))
}

// kubeletVolumesCause: the kubelet itself still reports volumes mounted for
// a pod whose containers stopped, whatever their type.
func kubeletVolumesCause(pod *corev1.Pod, tm timing, v *kubeletView, vols []observed.KubeletVolume, known []podVolume) report.Cause {
	sev := report.Critical
	if tm.overdue < settleTime {
		sev = report.Info
	}
	evidence := []report.Fact{report.Noted(v.says("/stats/summary", "still mounted for the pod: "+describeVolumes(vols)))}
	for _, vol := range vols {
		for _, pv := range known {
			if pv.name == vol.Name {
				evidence = append(evidence, report.FieldFact("spec.volumes["+pv.name+"]", pv.source))
			}
		}
	}
	return cause(catalog.VolumeTeardownPending, sev, 0.85,
		fmt.Sprintf("the kubelet on %s still has %s mounted for the pod past the deadline: it removes the pod only after unmounting", v.node, describeVolumes(vols)),
		evidence,
		mountsOnNode(catalog.VolumeTeardownPending, "check-mounts", pod),
		step(catalog.VolumeTeardownPending, "restore-storage-reported", ""),
		forceDelete(catalog.VolumeTeardownPending, "force-delete-hung", pod))
}
