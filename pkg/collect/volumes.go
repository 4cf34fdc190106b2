package collect

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "volumes", after: nesting, read: (*Collector).readVolumes,
		permissions: []Permission{
			{Read: "`get` persistentvolumeclaims, persistentvolumes, csinodes; `list` volumeattachments, csidrivers", UsedFor: "the volumes of pods in state C (csidrivers: whether a CSI volume is attachable, so tracked in `volumesInUse`)", Without: "`skipped` names the read; `volumes unmounted` stays `unknown`"},
		}})
}

// readVolumes follows the volumes of the pods whose rules need them:
// claim -> volume -> CSI driver, the driver's registration in the node's
// CSINode, and the node's VolumeAttachments.
func (c *Collector) readVolumes(ctx context.Context, s *observed.Snapshot) {
	var pods []*corev1.Pod
	for _, t := range c.needing(s, diagnose.VolumeEvidence) {
		pods = append(pods, t.Pod)
	}
	if len(pods) == 0 {
		return
	}
	v := &s.Volumes
	core, storage := c.Clients.Typed.CoreV1(), c.Clients.Typed.StorageV1()
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		for _, claim := range claimNames(p) {
			key := types.NamespacedName{Namespace: p.Namespace, Name: claim}
			if _, done := v.Claims[key]; done {
				continue
			}
			pvc, err := core.PersistentVolumeClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				c.Skip(skipOf("persistentvolumeclaims/"+key.String(), err))
				continue
			}
			if err != nil {
				pvc = nil
			}
			v.Claims[key] = pvc // nil: not found
			if pvc == nil || pvc.Spec.VolumeName == "" {
				continue
			}
			pv, err := core.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				c.Skip(skipOf("persistentvolumes/"+pvc.Spec.VolumeName, err))
				continue
			}
			if err != nil {
				pv = nil
			}
			v.PersistentVolumes[pvc.Spec.VolumeName] = pv
		}
	}
	for node := range nodes {
		csiNode, err := storage.CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.Skip(skipOf("csinodes/"+node, err))
			continue
		}
		if err != nil {
			csiNode = nil
		}
		v.CSINodes[node] = csiNode // nil: the node has no CSINode
	}
	if drivers, err := listAll[storagev1.CSIDriver](ctx, metav1.ListOptions{}, pages(storage.CSIDrivers().List)); err != nil {
		c.Skip(skipOf("list csidrivers", err))
	} else {
		v.CSIDrivers = map[string]*storagev1.CSIDriver{}
		for i := range drivers {
			v.CSIDrivers[drivers[i].Name] = &drivers[i]
		}
	}
	vas, err := listAll[storagev1.VolumeAttachment](ctx, metav1.ListOptions{}, pages(storage.VolumeAttachments().List))
	if err != nil {
		c.Skip(skipOf("list volumeattachments", err))
		return
	}
	for _, va := range vas {
		if nodes[va.Spec.NodeName] {
			v.Attachments = append(v.Attachments, va)
		}
	}
}

// claimNames lists the claims a pod mounts.
func claimNames(p *corev1.Pod) []string {
	var out []string
	for _, vol := range p.Spec.Volumes {
		if claim := observed.VolumeClaim(p, vol); claim != "" {
			out = append(out, claim)
		}
	}
	return out
}
