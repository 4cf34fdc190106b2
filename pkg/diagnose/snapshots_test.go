package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// The CSI snapshotter's source protections: a claim held while a snapshot
// taken from it is not ready, a snapshot held while a claim restored from it
// is Pending; the report names the other object and what it says.
func TestSnapshotSourceInUse(t *testing.T) {
	yes, no := true, false
	group := "snapshot.storage.k8s.io"
	claim := func() *observed.Target {
		return heldObject("PersistentVolumeClaim", "persistentvolumeclaims", "data", 10*time.Minute, claimSourceFinalizer)
	}
	snap := func() *observed.Target {
		t := heldObject("VolumeSnapshot", "volumesnapshots.snapshot.storage.k8s.io", "nightly", 10*time.Minute, snapshotSourceFinalizer)
		t.Ref.APIVersion = "snapshot.storage.k8s.io/v1"
		return t
	}
	restoring := func(name string, phase corev1.PersistentVolumeClaimPhase, ref bool) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
		if ref {
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: "nightly"}
		} else {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: "nightly"}
		}
		return c
	}
	// What the snapshot-controller and the provisioner say about the blocker.
	warning := func(reason, msg string, age time.Duration) corev1.Event {
		return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg, Count: 3, LastTimestamp: metav1.NewTime(now.Add(-age))}
	}
	failingRestore := restoring("restore-3", corev1.ClaimPending, false)
	failingRestore.UID = "uid-restore-3"
	for _, tc := range []struct {
		name     string
		target   func() *observed.Target
		snaps    []observed.VolumeSnapshot
		claims   []corev1.PersistentVolumeClaim
		events   map[types.UID][]corev1.Event
		code     string
		severity report.Severity
		summary  string
	}{
		{"a snapshot whose controller reports a failure", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "nightly", UID: "uid-nightly", SourceClaim: "data", ReadyToUse: &no}}, nil,
			map[types.UID][]corev1.Event{"uid-nightly": {warning("SnapshotContentCreationFailed", "Failed to create snapshot content with error cannot find CSI PersistentVolumeSource for volume", time.Minute)}},
			"SnapshotSourceInUse", report.Critical, "VolumeSnapshot nightly, taken from the claim, cannot finish: SnapshotContentCreationFailed: Failed to create snapshot content"},
		{"a snapshot with only an old warning", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "nightly", UID: "uid-nightly", SourceClaim: "data", ReadyToUse: &no}}, nil,
			map[types.UID][]corev1.Event{"uid-nightly": {warning("SnapshotCreationFailed", "old news", 3*time.Hour)}},
			"SnapshotSourceInUse", report.Warning, "VolumeSnapshot nightly is still being taken from the claim"},
		{"a restore the provisioner cannot make", snap, nil, []corev1.PersistentVolumeClaim{failingRestore},
			map[types.UID][]corev1.Event{"uid-restore-3": {warning("ProvisioningFailed", "failed to provision volume with StorageClass \"fast\": rpc error: code = ResourceExhausted", time.Minute)}},
			"SnapshotSourceInUse", report.Critical, "claim restore-3, restored from the snapshot, cannot be provisioned: ProvisioningFailed: failed to provision volume"},
		{"a snapshot still being taken", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "nightly", SourceClaim: "data"}}, nil, nil,
			"SnapshotSourceInUse", report.Warning, "VolumeSnapshot nightly is still being taken from the claim"},
		{"a snapshot that fails", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "ok", SourceClaim: "data", ReadyToUse: &no},
			{Namespace: "shop", Name: "nightly", SourceClaim: "data", ReadyToUse: &no, Error: "VolumeSnapshotClass \"fast\" not found"}}, nil, nil,
			"SnapshotSourceInUse", report.Critical, "VolumeSnapshot nightly, taken from the claim, cannot finish: VolumeSnapshotClass \"fast\" not found"},
		{"a ready snapshot holds nothing", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "nightly", SourceClaim: "data", ReadyToUse: &yes}}, nil, nil,
			"FinalizerPending", report.Warning, claimSourceFinalizer},
		{"a snapshot of another claim", claim, []observed.VolumeSnapshot{{Namespace: "shop", Name: "nightly", SourceClaim: "logs"}}, nil, nil,
			"FinalizerPending", report.Warning, claimSourceFinalizer},
		{"snapshots not read", claim, nil, nil, nil, "FinalizerPending", report.Warning, claimSourceFinalizer},
		{"a claim restored from the snapshot", snap, nil, []corev1.PersistentVolumeClaim{restoring("restore-1", corev1.ClaimPending, false)}, nil,
			"SnapshotSourceInUse", report.Warning, "claim restore-1 is still being restored from the snapshot (Pending): the snapshot-controller keeps the snapshot until it is provisioned"},
		{"through dataSourceRef", snap, nil, []corev1.PersistentVolumeClaim{restoring("restore-2", corev1.ClaimPending, true)}, nil,
			"SnapshotSourceInUse", report.Warning, "restore-2"},
		{"a restored claim, bound", snap, nil, []corev1.PersistentVolumeClaim{restoring("restore-1", corev1.ClaimBound, false)}, nil,
			"FinalizerPending", report.Warning, snapshotSourceFinalizer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapOf(tc.target())
			if tc.snaps != nil {
				s.VolumeSnapshots = map[string][]observed.VolumeSnapshot{"shop": tc.snaps}
			}
			if tc.claims != nil {
				s.NamespaceClaims = map[string][]corev1.PersistentVolumeClaim{"shop": tc.claims}
			}
			s.BlockerEvents = tc.events
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if c.Code != tc.code || c.Severity != tc.severity || !strings.Contains(c.Summary, tc.summary) {
				t.Errorf("%s %s: %s; want %s %s saying %q", c.Code, c.Severity, c.Summary, tc.code, tc.severity, tc.summary)
			}
			// Every snapshot or claim that holds it is a blocker (JSON carries
			// them all); the one the summary names is what the cause is about.
			if c.Code == "SnapshotSourceInUse" {
				var blockers []string
				for _, b := range c.BlockedBy {
					blockers = append(blockers, b.Object.Kind+"/"+b.Object.Name)
				}
				want := len(tc.snaps) + len(tc.claims)
				if len(blockers) != want || c.About.Object == nil || !strings.Contains(c.Summary, c.About.Object.Name) {
					t.Errorf("blockers %v (want %d), about %+v", blockers, want, c.About.Object)
				}
			}
			expectGradedSteps(t, it)
		})
	}
}
