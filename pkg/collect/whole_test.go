package collect

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// wholeTarget is a target as Resolve leaves it: the object read in full.
func wholeTarget(t *testing.T, obj any, resource string) *observed.Target {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	return &observed.Target{Ref: report.ObjectRef{Resource: resource, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}, Object: u, Whole: true}
}

// Objects the user named were read whole by Resolve: their typed forms come
// from that read, with no request (as many pods as would be listed, a
// namespace, a custom resource), and keep what only the whole object has.
func TestTargetsReadWholeAreNotReadAgain(t *testing.T) {
	var pods []*observed.Target
	for i := range batchThreshold + 2 {
		pods = append(pods, wholeTarget(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "shop", UID: "uid"},
			Spec: corev1.PodSpec{NodeName: "node-1"}}, "pods"))
	}
	ns := wholeTarget(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue}}}}, "namespaces")
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop"}, "status": map[string]any{"phase": "Deleting"}}}
	cr := &observed.Target{Ref: report.ObjectRef{Resource: "widgets.example.com", Namespace: "shop", Name: "w"}, Object: widget, Whole: true}
	typed := kubefake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	c := &Collector{Clients: &kube.Clients{Typed: typed, Dynamic: dyn}}
	ctx := context.Background()
	c.readPods(ctx, pods, map[string]int{"shop": len(pods)})
	c.readNamespaceTargets(ctx, []*observed.Target{ns})
	c.readInFull(ctx, cr, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	if n := len(typed.Actions()) + len(dyn.Actions()); n != 0 {
		t.Errorf("%d requests, want none: %v %v", n, typed.Actions(), dyn.Actions())
	}
	for _, p := range pods {
		if p.Pod == nil || p.Pod.Spec.NodeName != "node-1" || p.Skipped != nil {
			t.Errorf("%s: pod %+v, skipped %v", p.Ref.Name, p.Pod, p.Skipped)
		}
	}
	if ns.Namespace == nil || len(ns.Namespace.Status.Conditions) != 1 || ns.Skipped != nil {
		t.Errorf("namespace %+v, skipped %v", ns.Namespace, ns.Skipped)
	}
	if phase, _, _ := unstructured.NestedString(cr.Object.Object, "status", "phase"); phase != "Deleting" || cr.Skipped != nil {
		t.Errorf("custom resource %v, skipped %v", cr.Object.Object, cr.Skipped)
	}

	// Read from a scan (metadata only), the same pod is read.
	scanned := wholeTarget(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p0", Namespace: "shop"}}, "pods")
	scanned.Whole = false
	c.readPods(ctx, []*observed.Target{scanned}, nil)
	if len(typed.Actions()) != 1 || typed.Actions()[0].GetVerb() != "get" {
		t.Errorf("a scanned pod: requests %v, want one get", typed.Actions())
	}
}
