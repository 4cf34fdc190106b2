package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// stateCOnKubelet: a pod in state C (containers stopped, terminal phase, no
// final DELETE) 5 minutes past its deadline on a live node, whose kubelet
// reports k of it (nil: nothing).
func stateCOnKubelet(k *observed.KubeletPod, podsRead, summaryRead bool) *observed.Snapshot {
	pod := stopped(terminatingPod(6*time.Minute, 60), corev1.PodSucceeded)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "198.18.0.9", Path: "/export"}}}}
	s := snap(pod, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
	view := &observed.Kubelet{ReadAt: now.Add(-time.Second), PodsRead: podsRead, SummaryRead: summaryRead, Pods: map[types.UID]*observed.KubeletPod{}}
	if k != nil {
		view.Pods[pod.UID] = k
	}
	s.Kubelets = map[string]*observed.Kubelet{"node-1": view}
	return s
}

func checkOf(it report.Item, name string) report.Check {
	for _, c := range it.Checks {
		if c.Name == name {
			return c
		}
	}
	return report.Check{}
}

func TestKubeletViewDecidesTheReclaimRows(t *testing.T) {
	stoppedApp := []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	for _, tc := range []struct {
		name     string
		s        *observed.Snapshot
		codes    []string
		severity report.Severity
		evidence string
		rows     map[string]report.CheckStatus
	}{
		{"the cgroup is still there: CgroupCleanupPending, confirmed",
			stateCOnKubelet(&observed.KubeletPod{Managed: true, Containers: stoppedApp, Cgroup: true}, true, true),
			[]string{"CgroupCleanupPending"}, report.Warning, "reports the pod's cgroup",
			map[string]report.CheckStatus{"cgroup sandbox removed": report.Fail, "volumes unmounted": report.Pass, "containers stopped": report.Pass, "final delete admitted": report.Pending}},
		{"an NFS volume still mounted: VolumeTeardownPending, named",
			stateCOnKubelet(&observed.KubeletPod{Managed: true, Containers: stoppedApp, Cgroup: true, Volumes: []observed.KubeletVolume{{Name: "data"}}}, true, true),
			[]string{"VolumeTeardownPending"}, report.Critical, "still mounted for the pod: data",
			map[string]report.CheckStatus{"volumes unmounted": report.Fail, "cgroup sandbox removed": report.Fail}},
		// As a real kubelet does with a busy emptyDir: the summary drops the
		// pod with its cgroup, so it says nothing of the volumes any more.
		{"the cgroup gone, the pod still managed: the volumes are unknown again",
			stateCOnKubelet(&observed.KubeletPod{Managed: true, Containers: stoppedApp}, true, true),
			[]string{"VolumeTeardownPending", "CgroupCleanupPending"}, report.Warning, "server 198.18.0.9",
			map[string]report.CheckStatus{"volumes unmounted": report.Unknown, "cgroup sandbox removed": report.Pass, "final delete admitted": report.Pending}},
		{"the kubelet no longer manages the pod",
			stateCOnKubelet(nil, true, true),
			[]string{"KubeletNoLongerManagesPod"}, report.Critical, "not among the pods it manages",
			map[string]report.CheckStatus{"containers stopped": report.Pass, "volumes unmounted": report.Unknown, "cgroup sandbox removed": report.Pass, "final delete admitted": report.Fail}},
		{"only /pods answered: the summary's rows stay as the API leaves them",
			stateCOnKubelet(&observed.KubeletPod{Managed: true, Containers: stoppedApp}, true, false),
			[]string{"VolumeTeardownPending", "CgroupCleanupPending"}, report.Warning, "",
			map[string]report.CheckStatus{"volumes unmounted": report.Unknown, "cgroup sandbox removed": report.Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(tc.s).Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
			for row, want := range tc.rows {
				if got := checkOf(it, row); got.Status != want {
					t.Errorf("%s: %s (%s), want %s", row, got.Status, got.Detail, want)
				}
			}
		})
	}
}

// The kubelet's own container statuses beat the API's: it still runs a
// container the API's status says stopped.
func TestKubeletRunningContainersBeatTheAPIStatus(t *testing.T) {
	s := stateCOnKubelet(&observed.KubeletPod{Managed: true, Cgroup: true, Containers: []corev1.ContainerStatus{
		{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, true, true)
	s.Targets[0].Pod.Status.Phase = corev1.PodRunning
	it := Diagnose(s).Items[0]
	if codes(it)[0] != "ContainersStillRunning" || checkOf(it, "containers stopped").Status != report.Fail ||
		!strings.Contains(checkOf(it, "containers stopped").Detail, "kubelet on node-1, /pods through the node proxy at 2026-11-22T11:59:59Z: running: app") {
		t.Errorf("codes %v, row %+v", codes(it), checkOf(it, "containers stopped"))
	}
}

// The force delete after a kubelet that dropped the pod is low risk: the
// kubelet itself says nothing of the pod is left on the node.
func TestKubeletForgotPodSaysForceDeleteIsSafe(t *testing.T) {
	it := Diagnose(stateCOnKubelet(nil, true, true)).Items[0]
	steps := it.Causes[0].Remediation
	last := steps[len(steps)-1]
	if last.RiskLevel != report.RiskLow || !strings.Contains(last.Command, "--force") {
		t.Errorf("last step: %+v", last)
	}
}

// --kubelet asked a node that did not answer: the cgroup row says why where
// it is read, not only under skipped.
func TestKubeletNotAnsweringIsSaidOnTheCgroupRow(t *testing.T) {
	s := stateCOnKubelet(nil, false, false)
	s.Kubelets = nil // neither endpoint answered
	s.Targets[0].Skipped = []observed.Skip{{Check: "nodes/node-1/proxy/stats/summary", Reason: observed.SkipUnreachable, Detail: "dial tcp: i/o timeout"}}
	row := checkOf(Diagnose(s).Items[0], "cgroup sandbox removed")
	if row.Status != report.Unknown || row.Detail != report.NotVisible+"; --kubelet asked the node: nodes/node-1/proxy/stats/summary, Unreachable dial tcp: i/o timeout" {
		t.Errorf("row %+v", row)
	}
	s.Targets[0].Skipped = nil // not asked: the API's words alone
	if row := checkOf(Diagnose(s).Items[0], "cgroup sandbox removed"); row.Detail != report.NotVisible {
		t.Errorf("not asked: %+v", row)
	}
}
