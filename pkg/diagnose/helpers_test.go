package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// now is the fixed clock of every rule test.
var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

func int64p(v int64) *int64 { return &v }
func int32p(v int32) *int32 { return &v }

// terminatingPod is a running pod on node-1 whose delete with grace g was
// requested `requested` ago.
func terminatingPod(requested time.Duration, g int64) *corev1.Pod {
	deadline := now.Add(-requested).Add(time.Duration(g) * time.Second)
	ts := metav1.NewTime(deadline)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "pod-uid",
			DeletionTimestamp: &ts, DeletionGracePeriodSeconds: int64p(g)},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *ago(time.Hour)}}},
		}},
	}
}

func stopped(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	p.Status.Phase = phase
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}}}}
	return p
}

func node(name string, ready corev1.ConditionStatus, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", LastTransitionTime: *ago(time.Hour)}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3"}}}
	for _, t := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

func lease(name string, renewed time.Duration) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}, LeaseDurationSeconds: int32p(40)}}
}

// snap builds a snapshot around typed targets and healthy or sick nodes.
func snap(objs ...runtime.Object) *observed.Snapshot {
	s := observed.New(now)
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Node:
			s.Nodes[v.Name] = v
		case *coordinationv1.Lease:
			s.Leases[v.Name] = v
		case *corev1.Pod:
			s.Targets = append(s.Targets, target(v, "pods", func(t *observed.Target) { t.Pod = v }))
		case *corev1.Namespace:
			s.Targets = append(s.Targets, target(v, "namespaces", func(t *observed.Target) { t.Namespace = v }))
		case *unstructured.Unstructured:
			s.Targets = append(s.Targets, &observed.Target{Object: v, Ref: report.ObjectRef{APIVersion: v.GetAPIVersion(), Kind: v.GetKind(), Resource: "widgets.example.com", Namespace: v.GetNamespace(), Name: v.GetName()}})
		}
	}
	return s
}

func target(o runtime.Object, resource string, set func(*observed.Target)) *observed.Target {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: m}
	t := &observed.Target{Object: u, Ref: report.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Resource: resource, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}}
	set(t)
	return t
}

func codes(it report.Item) []string {
	var out []string
	for _, c := range it.Causes {
		out = append(out, c.Code)
	}
	return out
}

// expectCauses checks an item's ranked codes, its severity and, when given, a
// fragment of the top cause's evidence.
func expectCauses(t *testing.T, it report.Item, want []string, severity report.Severity, evidence string) {
	t.Helper()
	if got := codes(it); !slices.Equal(got, want) {
		t.Fatalf("codes = %v, want %v", got, want)
	}
	if it.Severity != severity {
		t.Errorf("severity = %s, want %s", it.Severity, severity)
	}
	if evidence != "" && !slices.ContainsFunc(it.Causes[0].Evidence, func(e string) bool { return strings.Contains(e, evidence) }) {
		t.Errorf("evidence %q lacks %q", it.Causes[0].Evidence, evidence)
	}
	expectGradedSteps(t, it)
}

// expectGradedSteps checks every step of every cause, nested ones included:
// graded, its risk text led by its grade, and ordered from safe to risky
// (advice against a change stands where it is read best).
func expectGradedSteps(t *testing.T, it report.Item) {
	t.Helper()
	for _, c := range it.Causes {
		last := 0
		for _, s := range c.Remediation {
			r := s.RiskLevel.Weight()
			if r == 0 || !strings.HasPrefix(s.Risk, string(s.RiskLevel)) {
				t.Errorf("%s: step %q: riskLevel %q, risk %q", c.Code, s.Action, s.RiskLevel, s.Risk)
			}
			switch mutating, reads := kubectlVerbs(s.Command); {
			case s.RiskLevel == report.RiskNone && mutating:
				t.Errorf("%s: step %q is graded none but its command changes the cluster: %s", c.Code, s.Action, s.Command)
			case s.RiskLevel != report.RiskNone && reads && !mutating:
				t.Errorf("%s: step %q is graded %s but its command only reads: %s", c.Code, s.Action, s.RiskLevel, s.Command)
			}
			if strings.HasPrefix(s.Risk, "none (doing it:") {
				continue
			}
			if r < last {
				t.Errorf("%s: step %q (%s) after a riskier one: %+v", c.Code, s.Action, s.RiskLevel, c.Remediation)
			}
			last = max(last, r)
		}
		for _, b := range c.BlockedBy {
			expectGradedSteps(t, b)
		}
	}
}

// kubectlVerbs says whether a step's command runs a kubectl verb that
// changes the cluster, and whether it runs one that only reads: a step's
// grade must agree with what its command does.
func kubectlVerbs(command string) (mutating, reads bool) {
	// Commands generated for a shell to run (jq ... | sh) change the cluster.
	mutating = strings.HasSuffix(strings.TrimSpace(command), "| sh")
	fields := strings.Fields(command)
	for i, f := range fields {
		if f != "kubectl" || i+1 == len(fields) {
			continue
		}
		switch fields[i+1] {
		case "get", "describe", "logs", "events", "auth", "top", "api-resources", "explain", "terminating", "version":
			reads = true
		default:
			mutating = true
		}
	}
	return mutating, reads
}

// expectCheck checks one line of the reclaim checklist.
func expectCheck(t *testing.T, it report.Item, name string, status report.CheckStatus) {
	t.Helper()
	if !slices.ContainsFunc(it.Checks, func(c report.Check) bool { return c.Name == name && c.Status == status }) {
		t.Errorf("check %q should be %s: %+v", name, status, it.Checks)
	}
}

// key is "namespace/name" as a typed key.
func key(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

func intp(v int) *int { return &v }

// byType keys counts by type: "pods", "widgets.example.com".
func byType(counts map[string]int) map[schema.GroupResource]int {
	out := map[schema.GroupResource]int{}
	for r, n := range counts {
		out[schema.ParseGroupResource(r)] = n
	}
	return out
}
