package diagnose

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

const uniqueVol = "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc"

// stateCWithVolume: a pod in state C whose claim leads to a CSI volume,
// listed in volumesInUse or not, on a node where the driver is registered or not.
func stateCWithVolume(inUse, registered bool) *snapshot.Snapshot {
	p := stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	n := node("node-1", corev1.ConditionTrue)
	if inUse {
		n.Status.VolumesInUse = []corev1.UniqueVolumeName{uniqueVol}
	}
	s := snap(p, n, lease("node-1", 5*time.Second))
	s.Volumes.Claims["shop/data-web-0"] = &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	s.Volumes.PersistentVolumes["pv-1"] = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0abc"}}}}
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if registered {
		csi.Spec.Drivers = []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", NodeID: "i-1"}}
	}
	s.Volumes.CSINodes["node-1"] = csi
	return s
}

func TestVolumeRules(t *testing.T) {
	cases := []struct {
		name      string
		s         *snapshot.Snapshot
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

func TestVolumesUnknownBeforeStateC(t *testing.T) {
	p := terminatingPod(10*time.Minute, 30)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
	it := Diagnose(healthySnap(p)).Items[0]
	if !slices.ContainsFunc(it.Checks, func(c report.Check) bool { return c.Name == "volumes unmounted" && c.Status == report.Unknown }) {
		t.Errorf("checks: %+v", it.Checks)
	}
}
