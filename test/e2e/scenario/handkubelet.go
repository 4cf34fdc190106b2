package scenario

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A hand-played kubelet: the scenario writes, once, what a kubelet writes
// while it is alive (Ready node status, a renewed Lease, a running pod) and
// then never again, exactly as a kubelet that died. The real node lifecycle
// controller then marks the node Unknown and taints it unreachable.
// (kwok keeps renewing the Lease of a node it has managed once, so a node
// that must die is never given to kwok.)

// DyingNode creates a node that reports Ready once and then stops.
func (e *Env) DyingNode(ctx context.Context, name string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	_, err := e.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", ContainerRuntimeVersion: "containerd://2.1.0", OperatingSystem: "linux", Architecture: "amd64"},
		Capacity: corev1.ResourceList{corev1.ResourcePods: mustQuantity("110")},
	}
	// A merge patch of the status, as the kubelet sends: the node lifecycle
	// controller may have updated the node since it was created.
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	duration := int32(20)
	renew := metav1.NewMicroTime(time.Now())
	_, err = e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &duration, RenewTime: &renew},
	}, metav1.CreateOptions{})
	return err
}

// RunOnDyingNode creates the pod and reports it Running, as its kubelet would have.
func (e *Env) RunOnDyingNode(ctx context.Context, pod *corev1.Pod) error {
	created, err := e.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	created.Status.Phase = corev1.PodRunning
	created.Status.StartTime = &now
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	for _, c := range created.Spec.Containers {
		created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err = e.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// NotReadyNode creates a node whose kubelet is alive (it renews the Lease
// every 2 s until stop is called) but reports Ready=False, as a kubelet does
// when the container runtime's network is not ready.
func (e *Env) NotReadyNode(ctx context.Context, name string) (stop func(), err error) {
	if err := e.DyingNode(ctx, name); err != nil {
		return nil, err
	}
	now := metav1.Now()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message:           "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	if err != nil {
		return nil, err
	}
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return nil, err
	}
	return e.renewLease(name), nil
}

// HandNode creates a node whose kubelet stays alive (Ready, its Lease
// renewed every 2 s until stop is called) but is not kwok's: the scenario
// writes its pods' status by hand.
func (e *Env) HandNode(ctx context.Context, name string) (stop func(), err error) {
	if err := e.DyingNode(ctx, name); err != nil {
		return nil, err
	}
	return e.renewLease(name), nil
}
