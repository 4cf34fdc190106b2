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

// Messages as the kubelet writes them: "error killing pod: " + PodSyncResult.Error().
const (
	killContainerMsg = `error killing pod: failed to "KillContainer" for "app" with KillContainerError: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"`
	killSandboxMsg   = `error killing pod: failed to "KillPodSandbox" for "pod-uid" with KillPodSandboxError: "rpc error: code = Unknown desc = failed to destroy network for sandbox \"3f2a\": plugin type=\"calico\" failed (delete): error getting ClusterInformation: connection is unauthorized: Unauthorized"`
)

func event(reason, msg string, age time.Duration) corev1.Event {
	return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg, Count: 3,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: "pod-uid"}, LastTimestamp: *ago(age)}
}

func withEvents(s *observed.Snapshot, events ...corev1.Event) *observed.Snapshot {
	s.Events["pod-uid"] = events
	return s
}

func healthySnap(p *corev1.Pod) *observed.Snapshot {
	return snap(p, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
}

// allStopped keeps the phase (Running) but stops every container: state B'.
func allStopped(p *corev1.Pod) *corev1.Pod {
	phase := p.Status.Phase
	stopped(p, phase)
	return p
}

func TestPodEventRules(t *testing.T) {
	cases := []struct {
		name      string
		s         *observed.Snapshot
		codes     []string
		severity  report.Severity
		evidence  string
		check     string
		checkWant report.CheckStatus
	}{
		{
			name:  "runtime cannot kill the containers",
			s:     withEvents(healthySnap(terminatingPod(10*time.Minute, 30)), event("Killing", "Stopping container app", 9*time.Minute), event(reasonFailedKillPod, killContainerMsg, time.Minute)),
			codes: []string{"ContainerKillFailed"}, severity: report.Critical, evidence: `failed to "KillContainer" for "app"`,
			check: "containers stopped", checkWant: report.Fail,
		},
		{
			name:  "CNI cannot tear down the sandbox (state B')",
			s:     withEvents(healthySnap(allStopped(terminatingPod(10*time.Minute, 30))), event(reasonFailedKillPod, killSandboxMsg, time.Minute)),
			codes: []string{"SandboxTeardownFailed"}, severity: report.Critical, evidence: "failed to destroy network for sandbox",
			check: "sandbox torn down", checkWant: report.Fail,
		},
		{
			name:  "state B' without an event is inferred, with less confidence",
			s:     healthySnap(allStopped(terminatingPod(10*time.Minute, 30))),
			codes: []string{"SandboxTeardownFailed"}, severity: report.Warning, evidence: "absence proves nothing",
			check: "sandbox torn down", checkWant: report.Fail,
		},
		{
			name:  "running containers with an ExceededGracePeriod event",
			s:     withEvents(healthySnap(terminatingPod(10*time.Minute, 30)), event(reasonExceededGracePeriod, "Container runtime did not kill the pod within specified grace period.", time.Minute)),
			codes: []string{"ContainersStillRunning"}, severity: report.Warning, evidence: "ExceededGracePeriod (x3) 60s ago",
			check: "sandbox torn down", checkWant: report.Unknown,
		},
		{
			name:  "a kill failure on a dead node is the node's doing",
			s:     withEvents(snap(terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 10*time.Minute)), event(reasonFailedKillPod, killContainerMsg, 20*time.Minute)),
			codes: []string{"NodeUnreachable"}, severity: report.Critical,
		},
		{
			name:  "terminal phase: the sandbox is gone even if an old event says otherwise",
			s:     withEvents(healthySnap(stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)), event(reasonFailedKillPod, killSandboxMsg, 9*time.Minute)),
			codes: []string{"CgroupCleanupPending"}, severity: report.Warning,
			check: "sandbox torn down", checkWant: report.Pass,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(tc.s).Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
			if tc.check != "" {
				expectCheck(t, it, tc.check, tc.checkWant)
			}
		})
	}
}

func TestLatestEventWins(t *testing.T) {
	old := event(reasonFailedKillPod, killContainerMsg+" old", 50*time.Minute)
	recent := event(reasonFailedKillPod, killContainerMsg+" recent", time.Minute)
	pe := podEventsOf([]corev1.Event{recent, old})
	if !strings.HasSuffix(pe.killFailed.Message, "recent") {
		t.Errorf("picked %q", pe.killFailed.Message)
	}
}

func TestEventTimeFromEitherAPI(t *testing.T) {
	series := corev1.Event{Series: &corev1.EventSeries{LastObservedTime: metav1.MicroTime{Time: now}}, EventTime: metav1.MicroTime{Time: now.Add(-time.Hour)}}
	if !eventTime(series).Equal(now) {
		t.Errorf("series: %v", eventTime(series))
	}
	single := corev1.Event{EventTime: metav1.MicroTime{Time: now.Add(-time.Minute)}}
	if !eventTime(single).Equal(now.Add(-time.Minute)) {
		t.Errorf("eventTime: %v", eventTime(single))
	}
}

func FuzzPodEvents(f *testing.F) {
	f.Add(reasonFailedKillPod, killContainerMsg)
	f.Add(reasonFailedKillPod, killSandboxMsg)
	f.Add("Killing", "")
	f.Fuzz(func(t *testing.T, reason, msg string) {
		s := withEvents(healthySnap(terminatingPod(10*time.Minute, 30)), event(reason, msg, time.Minute))
		it := Diagnose(s).Items[0]
		if len(it.Causes) == 0 || !it.Stuck {
			t.Fatalf("a pod 10m past its deadline with running containers must be stuck with a cause: %+v", it)
		}
	})
}

// Before 1.27 the kubelet removed pods without a terminal phase: stopped
// containers with phase Running are not a sandbox failure there.
func TestOldKubeletSemantics(t *testing.T) {
	s := healthySnap(allStopped(terminatingPod(10*time.Minute, 30)))
	s.Nodes["node-1"].Status.NodeInfo.KubeletVersion = "v1.26.9"
	it := Diagnose(s).Items[0]
	if got := codes(it); !slices.Equal(got, []string{"CgroupCleanupPending"}) {
		t.Fatalf("codes = %v, want [CgroupCleanupPending] for a 1.26 kubelet", got)
	}
	if !slices.ContainsFunc(it.Checks, func(c report.Check) bool {
		return c.Name == "terminal phase reported" && c.Status == report.Pass && strings.Contains(c.Detail, "before 1.27")
	}) {
		t.Errorf("checks: %+v", it.Checks)
	}
}
