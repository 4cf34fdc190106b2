package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	if err := e.HoldNode(ctx, name, finalizer); err != nil {
		return err
	}
	return e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
}

// HoldNode puts finalizer on a node, as Karpenter puts its termination
// finalizer on the nodes it launches.
func (e *Env) HoldNode(ctx context.Context, name, finalizer string) error {
	patch := []byte(`{"metadata":{"finalizers":["` + finalizer + `"]}}`)
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// ReleaseNode removes a held node's finalizers, so that it goes.
func (e *Env) ReleaseNode(ctx context.Context, name string) error {
	_, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	return err
}

// VolumeSnapshotAPI serves snapshot.storage.k8s.io/v1 VolumeSnapshots, as
// the CSI external-snapshotter's CRDs do (the lab runs no snapshot
// controller: the scenarios write what it would).
func (e *Env) VolumeSnapshotAPI(ctx context.Context) error {
	crd := crdObject("snapshot.storage.k8s.io", "VolumeSnapshot", "volumesnapshots", []string{"v1"}, nil)
	// A *.k8s.io group needs the approval annotation, as the real CRD carries.
	crd.SetAnnotations(map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/955"})
	return e.createCRD(ctx, crd)
}

// SnapshottedClaim creates claim, held by the snapshot-controller's
// pvc-as-source-protection, and a VolumeSnapshot taken from it that reports
// the error (not ready to use), then deletes the claim.
func (e *Env) SnapshottedClaim(ctx context.Context, ns, claim, snap, snapErr string) error {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, Finalizers: []string{"snapshot.storage.kubernetes.io/pvc-as-source-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}}}}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": snap, "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": claim}, "volumeSnapshotClassName": "fast"},
		"status":   map[string]any{"readyToUse": false, "error": map[string]any{"message": snapErr}}}}
	if _, err := e.Dynamic.Resource(volumeSnapshots).Namespace(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		return err
	}
	return e.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{})
}

// RestoringSnapshot creates a VolumeSnapshot held by the snapshot-controller's
// volumesnapshot-as-source-protection and a claim restored from it that stays
// Pending (no provisioner), then deletes the snapshot.
func (e *Env) RestoringSnapshot(ctx context.Context, ns, snap, claim string) error {
	vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": snap, "namespace": ns, "finalizers": []any{"snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"}},
		"status":   map[string]any{"readyToUse": true}}}
	if _, err := e.Dynamic.Resource(volumeSnapshots).Namespace(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		return err
	}
	group := "snapshot.storage.k8s.io"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			DataSource: &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: snap},
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}}}}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	return e.Dynamic.Resource(volumeSnapshots).Namespace(ns).Delete(ctx, snap, metav1.DeleteOptions{})
}

var volumeSnapshots = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
