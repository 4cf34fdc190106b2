package collect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A node held by a drain finalizer: the pods bound to it are listed once
// (by spec.nodeName, paginated), and the disruption budgets of their
// namespaces once per namespace; a node no drain holds is not read.
func TestReadDrains(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: "node-7"}}
	}
	fake := kubefake.NewClientset(pod("shop", "db-0"), pod("shop", "db-1"), pod("jobs", "batch-0"),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}})
	node := func(name string, finalizers ...string) *observed.Target {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Node")
		u.SetName(name)
		u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		u.SetFinalizers(finalizers)
		return &observed.Target{Object: u, Ref: observed.ObjectRef{APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: name}}
	}
	s := observed.New(time.Now())
	s.Targets = []*observed.Target{node("node-7", "karpenter.sh/termination"), node("node-8", "example.com/other")}
	c := &Collector{Clients: &kube.Clients{Typed: fake}}
	c.readDrains(context.Background(), s)
	if len(s.NodePods["node-7"]) != 3 || len(s.NodePods) != 1 || len(s.PDBs["shop"]) != 1 || len(s.PDBs) != 2 {
		t.Errorf("node pods %v, budgets %v", s.NodePods, s.PDBs)
	}
	lists := map[string]int{}
	for _, a := range fake.Actions() {
		l, ok := a.(k8stesting.ListAction)
		if !ok {
			t.Errorf("%s %s: only lists", a.GetVerb(), a.GetResource().Resource)
			continue
		}
		lists[a.GetResource().Resource+" "+a.GetNamespace()+" "+l.GetListRestrictions().Fields.String()]++
	}
	want := map[string]int{"pods  spec.nodeName=node-7": 1, "poddisruptionbudgets shop ": 1, "poddisruptionbudgets jobs ": 1}
	for k, n := range want {
		if lists[k] != n {
			t.Errorf("%q listed %d times, want %d (all: %v)", k, lists[k], n, lists)
		}
	}
	if len(lists) != len(want) {
		t.Errorf("lists %v, want %v", lists, want)
	}
}
