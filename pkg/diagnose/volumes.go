package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// csiPluginName prefixes the unique names of CSI volumes in
// node.status.volumesInUse: kubernetes.io/csi/<driver>^<volumeHandle>.
const csiPluginName = "kubernetes.io/csi"

// mountState is what the API shows of a volume's unmount. The kubelet lists
// only attachable volumes in node.status.volumesInUse, so a volume of any
// other kind (NFS, CephFS, a CSI driver with attachRequired false, an inline
// CSI volume...) leaves no trace there nor in events: it is invisible.
type mountState int

const (
	mountGone      mountState = iota // attachable and no longer in volumesInUse
	mountInUse                       // listed in volumesInUse
	mountInvisible                   // its unmount cannot be seen through the API
)

// podVolume is one volume of a pod that the kubelet must unmount: from
// outside the node (a network or attached volume), or one it mounts itself
// on the node (local: a tmpfs for a secret, configMap, projected or
// downwardAPI volume, or an emptyDir in memory). An emptyDir on disk and a
// hostPath are plain directories, never mounts: they are left out.
type podVolume struct {
	name        string
	local       bool
	source      string // what it is, with the server, portal or handle
	driver      string // CSI driver, when it is one
	uniqueName  string // the volumesInUse entry, when known
	state       mountState
	registered  *bool // CSI driver in the node's CSINode; nil: not read
	detachError string
}

// podVolumesOf follows each volume of the pod to what the kubelet mounts.
// It returns false when the chain could not be read (not in state C, or
// forbidden).
func podVolumesOf(s *observed.Snapshot, pod *corev1.Pod) ([]podVolume, bool) {
	var out []podVolume
	node := s.Nodes[pod.Spec.NodeName]
	var inUse []corev1.UniqueVolumeName
	if node != nil {
		inUse = node.Status.VolumesInUse
	}
	csiNode, csiNodeRead := s.Volumes.CSINodes[pod.Spec.NodeName]
	for _, vol := range pod.Spec.Volumes {
		claim := observed.VolumeClaim(pod, vol)
		if claim == "" {
			if v, ok := inlineVolume(vol); ok {
				out = append(out, v)
			}
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: claim}
		pvc, read := s.Volumes.Claims[key]
		if !read {
			return nil, false
		}
		var pv *corev1.PersistentVolume
		if pvc != nil {
			pv = s.Volumes.PersistentVolumes[pvc.Spec.VolumeName]
		}
		if pv == nil {
			continue // not bound: nothing was mounted
		}
		v, ok := persistentVolume(vol.Name, key.String(), pv, s.Volumes.CSIDrivers)
		if !ok {
			continue
		}
		for _, va := range s.Volumes.Attachments {
			if va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == pv.Name && va.Status.DetachError != nil {
				v.detachError = va.Status.DetachError.Message
			}
		}
		out = append(out, v)
	}
	for i := range out {
		v := &out[i]
		v.state = mountStateOf(inUse, node != nil, *v)
		if v.driver != "" && csiNodeRead {
			registered := csiNode != nil && slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == v.driver })
			v.registered = &registered
		}
	}
	return out, true
}

// mountStateOf says whether volumesInUse lists the volume: an attachable CSI
// volume by its exact unique name; an in-tree attachable disk, whose name
// the kubelet builds (migrated to CSI or not), by its volume ID at the end
// of an entry. Not listed proves nothing for the other kinds, nor when the
// node could not be read.
func mountStateOf(inUse []corev1.UniqueVolumeName, nodeRead bool, v podVolume) mountState {
	if !nodeRead {
		return mountInvisible
	}
	for _, u := range inUse {
		name := string(u)
		if v.state == mountGone && name == v.uniqueName {
			return mountInUse
		}
		if v.state == mountInvisible && v.uniqueName != "" &&
			(strings.HasSuffix(name, "/"+v.uniqueName) || strings.HasSuffix(name, "^"+v.uniqueName) || strings.HasSuffix(name, ":"+v.uniqueName)) {
			return mountInUse
		}
	}
	return v.state
}

// persistentVolume describes a bound PV as the kubelet mounts it; false for
// the kubelet-local kinds (hostPath, local).
func persistentVolume(name, claim string, pv *corev1.PersistentVolume, drivers map[string]*storagev1.CSIDriver) (podVolume, bool) {
	src := pv.Spec.PersistentVolumeSource
	v := podVolume{name: name}
	via := fmt.Sprintf("claim %s -> persistentvolume %s", claim, pv.Name)
	switch {
	case src.CSI != nil:
		v.driver = src.CSI.Driver
		v.source = fmt.Sprintf("%s (CSI driver %s, handle %s)", via, src.CSI.Driver, src.CSI.VolumeHandle)
		v.uniqueName = fmt.Sprintf("%s/%s^%s", csiPluginName, src.CSI.Driver, src.CSI.VolumeHandle)
		if attachable, known := csiAttachable(src.CSI.Driver, drivers); !attachable || !known {
			v.state = mountInvisible
			v.source += csiNotTracked(attachable, known)
			v.uniqueName = ""
		}
		return v, true
	case src.HostPath != nil, src.Local != nil:
		return v, false
	}
	n := pvNetworkSource(src)
	if n.kind == "" {
		n.kind, n.detail = "in-tree", "a volume type the plugin does not follow"
	}
	v.source, v.uniqueName, v.state = fmt.Sprintf("%s (%s: %s)", via, n.kind, n.detail), n.id, mountInvisible
	return v, true
}

// csiAttachable: the kubelet tracks a CSI volume in volumesInUse only when
// its driver requires attach (CSIDriver spec.attachRequired, true when the
// CSIDriver object is absent). known is false when the drivers were not read.
func csiAttachable(driver string, drivers map[string]*storagev1.CSIDriver) (attachable, known bool) {
	if drivers == nil {
		return false, false
	}
	d, ok := drivers[driver]
	if !ok || d == nil || d.Spec.AttachRequired == nil {
		return true, true
	}
	return *d.Spec.AttachRequired, true
}

func csiNotTracked(attachable, known bool) string {
	if !known {
		return "; its CSIDriver could not be read, so whether volumesInUse tracks it is unknown"
	}
	return "; the driver's attachRequired is false, so volumesInUse never lists it"
}

// inlineVolume describes a volume written in the pod spec; false for the
// kinds that are no mount of their own (an emptyDir on disk, hostPath,
// image).
func inlineVolume(vol corev1.Volume) (podVolume, bool) {
	v := podVolume{name: vol.Name, state: mountInvisible}
	if kind := localMount(vol.VolumeSource); kind != "" {
		v.local, v.source = true, kind+", a tmpfs the kubelet mounts on the node"
		return v, true
	}
	if c := vol.CSI; c != nil {
		v.driver = c.Driver
		v.source = fmt.Sprintf("inline CSI ephemeral volume (driver %s; inline volumes are never attached, so volumesInUse never lists them)", c.Driver)
		return v, true
	}
	if f := vol.FlexVolume; f != nil {
		v.source = fmt.Sprintf("flexVolume (driver %s)", f.Driver)
		return v, true
	}
	n := inlineNetworkSource(vol.VolumeSource)
	if n.kind == "" {
		return v, false
	}
	v.source, v.uniqueName = fmt.Sprintf("inline %s volume (%s)", n.kind, n.detail), n.id
	return v, true
}

// localMount names the kinds of volume the kubelet mounts on the node
// itself, as a tmpfs ("" for the others): its unmount fails while a
// process on the node holds a file or its working directory inside
// ("target is busy", no event; seen on a real node).
func localMount(src corev1.VolumeSource) string {
	switch {
	case src.Secret != nil:
		return "secret"
	case src.ConfigMap != nil:
		return "configMap"
	case src.Projected != nil:
		return "projected"
	case src.DownwardAPI != nil:
		return "downwardAPI"
	case src.EmptyDir != nil && src.EmptyDir.Medium != corev1.StorageMediumDefault:
		return fmt.Sprintf("emptyDir (medium %s)", src.EmptyDir.Medium)
	}
	return ""
}

// network is the part of an in-tree volume source that names its backend.
type network struct {
	kind, detail string
	id           string // an identifier volumesInUse would contain, for attachable disks
}

func inlineNetworkSource(src corev1.VolumeSource) network {
	switch {
	case src.NFS != nil:
		return network{"nfs", fmt.Sprintf("server %s, path %s", src.NFS.Server, src.NFS.Path), ""}
	case src.ISCSI != nil:
		return network{"iscsi", fmt.Sprintf("portal %s, iqn %s, lun %d", src.ISCSI.TargetPortal, src.ISCSI.IQN, src.ISCSI.Lun), src.ISCSI.IQN}
	case src.FC != nil:
		return network{"fc", fmt.Sprintf("wwns %s, lun %s, wwids %s", strings.Join(src.FC.TargetWWNs, ","), lun(src.FC.Lun), strings.Join(src.FC.WWIDs, ",")), firstOf(src.FC.TargetWWNs, src.FC.WWIDs)}
	case src.CephFS != nil:
		return network{"cephfs", fmt.Sprintf("monitors %s, path %s", strings.Join(src.CephFS.Monitors, ","), src.CephFS.Path), ""}
	case src.RBD != nil:
		return network{"rbd", fmt.Sprintf("monitors %s, pool %s, image %s", strings.Join(src.RBD.CephMonitors, ","), src.RBD.RBDPool, src.RBD.RBDImage), src.RBD.RBDImage}
	case src.Glusterfs != nil:
		return network{"glusterfs", "endpoints " + src.Glusterfs.EndpointsName + ", path " + src.Glusterfs.Path, ""}
	case src.AWSElasticBlockStore != nil:
		return network{"awsElasticBlockStore", "volume " + src.AWSElasticBlockStore.VolumeID, src.AWSElasticBlockStore.VolumeID}
	case src.GCEPersistentDisk != nil:
		return network{"gcePersistentDisk", "disk " + src.GCEPersistentDisk.PDName, src.GCEPersistentDisk.PDName}
	case src.AzureDisk != nil:
		return network{"azureDisk", "disk " + src.AzureDisk.DiskName, src.AzureDisk.DiskName}
	case src.AzureFile != nil:
		return network{"azureFile", "share " + src.AzureFile.ShareName, ""}
	case src.Cinder != nil:
		return network{"cinder", "volume " + src.Cinder.VolumeID, src.Cinder.VolumeID}
	case src.VsphereVolume != nil:
		return network{"vsphereVolume", "path " + src.VsphereVolume.VolumePath, src.VsphereVolume.VolumePath}
	case src.PortworxVolume != nil:
		return network{"portworxVolume", "volume " + src.PortworxVolume.VolumeID, src.PortworxVolume.VolumeID}
	case src.Quobyte != nil:
		return network{"quobyte", fmt.Sprintf("registry %s, volume %s", src.Quobyte.Registry, src.Quobyte.Volume), ""}
	case src.ScaleIO != nil:
		return network{"scaleIO", "gateway " + src.ScaleIO.Gateway + ", volume " + src.ScaleIO.VolumeName, ""}
	case src.StorageOS != nil:
		return network{"storageos", "volume " + src.StorageOS.VolumeName, ""}
	case src.PhotonPersistentDisk != nil:
		return network{"photonPersistentDisk", "disk " + src.PhotonPersistentDisk.PdID, src.PhotonPersistentDisk.PdID}
	case src.Flocker != nil:
		return network{"flocker", "dataset " + src.Flocker.DatasetName + src.Flocker.DatasetUUID, ""}
	}
	return network{}
}

// pvNetworkSource describes a PersistentVolume's in-tree source through its
// inline twin (the fields that name the backend are the same).
func pvNetworkSource(src corev1.PersistentVolumeSource) network {
	in := corev1.VolumeSource{NFS: src.NFS, FC: src.FC, AWSElasticBlockStore: src.AWSElasticBlockStore,
		GCEPersistentDisk: src.GCEPersistentDisk, AzureDisk: src.AzureDisk, VsphereVolume: src.VsphereVolume,
		PortworxVolume: src.PortworxVolume, Quobyte: src.Quobyte, PhotonPersistentDisk: src.PhotonPersistentDisk, Flocker: src.Flocker}
	switch {
	case src.ISCSI != nil:
		in.ISCSI = &corev1.ISCSIVolumeSource{TargetPortal: src.ISCSI.TargetPortal, IQN: src.ISCSI.IQN, Lun: src.ISCSI.Lun}
	case src.CephFS != nil:
		in.CephFS = &corev1.CephFSVolumeSource{Monitors: src.CephFS.Monitors, Path: src.CephFS.Path}
	case src.RBD != nil:
		in.RBD = &corev1.RBDVolumeSource{CephMonitors: src.RBD.CephMonitors, RBDPool: src.RBD.RBDPool, RBDImage: src.RBD.RBDImage}
	case src.Glusterfs != nil:
		in.Glusterfs = &corev1.GlusterfsVolumeSource{EndpointsName: src.Glusterfs.EndpointsName, Path: src.Glusterfs.Path}
	case src.Cinder != nil:
		in.Cinder = &corev1.CinderVolumeSource{VolumeID: src.Cinder.VolumeID}
	case src.AzureFile != nil:
		in.AzureFile = &corev1.AzureFileVolumeSource{ShareName: src.AzureFile.ShareName}
	case src.ScaleIO != nil:
		in.ScaleIO = &corev1.ScaleIOVolumeSource{Gateway: src.ScaleIO.Gateway, VolumeName: src.ScaleIO.VolumeName}
	case src.StorageOS != nil:
		in.StorageOS = &corev1.StorageOSVolumeSource{VolumeName: src.StorageOS.VolumeName}
	case src.FlexVolume != nil:
		return network{"flexVolume", "driver " + src.FlexVolume.Driver, ""}
	}
	return inlineNetworkSource(in)
}

func lun(l *int32) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprint(*l)
}

func firstOf(lists ...[]string) string {
	for _, l := range lists {
		if len(l) > 0 {
			return l[0]
		}
	}
	return ""
}

// volumeCauses explains volumes the kubelet has not unmounted yet: those
// volumesInUse still lists, then, when none is, those whose unmount the API
// cannot show.
func volumeCauses(pod *corev1.Pod, vols []podVolume, tm timing) []report.Cause {
	var causes []report.Cause
	var invisible []podVolume
	for _, v := range vols {
		switch v.state {
		case mountInUse:
			causes = append(causes, mountedCause(pod, v, tm))
		case mountInvisible:
			invisible = append(invisible, v)
		}
	}
	if len(causes) > 0 || len(invisible) == 0 {
		return causes
	}
	return []report.Cause{invisibleVolumesCause(pod, invisible, tm)}
}

func mountedCause(pod *corev1.Pod, v podVolume, tm timing) report.Cause {
	evidence := []report.Fact{
		report.FieldFact("spec.volumes["+v.name+"]", v.source),
		report.Noted(fmt.Sprintf("node %s: status.volumesInUse lists %s", pod.Spec.NodeName, v.uniqueName)),
	}
	sev, confidence := settling(report.Warning, tm), 0.45
	summary := fmt.Sprintf("volume %s is still mounted on %s: the kubelet removes the pod only after unmounting it", v.name, pod.Spec.NodeName)
	if v.registered != nil && !*v.registered {
		sev, confidence = report.Critical, 0.8
		summary = fmt.Sprintf("CSI driver %s is not registered on %s (its node plugin is not running), so the kubelet cannot unmount volume %s", v.driver, pod.Spec.NodeName, v.name)
		evidence = append(evidence, report.Noted(fmt.Sprintf("csinode %s: spec.drivers does not list %s", pod.Spec.NodeName, v.driver)))
	}
	if v.detachError != "" {
		evidence = append(evidence, report.Noted(fmt.Sprintf("volumeattachment of %s: status.detachError: %s", v.name, v.detachError)))
	}
	evidence = append(evidence, report.Noted("status.volumesInUse is per node: another pod on the node using the same volume keeps it listed"))
	if v.driver == "" {
		return cause(catalog.VolumeTeardownPending, sev, confidence, summary, evidence,
			mountsOnNode(catalog.VolumeTeardownPending, "check-mount", pod),
			step(catalog.VolumeTeardownPending, "restore-storage-path", ""),
			forceDelete(catalog.VolumeTeardownPending, "force-delete", pod))
	}
	return cause(catalog.VolumeTeardownPending, sev, confidence, summary, evidence,
		step(catalog.VolumeTeardownPending, "check-csi-plugin", then(kubectlOn("", "get", "csinode", pod.Spec.NodeName, "-o", "yaml"), onNode(pod.Spec.NodeName, "csi"))),
		step(catalog.VolumeTeardownPending, "restore-csi-plugin", ""),
		forceDelete(catalog.VolumeTeardownPending, "force-delete", pod))
}

// invisibleVolumesCause: everything the API shows is done, and the pod has
// volumes whose unmount leaves no trace in it (an NFS server gone hangs the
// unmount for ever, with no event). The likeliest wait, not a certainty.
func invisibleVolumesCause(pod *corev1.Pod, vols []podVolume, tm timing) report.Cause {
	var names []string
	var evidence []report.Fact
	for _, v := range vols {
		names = append(names, fmt.Sprintf("%s (%s)", v.name, v.source))
		evidence = append(evidence, report.FieldFact("spec.volumes["+v.name+"]", v.source))
		if v.registered != nil && !*v.registered {
			evidence = append(evidence, report.Noted(fmt.Sprintf("csinode %s: spec.drivers does not list %s: its node plugin cannot unmount", pod.Spec.NodeName, v.driver)))
		}
	}
	evidence = append(evidence,
		report.Noted(fmt.Sprintf("status.phase: %s and metadata.deletionGracePeriodSeconds: %d: the kubelet stopped the containers but has not sent its final DELETE", pod.Status.Phase, tm.grace)),
		report.Noted("node.status.volumesInUse lists only attachable volumes and unmount failures raise no event: these volumes' unmount is not visible through the API"))
	if !slices.ContainsFunc(vols, func(v podVolume) bool { return !v.local }) {
		return localVolumesCause(pod, names, evidence, tm)
	}
	return cause(catalog.VolumeTeardownPending, settling(report.Warning, tm), 0.5,
		fmt.Sprintf("the kubelet has not finished tearing down the pod, and its unmount of %s cannot be seen through the API: a network volume whose server is unreachable hangs the unmount with no event", strings.Join(names, ", ")),
		evidence,
		mountsOnNode(catalog.VolumeTeardownPending, "check-mounts", pod),
		step(catalog.VolumeTeardownPending, "restore-storage", ""),
		forceDelete(catalog.VolumeTeardownPending, "force-delete-hung", pod))
}

// localVolumesCause: the only volumes left are those the kubelet mounts on
// the node itself. Their unmount fails while a process on the node holds
// them, with no event and no trace in the API; the kubelet checks the
// volumes before the cgroup, so this ranks above CgroupCleanupPending.
func localVolumesCause(pod *corev1.Pod, names []string, evidence []report.Fact, tm timing) report.Cause {
	return cause(catalog.VolumeTeardownPending, settling(report.Warning, tm), 0.45,
		fmt.Sprintf("the kubelet has not finished tearing down the pod, and its unmount of %s cannot be seen through the API: a process on the node with a file open or its working directory inside keeps it busy (\"target is busy\"), with no event", strings.Join(names, ", ")),
		evidence,
		mountsOnNode(catalog.VolumeTeardownPending, "check-local-mounts", pod),
		onTheNode(pod.Spec.NodeName, step(catalog.VolumeTeardownPending, "find-mount-holders", pipe(command("findmnt", "-lno", "TARGET"), command("grep", string(pod.UID)), command("xargs", "-r", "-n1", "fuser", "-vm")))),
		forceDelete(catalog.VolumeTeardownPending, "force-delete-tmpfs", pod))
}

// volumesCheck is the "volumes unmounted" line of the checklist.
// finalSent: the kubelet's final DELETE went through, which it sends only
// once the volumes are unmounted.
func volumesCheck(pod *corev1.Pod, vols []podVolume, known, finalSent bool) report.Check {
	ch := report.Check{Name: "volumes unmounted"}
	var mounted, invisible []string
	tracked := 0
	for _, v := range vols {
		switch v.state {
		case mountInUse:
			mounted = append(mounted, v.name+" ("+v.uniqueName+")")
		case mountInvisible:
			invisible = append(invisible, v.name+": "+v.source)
		default:
			tracked++
		}
	}
	switch {
	case finalSent:
		ch.Status, ch.Detail = report.Pass, "the kubelet sent its final DELETE (metadata.deletionGracePeriodSeconds: 0), which it sends only once the pod's volumes are unmounted"
	case !known:
		ch.Status, ch.Detail = report.Unknown, "checked once the kubelet has stopped the containers"
	case len(mounted) > 0:
		ch.Status, ch.Detail = report.Fail, "in node.status.volumesInUse: "+strings.Join(mounted, ", ")
	case len(invisible) > 0:
		ch.Status, ch.Detail = report.Unknown, "not visible through the API (volumesInUse lists only attachable volumes): "+strings.Join(invisible, "; ")
	case len(vols) == 0:
		ch.Status, ch.Detail = report.Pass, "no volume the kubelet mounts (an emptyDir on disk and a hostPath are directories, not mounts)"
	default:
		ch.Status, ch.Detail = report.Pass, fmt.Sprintf("%s in node %s's status.volumesInUse", agree(tracked, "the 1 attachable volume is not", "none of "+report.Count(tracked, "attachable volume")), pod.Spec.NodeName)
	}
	return ch
}
