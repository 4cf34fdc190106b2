package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ForegroundOwner creates configmap owner and configmap dependent, which
// names owner with blockOwnerDeletion and carries its own finalizer, then
// deletes owner with foreground propagation: the garbage collector deletes
// the dependent first, and waits for it.
func (e *Env) ForegroundOwner(ctx context.Context, ns, owner, dependent, finalizer string) error {
	cms := e.Client.CoreV1().ConfigMaps(ns)
	o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	yes := true
	d := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: dependent, Finalizers: []string{finalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: o.UID, BlockOwnerDeletion: &yes}}}}
	if _, err := cms.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, owner, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "the garbage collector to delete "+dependent, func(ctx context.Context) (bool, error) {
		got, err := cms.Get(ctx, dependent, metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil, nil
	})
}

// ForegroundChain creates ConfigMaps name-0 ... name-(n-1), each the
// dependent of the one before with blockOwnerDeletion, the last held by
// finalizer; deletes name-0 in foreground and waits until the garbage
// collector has carried the deletion down to the last.
func (e *Env) ForegroundChain(ctx context.Context, ns, name string, n int, finalizer string) error {
	cms := e.Client.CoreV1().ConfigMaps(ns)
	yes := true
	var owner *corev1.ConfigMap
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)}}
		if owner != nil {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &yes}}
		}
		if i == n-1 {
			cm.Finalizers = []string{finalizer}
		}
		var err error
		if owner, err = cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	fg := metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, name+"-0", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return err
	}
	return Until(ctx, 2*time.Minute, "the garbage collector to delete "+owner.Name, func(ctx context.Context) (bool, error) {
		got, err := cms.Get(ctx, owner.Name, metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil, nil
	})
}

// ClaimOnPVC creates a claim (no storage class: it stays Pending, which the
// PVC protection controller does not mind) used by a running pod on node,
// then deletes the claim.
func (e *Env) ClaimOnPVC(ctx context.Context, ns, claim, pod, node string) error {
	if err := e.Claim(ctx, ns, claim); err != nil {
		return err
	}
	if err := e.RunningPod(ctx, WithClaim(PodSpec(ns, pod, node), claim)); err != nil {
		return err
	}
	return e.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{})
}

// BoundVolume creates a volume pre-bound to a claim, waits until the PV
// controller binds them, then deletes the volume.
func (e *Env) BoundVolume(ctx context.Context, ns, claim, pv string) error {
	empty := ""
	vol := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              empty,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pv}},
		}}
	if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, vol, metav1.CreateOptions{}); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv, StorageClassName: &empty,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := Until(ctx, time.Minute, "volume "+pv+" Bound", func(ctx context.Context) (bool, error) {
		got, err := e.Client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.VolumeBound, nil
	}); err != nil {
		return err
	}
	return e.Client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
}

// FailedDetach creates a VolumeAttachment held by the external-attacher's
// finalizer, reports a detach error in its status as the attacher would,
// then deletes it.
func (e *Env) FailedDetach(ctx context.Context, name, driver, node, pv, message string) error {
	vas := e.Client.StorageV1().VolumeAttachments()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"external-attacher/" + driver}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	created, err := vas.Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = storagev1.VolumeAttachmentStatus{Attached: true, DetachError: &storagev1.VolumeError{Time: metav1.Now(), Message: message}}
	if _, err := vas.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return vas.Delete(ctx, name, metav1.DeleteOptions{})
}

// FailedLoadBalancerCleanup creates a LoadBalancer Service held by the
// cloud controller's finalizer, records the DeleteLoadBalancerFailed event
// the cloud controller writes, then deletes the Service.
func (e *Env) FailedLoadBalancerCleanup(ctx context.Context, ns, name, message string) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}}}
	created, err := e.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if err := e.Client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: name + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name, UID: created.UID},
		Reason:         "DeleteLoadBalancerFailed", Message: message, Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "service-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 1}
	_, err = e.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// FailedVolumeDelete makes a ReleasedCSIVolume and records the
// VolumeFailedDelete event its provisioner writes (in namespace default, as
// for every cluster-scoped object).
func (e *Env) FailedVolumeDelete(ctx context.Context, name, driver, message string) error {
	created, err := e.ReleasedCSIVolume(ctx, name, driver)
	if err != nil {
		return err
	}
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: name + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolume", Name: name, UID: created.UID},
		Reason:         "VolumeFailedDelete", Message: message, Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: driver + "_csi-provisioner"}, FirstTimestamp: now, LastTimestamp: now, Count: 1}
	_, err = e.Client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// ReleasedCSIVolume makes a CSIVolume and deletes it.
func (e *Env) ReleasedCSIVolume(ctx context.Context, name, driver string) (*corev1.PersistentVolume, error) {
	created, err := e.CSIVolume(ctx, name, driver)
	if err != nil {
		return nil, err
	}
	return created, e.Client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
}

// CSIVolume creates a CSI volume made by an external provisioner (the
// pv.kubernetes.io/provisioned-by annotation: the PV controller leaves its
// deletion to that provisioner), released by a claim that is gone, held by
// the provisioner's finalizer.
func (e *Env) CSIVolume(ctx context.Context, name, driver string) (*corev1.PersistentVolume, error) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer"},
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": driver}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: name + "-claim-gone", UID: "00000000-0000-0000-0000-000000000000"},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + name}}}}
	return e.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
}

// InstalledCSIDriver stands for a CSI driver's install: its CSIDriver
// object and, in namespace ns, its external-provisioner's leader-election
// Lease (named after the driver, as csi-lib-utils sanitizes it), last
// renewed at renewed (a live provisioner renews it every few seconds).
func (e *Env) InstalledCSIDriver(ctx context.Context, driver, ns string, renewed time.Time) error {
	if _, err := e.Client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	holder, duration := "csi-controller-0", int32(15)
	at := metav1.NewMicroTime(renewed)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: strings.NewReplacer(".", "-", "/", "-").Replace(driver), Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &at, RenewTime: &at}}
	_, err := e.Client.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{})
	return err
}

// ReleaseVolume removes a volume's finalizers, so that it goes.
func (e *Env) ReleaseVolume(ctx context.Context, pv string) {
	_, _ = e.Client.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

// ConfigMapWithFinalizer creates a configmap held by finalizer and deletes it.
func (e *Env) ConfigMapWithFinalizer(ctx context.Context, ns, name, finalizer string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{finalizer}}}
	if _, err := e.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	return e.Client.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// Complaint is what a live controller writes about an object it cannot
// finish deleting: status conditions on the object, and a Warning event.
type Complaint struct {
	Conditions           []map[string]any
	EventReason, Message string
	Component            string
}

// ComplainingResource creates an instance of a CRD made by CRD, held by
// finalizer, with the complaint's conditions in its status and its Warning
// event recorded about it, as its controller would write them.
func (e *Env) ComplainingResource(ctx context.Context, group, kind, plural, ns, name, finalizer string, c Complaint) error {
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	conditions := make([]any, 0, len(c.Conditions))
	for _, cond := range c.Conditions {
		conditions = append(conditions, cond)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "finalizers": []any{finalizer}},
		"status":   map[string]any{"conditions": conditions},
	}}
	created, err := e.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if c.EventReason != "" {
		now := metav1.Now()
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: name + ".", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: group + "/v1", Kind: kind, Namespace: ns, Name: name, UID: created.GetUID()},
			Reason:         c.EventReason, Message: c.Message, Type: corev1.EventTypeWarning,
			Source: corev1.EventSource{Component: c.Component}, FirstTimestamp: now, LastTimestamp: now, Count: 4}
		if _, err := e.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// Claim creates a 1Gi ReadWriteOnce claim (no class: never bound).
func (e *Env) Claim(ctx context.Context, ns, name string) error {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	_, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	return err
}

// AttachedCSIVolume creates a CSI volume of driver, attached to node: the
// PersistentVolume and its VolumeAttachment (status attached, as the
// attacher reports it), both held by the external-attacher's finalizer;
// and, in namespace ns, the attacher's leader-election Lease, last renewed
// at renewed (a live attacher renews it every few seconds).
func (e *Env) AttachedCSIVolume(ctx context.Context, pv, driver, node, ns string, renewed time.Time) error {
	finalizer := "external-attacher/" + strings.NewReplacer(".", "-", "/", "-").Replace(driver)
	vol := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv, Finalizers: []string{finalizer}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "disk-" + pv}}}}
	if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, vol, metav1.CreateOptions{}); err != nil {
		return err
	}
	vas := e.Client.StorageV1().VolumeAttachments()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-" + pv, Finalizers: []string{finalizer}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	created, err := vas.Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = storagev1.VolumeAttachmentStatus{Attached: true}
	if _, err := vas.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	holder, duration := "csi-controller-0", int32(15)
	at := metav1.NewMicroTime(renewed)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "external-attacher-leader-" + strings.NewReplacer(".", "-", "/", "-").Replace(driver), Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &at, RenewTime: &at}}
	_, err = e.Client.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{})
	return err
}

// ReleaseCSIVolume removes the external-attacher's finalizers from a volume
// AttachedCSIVolume made and from its attachment, so that they go.
func (e *Env) ReleaseCSIVolume(ctx context.Context, pv string) {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, _ = e.Client.StorageV1().VolumeAttachments().Patch(ctx, "csi-"+pv, types.MergePatchType, patch, metav1.PatchOptions{})
	_, _ = e.Client.CoreV1().PersistentVolumes().Patch(ctx, pv, types.MergePatchType, patch, metav1.PatchOptions{})
	_ = e.Client.StorageV1().VolumeAttachments().Delete(ctx, "csi-"+pv, metav1.DeleteOptions{})
	_ = e.Client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
}
