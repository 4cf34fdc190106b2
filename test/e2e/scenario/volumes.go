package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CSIClaim creates a PersistentVolume of a CSI driver and a claim bound to it
// (the real PV controller binds them), and returns the volume's unique name
// as the kubelet lists it in node.status.volumesInUse.
func (e *Env) CSIClaim(ctx context.Context, ns, claim, driver string) (string, error) {
	pvName := "pv-" + ns + "-" + claim
	handle := "vol-" + ns + "-" + claim
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}},
		},
	}
	if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	err := Until(ctx, time.Minute, "claim "+claim+" Bound", func(ctx context.Context) (bool, error) {
		c, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	})
	return fmt.Sprintf("kubernetes.io/csi/%s^%s", driver, handle), err
}

// MountedOnNode reports the volume in node.status.volumesInUse, as the kubelet
// does while it is mounted.
func (e *Env) MountedOnNode(ctx context.Context, node, uniqueName string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"volumesInUse": []string{uniqueName}}})
	if err != nil {
		return err
	}
	_, err = e.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// WithClaim mounts a claim into the pod.
func WithClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}
