package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const drainFinalizer = "karpenter.sh/termination"

func drainedNodeTarget() *observed.Target {
	n := node("node-7", corev1.ConditionTrue)
	n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	n.DeletionTimestamp, n.Finalizers = ago(10*time.Minute), []string{drainFinalizer}
	n.DeletionGracePeriodSeconds = int64p(0)
	return target(n, "nodes", func(*observed.Target) {})
}

func podOn(name string, labels map[string]string, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
		Spec:   corev1.PodSpec{NodeName: "node-7"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func budget(name string, allowed int32, mutate ...func(*policyv1.PodDisruptionBudget)) policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	b := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}}
	for _, m := range mutate {
		m(&b)
	}
	return b
}

// A drain finalizer holds its node (or the NodeClaim or Machine draining
// it) while a pod cannot be evicted: the report names the pod and what
// refuses its eviction, whatever holds the drain.
func TestNodeDrainBlocked(t *testing.T) {
	db := map[string]string{"app": "db"}
	nodeClaim := func() *observed.Target {
		u := widget(10*time.Minute, drainFinalizer)
		u.SetAPIVersion("karpenter.sh/v1")
		u.SetKind("NodeClaim")
		_ = unstructured.SetNestedField(u.Object, "node-7", "status", "nodeName")
		return &observed.Target{Object: u, Ref: report.ObjectRef{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Resource: "nodeclaims.karpenter.sh", Name: "w1"}}
	}
	machine := func() *observed.Target {
		t := nodeClaim()
		_ = unstructured.SetNestedField(t.Object.Object, "node-7", "status", "nodeRef", "name")
		unstructured.RemoveNestedField(t.Object.Object, "status", "nodeName")
		return t
	}
	daemon, yes := true, true
	for _, tc := range []struct {
		name     string
		target   func() *observed.Target
		pods     []corev1.Pod
		pdbs     []policyv1.PodDisruptionBudget
		code     string
		severity report.Severity
		summary  string
	}{
		{"a budget allowing no disruption", drainedNodeTarget, []corev1.Pod{podOn("db-0", db)}, []policyv1.PodDisruptionBudget{budget("db", 0)},
			"NodeDrainBlocked", report.Critical, "the drain of node node-7 cannot evict pod shop/db-0: PodDisruptionBudget shop/db allows 0 disruptions (currentHealthy 1, desiredHealthy 1, expectedPods 1)"},
		{"a NodeClaim draining the node", nodeClaim, []corev1.Pod{podOn("db-0", db)}, []policyv1.PodDisruptionBudget{budget("db", 0)},
			"NodeDrainBlocked", report.Critical, "PodDisruptionBudget shop/db allows 0 disruptions"},
		{"a Machine draining the node", machine, []corev1.Pod{podOn("db-0", db)}, []policyv1.PodDisruptionBudget{budget("db", 0)},
			"NodeDrainBlocked", report.Critical, "cannot evict pod shop/db-0"},
		{"a pod that asks not to be disrupted", drainedNodeTarget,
			[]corev1.Pod{podOn("batch-0", nil, func(p *corev1.Pod) { p.Annotations = map[string]string{observed.DoNotDisruptAnnotation: "true"} })}, nil,
			"NodeDrainBlocked", report.Critical, "annotation karpenter.sh/do-not-disrupt=true"},
		{"a pod that asks not to be evicted (Karpenter before v0.32)", drainedNodeTarget,
			[]corev1.Pod{podOn("batch-0", nil, func(p *corev1.Pod) { p.Annotations = map[string]string{observed.DoNotEvictAnnotation: "true"} })}, nil,
			"NodeDrainBlocked", report.Critical, "annotation karpenter.sh/do-not-evict=true"},
		{"two pods refused", drainedNodeTarget, []corev1.Pod{podOn("db-0", db), podOn("db-1", db)}, []policyv1.PodDisruptionBudget{budget("db", 0)},
			"NodeDrainBlocked", report.Critical, "cannot evict 2 pods;"},
		{"a budget that allows one", drainedNodeTarget, []corev1.Pod{podOn("db-0", db)}, []policyv1.PodDisruptionBudget{budget("db", 1)},
			"NodeDrainBlocked", report.Warning, "is still waiting for 1 pod (0 being deleted)"},
		{"a budget selecting other pods", drainedNodeTarget, []corev1.Pod{podOn("web-0", map[string]string{"app": "web"})}, []policyv1.PodDisruptionBudget{budget("db", 0)},
			"NodeDrainBlocked", report.Warning, "nothing refuses its eviction"},
		{"an unready pod under AlwaysAllow", drainedNodeTarget,
			[]corev1.Pod{podOn("db-0", db, func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse })},
			[]policyv1.PodDisruptionBudget{budget("db", 0, func(b *policyv1.PodDisruptionBudget) {
				always := policyv1.AlwaysAllow
				b.Spec.UnhealthyPodEvictionPolicy = &always
			})},
			"NodeDrainBlocked", report.Warning, "nothing refuses"},
		{"only pods a drain leaves", drainedNodeTarget, []corev1.Pod{
			podOn("ds-0", db, func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &daemon, BlockOwnerDeletion: &yes}}
			}),
			podOn("etcd-node-7", db, func(p *corev1.Pod) { p.Annotations = map[string]string{observed.MirrorPodAnnotation: "x"} }),
			podOn("job-0", db, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		}, []policyv1.PodDisruptionBudget{budget("db", 0)}, "FinalizerPending", report.Warning, "karpenter.sh/termination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapOf(tc.target())
			s.NodePods = map[string][]corev1.Pod{"node-7": tc.pods}
			s.PDBs = map[string][]policyv1.PodDisruptionBudget{"shop": tc.pdbs}
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if c.Code != tc.code || c.Severity != tc.severity || !strings.Contains(c.Summary, tc.summary) {
				t.Errorf("%s %s: %s; want %s %s saying %q", c.Code, c.Severity, c.Summary, tc.code, tc.severity, tc.summary)
			}
			expectGradedSteps(t, it)
		})
	}
	// Not read: the generic answer, and the rule asks for the drain's evidence.
	tgt := drainedNodeTarget()
	if !Needs(tgt).Has(DrainEvidence) {
		t.Error("a node held by a drain finalizer does not ask for its pods and budgets")
	}
	if c := Diagnose(snapOf(tgt)).Items[0].Causes[0]; c.Code != "FinalizerPending" {
		t.Errorf("pods not read: %s", c.Code)
	}
}
