package scenario

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
)

// DeploymentChain builds what the deployment and replicaset controllers
// leave behind, Deployment -> ReplicaSet -> Pod, with the pod on node (a
// node whose kubelet RunOnDyingNode plays). The Deployment is paused, so the
// deployment controller adopts the ReplicaSet as its current one and rolls
// nothing out; the lab runs no scheduler, so the pod is bound by hand.
func (e *Env) DeploymentChain(ctx context.Context, ns, name, node string) error {
	pod, err := e.deploymentChain(ctx, ns, name, node, 1)
	if err != nil {
		return err
	}
	return e.RunOnDyingNode(ctx, pod)
}

// GracefulDeploymentChain is DeploymentChain with the pod run by a live
// kubelet (kwok) on node, which takes its whole grace period of grace
// seconds to stop it once deleted.
func (e *Env) GracefulDeploymentChain(ctx context.Context, ns, name, node string, grace int64) error {
	pod, err := e.deploymentChain(ctx, ns, name, node, grace)
	if err != nil {
		return err
	}
	pod.Annotations = map[string]string{lab.KillDelayAnnotation: fmt.Sprintf("%ds", grace)}
	return e.RunningPod(ctx, pod)
}

func (e *Env) deploymentChain(ctx context.Context, ns, name, node string, grace int64) (*corev1.Pod, error) {
	one, yes := int32(1), true
	labels := map[string]string{"app": name}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	d, err := e.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Paused: true, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	rs, err := e.Client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	pod := PodSpec(ns, name+"-rs-0", node)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Labels = labels
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
	return pod, nil
}

// DeleteForeground deletes a Deployment as `kubectl delete --cascade=foreground`
// does, and waits until the garbage collector has reached the pod.
func (e *Env) DeleteForeground(ctx context.Context, ns, deployment, pod string) error {
	fg := metav1.DeletePropagationForeground
	if err := e.Client.AppsV1().Deployments(ns).Delete(ctx, deployment, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return err
	}
	return e.WaitPod(ctx, ns, pod, "deleted by the garbage collector", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// NFSVolumes mounts network volumes whose unmount never shows in the API into
// the pod: an inline NFS volume and a claim bound to an NFS PersistentVolume.
// The servers are addresses of the lab's own test range; nothing dials them
// (the lab's kubelets are simulated).
func (e *Env) NFSVolumes(ctx context.Context, pod *corev1.Pod, claim string) error {
	empty := ""
	pvName := "pv-" + pod.Namespace + "-" + claim
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: pod.Namespace, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "198.18.0.51", Path: "/exports/" + claim}},
		}}
	if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: pod.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &empty, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := Until(ctx, time.Minute, "claim "+claim+" Bound", func(ctx context.Context) (bool, error) {
		c, err := e.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	}); err != nil {
		return err
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "198.18.0.50", Path: "/exports/shared"}}},
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return nil
}

// NamespaceWithFinalizer creates a namespace that a platform controller
// holds with its own metadata.finalizers entry.
func (e *Env) NamespaceWithFinalizer(ctx context.Context, name, finalizer string) error {
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer}}}, metav1.CreateOptions{})
	return err
}

// WaitNamespaceFinalized waits until the namespace controller has removed
// its own finalizer from spec.finalizers (the content is gone).
func (e *Env) WaitNamespaceFinalized(ctx context.Context, name string) error {
	return Until(ctx, 2*time.Minute, "namespace "+name+" finalized by the namespace controller", func(ctx context.Context) (bool, error) {
		ns, err := e.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0, nil
	})
}
