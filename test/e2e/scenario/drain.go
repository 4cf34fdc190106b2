package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BudgetedPod runs pod (on a live node) under a PodDisruptionBudget of
// minAvailable 1 that selects it, and waits until the real disruption
// controller says the budget allows 0 disruptions.
func (e *Env) BudgetedPod(ctx context.Context, pod *corev1.Pod, budget string) error {
	if err := e.RunningPod(ctx, pod); err != nil {
		return err
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: budget, Namespace: pod.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: pod.Labels}}}
	if _, err := e.Client.PolicyV1().PodDisruptionBudgets(pod.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "budget "+budget+" computed", func(ctx context.Context) (bool, error) {
		got, err := e.Client.PolicyV1().PodDisruptionBudgets(pod.Namespace).Get(ctx, budget, metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration >= got.Generation && got.Status.ExpectedPods == 1 && got.Status.CurrentHealthy == 1, nil
	})
}

// DeleteHeldNode deletes a node held by finalizer, as Karpenter's
// termination controller finds it: deleted, its finalizer still on.
func (e *Env) DeleteHeldNode(ctx context.Context, name, finalizer string) error {
	patch := []byte(`{"metadata":{"finalizers":["` + finalizer + `"]}}`)
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	return e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
}

// ReleaseNode removes a held node's finalizers, so that it goes.
func (e *Env) ReleaseNode(ctx context.Context, name string) error {
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	return err
}
