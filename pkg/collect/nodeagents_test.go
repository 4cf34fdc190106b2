package collect

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// Two local volumes on one node, held by the finalizer of a node agent: the
// agent's namespace is listed once on that node, and each volume gets the
// DaemonSets' pods there, not another node's, not a Deployment's pod; a
// list that fails leaves the agents unread (nil), never "none".
func TestNodeAgentsAreReadOncePerNode(t *testing.T) {
	yes := true
	pod := func(name, node, kind string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "openebs", Name: name,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "openebs-lvm-node", Controller: &yes}}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	volume := func(name string) *observed.Target {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("local.openebs.io/v1alpha1")
		u.SetKind("LVMVolume")
		u.SetNamespace("openebs")
		u.SetName(name)
		u.SetFinalizers([]string{"lvm.openebs.io/finalizer"})
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
		_ = unstructured.SetNestedField(u.Object, "node-1", "spec", "ownerNodeID")
		return &observed.Target{Ref: observed.ObjectRef{APIVersion: "local.openebs.io/v1alpha1", Kind: "LVMVolume", Resource: "lvmvolumes.local.openebs.io", Namespace: "openebs", Name: name}, Object: u}
	}
	read := func(fail bool) (*observed.Snapshot, *kubefake.Clientset) {
		s := observed.New(time.Now())
		s.Targets = []*observed.Target{volume("pvc-a"), volume("pvc-b")}
		s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "daemonset", Namespace: "openebs", Name: "openebs-lvm-node", Desired: 2, Ready: 2}}}
		fake := kubefake.NewClientset([]runtime.Object{pod("agent-1", "node-1", "DaemonSet"), pod("agent-2", "node-2", "DaemonSet"), pod("web", "node-1", "ReplicaSet")}...)
		if fail {
			fake.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("connection reset")
			})
		}
		(&Collector{Clients: &kube.Clients{Typed: fake}}).readNodeAgents(context.Background(), s)
		return s, fake
	}
	s, fake := read(false)
	if n := len(fake.Actions()); n != 1 {
		t.Errorf("%d requests, want 1 list", n)
	}
	for _, tg := range s.Targets {
		if len(tg.NodeAgents) != 1 || tg.NodeAgents[0].Name != "agent-1" {
			t.Errorf("%s: agents %v", tg.Ref.Name, tg.NodeAgents)
		}
	}
	s, _ = read(true)
	for _, tg := range s.Targets {
		if tg.NodeAgents != nil || len(tg.Skipped) != 1 {
			t.Errorf("%s after a failed list: agents %v, skipped %v", tg.Ref.Name, tg.NodeAgents, tg.Skipped)
		}
	}
}
