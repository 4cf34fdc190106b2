package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func TestPodRules(t *testing.T) {
	healthy := []runtime.Object{node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second)}
	with := func(extra ...runtime.Object) []runtime.Object { return append(extra, healthy...) }
	withFinalizer := func(p *corev1.Pod) *corev1.Pod { p.Finalizers = []string{"example.com/hold"}; return p }

	cases := []struct {
		name     string
		objs     []runtime.Object
		codes    []string
		severity report.Severity
		stuck    bool
		evidence string                        // a fragment the top cause's evidence must hold
		checks   map[string]report.CheckStatus // rows of the checklist
	}{
		{
			name: "inside the grace period on a healthy node",
			objs: with(terminatingPod(10*time.Second, 30)), codes: []string{"WithinGracePeriod"},
			severity: report.Info, stuck: false, evidence: "metadata.deletionGracePeriodSeconds: 30",
			checks: map[string]report.CheckStatus{"grace period over": report.Pending, "containers stopped": report.Pending,
				"terminal phase reported": report.Pending, "final delete admitted": report.Pending},
		},
		{
			name:  "inside the grace period on a dead node is a forecast, not stuck",
			objs:  []runtime.Object{terminatingPod(10*time.Second, 30), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 10*time.Minute)},
			codes: []string{"WithinGracePeriod", "NodeUnreachable"}, severity: report.Info, stuck: false,
			checks: map[string]report.CheckStatus{"grace period over": report.Pending, "node alive": report.Fail},
		},
		{
			name: "just past the deadline, containers stopping: overrun, not stuck",
			objs: with(terminatingPod(35*time.Second, 30)), codes: []string{"GracePeriodOverrun"},
			severity: report.Info, stuck: false, checks: map[string]report.CheckStatus{"containers stopped": report.Fail},
		},
		{
			name: "long past the deadline with running containers on a live node",
			objs: with(terminatingPod(10*time.Minute, 30)), codes: []string{"ContainersStillRunning"},
			severity: report.Warning, stuck: true, evidence: "status.containerStatuses[app].state.running",
			checks: map[string]report.CheckStatus{"containers stopped": report.Fail, "terminal phase reported": report.Pending},
		},
		{
			name:  "node lease stale: the dead node is the root cause, running containers are not reported",
			objs:  []runtime.Object{terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Minute)},
			codes: []string{"NodeUnreachable"}, severity: report.Critical, stuck: true, evidence: "lease kube-node-lease/node-1",
			checks: map[string]report.CheckStatus{"node alive": report.Fail, "containers stopped": report.Fail, "final delete admitted": report.Pending},
		},
		{
			name:  "node Ready Unknown and tainted unreachable",
			objs:  []runtime.Object{terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 5*time.Minute)},
			codes: []string{"NodeUnreachable"}, severity: report.Critical, stuck: true, evidence: "node.kubernetes.io/unreachable:NoExecute",
		},
		{
			name:  "node NotReady with a fresh lease",
			objs:  []runtime.Object{terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionFalse), lease("node-1", 5*time.Second)},
			codes: []string{"NodeNotReady"}, severity: report.Critical, stuck: true, evidence: "Ready=False",
		},
		{
			name: "terminal phase, no final delete yet",
			objs: with(stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)), codes: []string{"CgroupCleanupPending"},
			severity: report.Warning, stuck: true,
			checks: map[string]report.CheckStatus{"terminal phase reported": report.Pass, "cgroup sandbox removed": report.Unknown, "final delete admitted": report.Pending},
		},
		{
			name: "final delete done, a finalizer holds the pod (state D)",
			objs: with(withFinalizer(stopped(terminatingPod(10*time.Minute, 0), corev1.PodFailed))), codes: []string{"FinalizerPending"},
			severity: report.Warning, stuck: true, evidence: "metadata.finalizers: [example.com/hold]",
			checks: map[string]report.CheckStatus{"final delete admitted": report.Pass, "finalizers cleared": report.Fail},
		},
		{
			name: "negative grace period from an old client",
			objs: with(terminatingPod(10*time.Minute, -1)), codes: []string{"NegativeGracePeriod", "ContainersStillRunning"},
			severity: report.Critical, stuck: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Diagnose(snap(tc.objs...))
			if len(r.Items) != 1 {
				t.Fatalf("want 1 item, got %d", len(r.Items))
			}
			it := r.Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
			if it.Stuck != tc.stuck {
				t.Errorf("stuck = %v, want %v", it.Stuck, tc.stuck)
			}
			for name, status := range tc.checks {
				expectCheck(t, it, name, status)
			}
			if c := checkOf(it, "final delete admitted"); c.Status == report.Pending && !strings.HasPrefix(c.Detail, "not sent yet") {
				t.Errorf("a final DELETE pending is one not sent yet: %+v", c)
			}
			for _, c := range it.Causes {
				if len(c.Remediation) == 0 || c.Summary == "" || len(c.Evidence) == 0 {
					t.Errorf("cause %s lacks summary, evidence or remediation", c.Code)
				}
			}
		})
	}
}

func TestPodNodeMissing(t *testing.T) {
	s := snap(terminatingPod(10*time.Minute, 30))
	s.MissingNodes["node-1"] = true
	it := Diagnose(s).Items[0]
	if got := codes(it); !slices.Equal(got, []string{"NodeNotFound"}) {
		t.Fatalf("codes = %v", got)
	}
	if it.Severity != report.Critical {
		t.Errorf("a pod on a missing node 10m past its deadline should be critical, got %s", it.Severity)
	}
	// Shortly after the deadline the pod GC controller is expected to act.
	s = snap(terminatingPod(60*time.Second, 30))
	s.MissingNodes["node-1"] = true
	if it := Diagnose(s).Items[0]; it.Severity != report.Warning {
		t.Errorf("severity = %s, want warning while the pod GC may still act", it.Severity)
	}
}

func TestPodNodeNotReadIsUnknownNotAlive(t *testing.T) {
	// The node could not be read (forbidden): no node cause is invented, the check is unknown.
	it := Diagnose(snap(terminatingPod(10*time.Minute, 30))).Items[0]
	if slices.Contains(codes(it), "NodeUnreachable") {
		t.Fatalf("must not claim the node is unreachable without reading it: %v", codes(it))
	}
	if !slices.ContainsFunc(it.Checks, func(c report.Check) bool { return c.Name == "node alive" && c.Status == report.Unknown }) {
		t.Errorf("node alive should be unknown: %+v", it.Checks)
	}
}

func TestDeadNodeRemediationIsSafeToRisky(t *testing.T) {
	objs := []runtime.Object{terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 5*time.Minute)}
	steps := Diagnose(snap(objs...)).Items[0].Causes[0].Remediation
	var order []string
	for _, s := range steps {
		order = append(order, s.Command)
	}
	taint := slices.IndexFunc(order, func(c string) bool { return strings.Contains(c, "out-of-service") })
	force := slices.IndexFunc(order, func(c string) bool { return strings.Contains(c, "--force") })
	if taint < 0 || force < 0 || taint > force {
		t.Fatalf("the out-of-service taint must come before the force delete: %q", order)
	}
	if !strings.Contains(steps[force].Risk, "split brain") {
		t.Errorf("force delete must warn of split brain: %q", steps[force].Risk)
	}
	if steps[0].Risk != "none: read-only" {
		t.Errorf("first step should be read-only, got %q", steps[0].Risk)
	}
}

func TestMirrorPod(t *testing.T) {
	mirror := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "8a1e0c6f"}
		return p
	}
	dead := Diagnose(snap(mirror(terminatingPod(10*time.Minute, 30)), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 10*time.Minute))).Items[0]
	if got := codes(dead); got[0] != "MirrorPodKubeletNotSyncing" || slices.Contains(got, "NodeUnreachable") || dead.Severity != report.Critical {
		t.Errorf("mirror pod on a dead node: %v %s", got, dead.Severity)
	}
	if last := dead.Causes[0].Remediation[2]; !strings.Contains(last.Risk, "recreates the mirror") {
		t.Errorf("force delete of a mirror pod must say the kubelet recreates it: %+v", last)
	}
	live := Diagnose(healthySnap(mirror(terminatingPod(10*time.Minute, 30)))).Items[0]
	if got := codes(live); got[0] != "MirrorPodKubeletNotSyncing" || live.Severity != report.Warning {
		t.Errorf("mirror pod on a live node: %v %s", got, live.Severity)
	}
}

func TestPodTimeline(t *testing.T) {
	s := withEvents(healthySnap(terminatingPod(10*time.Minute, 30)), event("Killing", "Stopping container app", 9*time.Minute+50*time.Second), event(reasonFailedKillPod, killContainerMsg, time.Minute))
	tl := Diagnose(s).Items[0].Timeline
	var events []string
	for i, m := range tl {
		events = append(events, m.Event)
		if i > 0 && m.Time.Before(&tl[i-1].Time) {
			t.Errorf("timeline out of order at %d: %v", i, tl)
		}
	}
	want := []string{"deletion requested (grace period 30s)", "event Killing: Stopping container app", "grace period ends (metadata.deletionTimestamp)", "event FailedKillPod: " + killContainerMsg}
	for _, w := range want {
		if !slices.Contains(events, w) {
			t.Errorf("timeline lacks %q: %q", w, events)
		}
	}
	if slices.Index(events, want[0]) > slices.Index(events, want[1]) || slices.Index(events, want[2]) > slices.Index(events, want[3]) {
		t.Errorf("order: %q", events)
	}
	// A live node's lease, renewed seconds ago, is no event; a dead node's
	// last renewal is when it went silent.
	renewed := func(s *observed.Snapshot) bool {
		return slices.ContainsFunc(Diagnose(s).Items[0].Timeline, func(m report.Moment) bool { return m.Event == "node node-1: lease last renewed" })
	}
	if renewed(s) {
		t.Errorf("a lease renewed 5s ago is in the timeline: %q", events)
	}
	if !renewed(snap(terminatingPod(10*time.Minute, 30), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 12*time.Minute))) {
		t.Errorf("a dead node's last renewal is not in the timeline")
	}
}

func TestSidecarsAreNamed(t *testing.T) {
	p := terminatingPod(10*time.Minute, 30)
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{{Name: "istio-proxy", RestartPolicy: &always}, {Name: "migrate"}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "istio-proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *ago(time.Hour)}}},
		{Name: "migrate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
	}
	it := Diagnose(healthySnap(p)).Items[0]
	if !strings.Contains(it.Causes[0].Summary, "istio-proxy (sidecar)") {
		t.Errorf("summary: %s", it.Causes[0].Summary)
	}
	if !slices.ContainsFunc(it.Causes[0].Evidence, func(e string) bool {
		return e == "status.initContainerStatuses[migrate].state.terminated: exitCode 0, reason Completed"
	}) {
		t.Errorf("evidence: %q", it.Causes[0].Evidence)
	}
}

// Issue 35: "node alive" passes only on evidence that a kubelet reports: a
// Lease renewed within its duration, or, without a Lease, a recent Ready
// heartbeat. A Node with neither says nothing either way: unknown.
func TestNodeAliveNeedsAReportingKubelet(t *testing.T) {
	heartbeat := func(age time.Duration) *corev1.Node {
		n := node("node-1", corev1.ConditionTrue)
		n.Status.Conditions[0].LastHeartbeatTime = *ago(age)
		return n
	}
	noStatus := node("node-1", corev1.ConditionTrue)
	noStatus.Status.Conditions = nil
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		status report.CheckStatus
		detail string
	}{
		{"a renewed lease", []runtime.Object{node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second)}, report.Pass, "lease 5s old"},
		{"no lease, a recent heartbeat", []runtime.Object{heartbeat(time.Minute)}, report.Pass, "heartbeat 60s ago"},
		{"no lease, Ready written once and never renewed", []runtime.Object{heartbeat(3 * time.Hour)}, report.Unknown, "heartbeat 3h ago: neither a renewed Lease nor a recent Ready heartbeat"},
		{"no lease, no heartbeat", []runtime.Object{node("node-1", corev1.ConditionTrue)}, report.Unknown, "no heartbeat"},
		{"no lease, no Ready condition", []runtime.Object{noStatus}, report.Unknown, "no lease; no Ready condition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(snap(append(tc.objs, terminatingPod(10*time.Second, 30))...)).Items[0]
			i := slices.IndexFunc(it.Checks, func(c report.Check) bool { return c.Name == "node alive" })
			if i < 0 || it.Checks[i].Status != tc.status || !strings.Contains(it.Checks[i].Detail, tc.detail) {
				t.Errorf("%+v", it.Checks)
			}
		})
	}
}
