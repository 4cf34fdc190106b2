package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// csiPluginName prefixes the unique names of CSI volumes in
// node.status.volumesInUse: kubernetes.io/csi/<driver>^<volumeHandle>.
const csiPluginName = "kubernetes.io/csi"

// podVolume is one persistent volume of a pod, followed to the node.
type podVolume struct {
	name, claim, pv, driver string
	uniqueName              string
	inUse                   bool  // listed in node.status.volumesInUse
	registered              *bool // driver in the node's CSINode; nil: not read
	detachError             string
}

// podVolumesOf follows the pod's claims to their CSI volumes. It returns
// false when the chain could not be read (not in state C, or forbidden).
func podVolumesOf(s *snapshot.Snapshot, pod *corev1.Pod) ([]podVolume, bool) {
	var out []podVolume
	node := s.Nodes[pod.Spec.NodeName]
	csiNode, csiNodeRead := s.Volumes.CSINodes[pod.Spec.NodeName]
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		key := pod.Namespace + "/" + vol.PersistentVolumeClaim.ClaimName
		pvc, ok := s.Volumes.Claims[key]
		if !ok {
			return nil, false
		}
		pv := (*corev1.PersistentVolume)(nil)
		if pvc != nil {
			pv = s.Volumes.PersistentVolumes[pvc.Spec.VolumeName]
		}
		if pv == nil || pv.Spec.CSI == nil {
			continue // not bound, or not CSI: the kubelet's in-tree plugins are not followed
		}
		v := podVolume{name: vol.Name, claim: key, pv: pv.Name, driver: pv.Spec.CSI.Driver,
			uniqueName: fmt.Sprintf("%s/%s^%s", csiPluginName, pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)}
		if node != nil {
			v.inUse = slices.Contains(node.Status.VolumesInUse, corev1.UniqueVolumeName(v.uniqueName))
		}
		if csiNodeRead {
			registered := csiNode != nil && slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == v.driver })
			v.registered = &registered
		}
		for _, va := range s.Volumes.Attachments {
			if va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == pv.Name && va.Status.DetachError != nil {
				v.detachError = va.Status.DetachError.Message
			}
		}
		out = append(out, v)
	}
	return out, true
}

// volumeCauses explains CSI volumes the kubelet has not unmounted yet.
func volumeCauses(pod *corev1.Pod, vols []podVolume, tm timing) []report.Cause {
	var causes []report.Cause
	for _, v := range vols {
		if !v.inUse {
			continue
		}
		evidence := []string{
			fmt.Sprintf("spec.volumes[%s]: claim %s -> persistentvolume %s (CSI driver %s)", v.name, v.claim, v.pv, v.driver),
			fmt.Sprintf("node %s: status.volumesInUse lists %s", pod.Spec.NodeName, v.uniqueName),
		}
		sev, confidence := settling(report.Warning, tm), 0.45
		summary := fmt.Sprintf("volume %s (%s) is still mounted on %s: the kubelet removes the pod only after unmounting it", v.name, v.pv, pod.Spec.NodeName)
		if v.registered != nil && !*v.registered {
			sev, confidence = report.Critical, 0.8
			summary = fmt.Sprintf("CSI driver %s is not registered on %s (its node plugin is not running), so the kubelet cannot unmount volume %s", v.driver, pod.Spec.NodeName, v.name)
			evidence = append(evidence, fmt.Sprintf("csinode %s: spec.drivers does not list %s", pod.Spec.NodeName, v.driver))
		}
		if v.detachError != "" {
			evidence = append(evidence, fmt.Sprintf("volumeattachment of %s: status.detachError: %s", v.pv, v.detachError))
		}
		evidence = append(evidence, "status.volumesInUse is per node: another pod on the node using the same volume keeps it listed")
		causes = append(causes, cause(catalog.VolumeTeardownPending, sev, confidence, summary, evidence,
			step("Check the CSI driver's node plugin on the node", fmt.Sprintf("kubectl get csinode %s -o yaml; kubectl get pods -A -o wide --field-selector spec.nodeName=%s | grep -i csi", pod.Spec.NodeName, pod.Spec.NodeName), "none: read-only"),
			step("Restore the CSI node plugin (its DaemonSet pod on that node); the kubelet then unmounts and removes the pod", "", "none"),
			forceDelete(pod, "the volume stays mounted on the node; a ReadWriteOnce volume cannot attach elsewhere and the data may be corrupted if it is written from two places")))
	}
	return causes
}

// volumesCheck is the "volumes unmounted" line of the checklist.
func volumesCheck(pod *corev1.Pod, vols []podVolume, known bool) report.Check {
	ch := report.Check{Name: "volumes unmounted"}
	var mounted []string
	for _, v := range vols {
		if v.inUse {
			mounted = append(mounted, v.name+" ("+v.uniqueName+")")
		}
	}
	switch {
	case !known:
		ch.Status, ch.Detail = report.Unknown, "checked once the kubelet has stopped the containers"
	case len(mounted) > 0:
		ch.Status, ch.Detail = report.Fail, "in node.status.volumesInUse: "+strings.Join(mounted, ", ")
	case len(vols) == 0:
		ch.Status, ch.Detail = report.Pass, "no CSI persistent volume"
	default:
		ch.Status, ch.Detail = report.Pass, fmt.Sprintf("none of %d CSI volume(s) in node %s's status.volumesInUse", len(vols), pod.Spec.NodeName)
	}
	return ch
}
