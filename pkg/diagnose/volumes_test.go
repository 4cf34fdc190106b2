package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const uniqueVol = "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc"

// stateCWithVolume: a pod in state C whose claim leads to a CSI volume,
// listed in volumesInUse or not, on a node where the driver is registered or not.
func stateCWithVolume(inUse, registered bool) *observed.Snapshot {
	p := stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	n := node("node-1", corev1.ConditionTrue)
	if inUse {
		n.Status.VolumesInUse = []corev1.UniqueVolumeName{uniqueVol}
	}
	s := snap(p, n, lease("node-1", 5*time.Second))
	s.Volumes.Claims[key("shop/data-web-0")] = &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	s.Volumes.PersistentVolumes["pv-1"] = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0abc"}}}}
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if registered {
		csi.Spec.Drivers = []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", NodeID: "i-1"}}
	}
	s.Volumes.CSINodes["node-1"] = csi
	s.Volumes.CSIDrivers = map[string]*storagev1.CSIDriver{} // read: no CSIDriver object, so attach is required
	return s
}

func TestVolumeRules(t *testing.T) {
	cases := []struct {
		name      string
		s         *observed.Snapshot
		codes     []string
		severity  report.Severity
		evidence  string
		checkWant report.CheckStatus
	}{
		{"CSI driver not registered on the node: cannot unmount", stateCWithVolume(true, false),
			[]string{"VolumeTeardownPending"}, report.Critical, "csinode node-1: spec.drivers does not list ebs.csi.aws.com", report.Fail},
		{"driver registered, volume still in use", stateCWithVolume(true, true),
			[]string{"VolumeTeardownPending", "CgroupCleanupPending"}, report.Warning, "status.volumesInUse lists " + uniqueVol, report.Fail},
		{"volume unmounted", stateCWithVolume(false, false),
			[]string{"CgroupCleanupPending"}, report.Warning, "", report.Pass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(tc.s).Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
			expectCheck(t, it, "volumes unmounted", tc.checkWant)
		})
	}
}

// The check's detail counts the attachable volumes the node no longer lists,
// in a phrase that agrees with their count.
func TestVolumesCheckCountsAttachableVolumes(t *testing.T) {
	p := terminatingPod(10*time.Minute, 30)
	p.Spec.NodeName = "node-1"
	for _, tc := range []struct {
		vols []podVolume
		want string
	}{
		{[]podVolume{{name: "data", state: mountGone}}, "the 1 attachable volume is not in node node-1's status.volumesInUse"},
		{[]podVolume{{name: "data", state: mountGone}, {name: "logs", state: mountGone}}, "none of 2 attachable volumes in node node-1's status.volumesInUse"},
	} {
		if ch := volumesCheck(p, tc.vols, true, false); ch.Status != report.Pass || ch.Detail != tc.want {
			t.Errorf("%d volumes: %s %q, want pass %q", len(tc.vols), ch.Status, ch.Detail, tc.want)
		}
	}
}

func TestVolumesUnknownBeforeStateC(t *testing.T) {
	p := terminatingPod(10*time.Minute, 30)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	it := Diagnose(healthySnap(p)).Items[0]
	if !slices.ContainsFunc(it.Checks, func(c report.Check) bool { return c.Name == "volumes unmounted" && c.Status == report.Unknown }) {
		t.Errorf("checks: %+v", it.Checks)
	}
}

// Class c: volumes whose unmount never shows in node.status.volumesInUse
// (network file systems, inline CSI volumes, CSI drivers that need no
// attach, in-tree PVs) make the row unknown, naming each, and a pod in
// state C with such volumes waits on them before its cgroup.
func TestVolumesInvisibleThroughTheAPI(t *testing.T) {
	nfs := corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.5", Path: "/exports/shared"}}}
	iscsi := corev1.Volume{Name: "lun", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.6:3260", IQN: "iqn.2001-04.com.example:storage.disk1", Lun: 2}}}
	cephfs := corev1.Volume{Name: "ceph", VolumeSource: corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"10.0.0.7:6789", "10.0.0.8:6789"}, Path: "/vols/a"}}}
	inlineCSI := corev1.Volume{Name: "secrets-store", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}}
	// Directories, not mounts: nothing to unmount.
	local := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}}
	// Mounted by the kubelet on the node: a busy one blocks like a network one.
	cfg := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
	claimed := func(pvSource corev1.PersistentVolumeSource, drivers map[string]*storagev1.CSIDriver) func(*observed.Snapshot, *corev1.Pod) {
		return func(s *observed.Snapshot, p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
			s.Volumes.Claims[key("shop/web-0-data")] = &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-9"}}
			s.Volumes.PersistentVolumes["pv-9"] = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-9"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: pvSource}}
			s.Volumes.CSIDrivers = drivers
		}
	}
	no := false
	cases := []struct {
		name    string
		volumes []corev1.Volume
		extra   func(*observed.Snapshot, *corev1.Pod)
		inUse   []corev1.UniqueVolumeName
		code    string // top cause
		check   report.CheckStatus
		names   []string // in the check and the top cause
	}{
		{"inline nfs", []corev1.Volume{nfs}, nil, nil, "VolumeTeardownPending", report.Unknown, []string{"server 10.0.0.5, path /exports/shared"}},
		{"inline iscsi and cephfs", []corev1.Volume{iscsi, cephfs}, nil, nil, "VolumeTeardownPending", report.Unknown,
			[]string{"portal 10.0.0.6:3260, iqn iqn.2001-04.com.example:storage.disk1, lun 2", "monitors 10.0.0.7:6789,10.0.0.8:6789, path /vols/a"}},
		{"inline iscsi still listed by the kubelet", []corev1.Volume{iscsi}, nil,
			[]corev1.UniqueVolumeName{"kubernetes.io/iscsi/10.0.0.6:3260:iqn.2001-04.com.example:storage.disk1"}, "VolumeTeardownPending", report.Fail, []string{"lun"}},
		{"inline CSI ephemeral volume", []corev1.Volume{inlineCSI}, nil, nil, "VolumeTeardownPending", report.Unknown, []string{"driver secrets-store.csi.k8s.io"}},
		{"generic ephemeral volume on an NFS PV", nil, claimed(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nas.example", Path: "/pv9"}}, map[string]*storagev1.CSIDriver{}),
			nil, "VolumeTeardownPending", report.Unknown, []string{"claim shop/web-0-data -> persistentvolume pv-9 (nfs: server nas.example, path /pv9)"}},
		{"generic ephemeral volume on an RBD PV", nil, claimed(corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.9:6789"}, RBDPool: "kube", RBDImage: "img-9"}}, map[string]*storagev1.CSIDriver{}),
			nil, "VolumeTeardownPending", report.Unknown, []string{"(rbd: monitors 10.0.0.9:6789, pool kube, image img-9)"}},
		{"CSI driver that needs no attach", nil, claimed(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "nfs.csi.k8s.io", VolumeHandle: "nas#pv9"}},
			map[string]*storagev1.CSIDriver{"nfs.csi.k8s.io": {Spec: storagev1.CSIDriverSpec{AttachRequired: &no}}}),
			nil, "VolumeTeardownPending", report.Unknown, []string{"attachRequired is false"}},
		{"directories only (emptyDir on disk, hostPath)", nil, nil, nil, "CgroupCleanupPending", report.Pass, nil},
		{"a configMap and an emptyDir in memory, mounted by the kubelet", []corev1.Volume{cfg, scratch}, nil, nil, "VolumeTeardownPending", report.Unknown,
			[]string{"cfg (configMap, a tmpfs the kubelet mounts on the node)", "scratch (emptyDir (medium Memory), a tmpfs the kubelet mounts on the node)", "target is busy"}},
		{"a network volume and a configMap", []corev1.Volume{nfs, cfg}, nil, nil, "VolumeTeardownPending", report.Unknown, []string{"server 10.0.0.5", "cfg (configMap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := stopped(terminatingPod(10*time.Minute, 30), corev1.PodSucceeded)
			p.Spec.Volumes = append(slices.Clone(local), tc.volumes...)
			n := node("node-1", corev1.ConditionTrue)
			n.Status.VolumesInUse = tc.inUse
			s := snap(p, n, lease("node-1", 5*time.Second))
			s.Volumes.CSINodes["node-1"] = &storagev1.CSINode{}
			if tc.extra != nil {
				tc.extra(s, p)
			}
			it := Diagnose(s).Items[0]
			if codes(it)[0] != tc.code || it.Causes[len(it.Causes)-1].Code != "CgroupCleanupPending" {
				t.Fatalf("codes %v, want %s first and CgroupCleanupPending last", codes(it), tc.code)
			}
			expectCheck(t, it, "volumes unmounted", tc.check)
			text := it.Causes[0].Summary
			for _, c := range it.Checks {
				if c.Name == "volumes unmounted" {
					text += c.Detail
				}
			}
			for _, name := range tc.names {
				if !strings.Contains(text, name) {
					t.Errorf("%q not named in %q", name, text)
				}
			}
		})
	}
}
