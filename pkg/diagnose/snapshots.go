package diagnose

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// The CSI snapshot-controller protects the source of an operation in
// progress (kubernetes-csi/external-snapshotter): a claim while a
// VolumeSnapshot taken from it is not ready to use
// (pvc-as-source-protection), a VolumeSnapshot while a claim restored from
// it is still Pending (volumesnapshot-as-source-protection). The controller
// is alive and waiting; what holds the deletion is the other object, named
// here with what it says.

const (
	claimSourceFinalizer    = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
	snapshotSourceFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"
	snapshotGroup           = "snapshot.storage.k8s.io"
)

func snapshotSourceCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	switch f.name {
	case claimSourceFinalizer:
		return claimSnapshotted(s, t, f, tm)
	case snapshotSourceFinalizer:
		return snapshotRestoring(s, t, f, tm)
	}
	return nil
}

// claimSnapshotted: the snapshots still being taken from the claim.
func claimSnapshotted(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	snaps, found := s.VolumeSnapshots[t.Ref.Namespace]
	if !found {
		return nil
	}
	var taking []observed.VolumeSnapshot
	var failed *observed.VolumeSnapshot
	var failure string // what the failed snapshot, or the snapshot-controller about it, says
	evidence := []report.Fact{report.Noted(fmt.Sprintf("finalizer %s: removed by the CSI snapshot-controller once no VolumeSnapshot taken from the claim is still in progress", f.name))}
	for i, v := range snaps {
		if v.SourceClaim != t.Ref.Name || (v.ReadyToUse != nil && *v.ReadyToUse) {
			continue
		}
		taking = append(taking, v)
		evidence = append(evidence, report.Noted(describeSnapshot(v)))
		said := eventComplaints(s, v.UID, nil)
		for _, c := range said {
			evidence = append(evidence, ofObject(snapshotRef(v), "volumesnapshot "+v.Name+": ", c.evidence))
		}
		switch {
		case failed != nil:
		case v.Error != "":
			failed, failure = &snaps[i], v.Error
		case len(said) > 0:
			failed, failure = &snaps[i], said[0].reason+": "+said[0].message
		}
	}
	if len(taking) == 0 {
		return nil // none in progress: the controller should release the claim
	}
	first := taking[0]
	sev, confidence := settling(report.Warning, tm), 0.6
	summary := fmt.Sprintf("VolumeSnapshot %s is still being taken from the claim (not ready to use): the snapshot-controller keeps the claim until it is", first.Name)
	if failed != nil {
		first = *failed
		sev, confidence = settling(report.Critical, tm), 0.85
		summary = fmt.Sprintf("VolumeSnapshot %s, taken from the claim, cannot finish: %s", first.Name, failure)
	}
	c := cause(catalog.SnapshotSourceInUse, sev, confidence, summary, evidence,
		step(catalog.SnapshotSourceInUse, "read-snapshot", kubectlOn(first.Namespace, "describe", "volumesnapshot", first.Name)),
		step(catalog.SnapshotSourceInUse, "fix-snapshot", ""),
		step(catalog.SnapshotSourceInUse, "delete-snapshot", kubectlOn(first.Namespace, "delete", "volumesnapshot", first.Name), "snapshot", first.Name),
		step(catalog.SnapshotSourceInUse, "never-remove-pvc-protection", "", "finalizer", f.name))
	var refs []report.ObjectRef
	for _, v := range taking {
		refs = append(refs, snapshotRef(v))
	}
	return []report.Cause{heldByOthers(c, snapshotRef(first), refs)}
}

func snapshotRef(v observed.VolumeSnapshot) report.ObjectRef {
	return report.ObjectRef{APIVersion: snapshotGroup + "/v1", Kind: "VolumeSnapshot", Resource: "volumesnapshots." + snapshotGroup, Namespace: v.Namespace, Name: v.Name, UID: string(v.UID)}
}

// heldByOthers lists the objects that hold the target without being
// targets in blockedBy (JSON carries every one), with no diagnosis of their
// own (their words are in the cause's evidence); the cause is about the one
// its summary names.
func heldByOthers(c report.Cause, named report.ObjectRef, all []report.ObjectRef) report.Cause {
	for _, ref := range all {
		c.BlockedBy = append(c.BlockedBy, report.Item{Object: ref, Causes: []report.Cause{}})
	}
	c.About.Object = &named
	return c
}

// snapshotRestoring: the claims still being restored from the snapshot.
func snapshotRestoring(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	claims, found := s.NamespaceClaims[t.Ref.Namespace]
	if !found {
		return nil
	}
	var restoring []corev1.PersistentVolumeClaim
	for _, c := range claims {
		if c.Status.Phase == corev1.ClaimPending && restoresFrom(c, t.Ref.Name) {
			restoring = append(restoring, c)
		}
	}
	if len(restoring) == 0 {
		return nil
	}
	evidence := []report.Fact{report.Noted(fmt.Sprintf("finalizer %s: removed by the CSI snapshot-controller once no claim is being restored from the snapshot", f.name))}
	var names []string
	var failing *corev1.PersistentVolumeClaim
	var failure complaint
	for i, c := range restoring {
		names = append(names, c.Name)
		line := fmt.Sprintf("persistentvolumeclaim %s: status.phase Pending, restored from this snapshot (storageClassName %s)", c.Name, deref(c.Spec.StorageClassName))
		for _, cond := range c.Status.Conditions {
			line += fmt.Sprintf("; condition %s=%s %s %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
		evidence = append(evidence, report.Fact{Text: line, Object: ptr(claimRef(c))})
		said := eventComplaints(s, c.UID, nil)
		for _, w := range said {
			evidence = append(evidence, ofObject(claimRef(c), "persistentvolumeclaim "+c.Name+": ", w.evidence))
		}
		if failing == nil && len(said) > 0 {
			failing, failure = &restoring[i], said[0]
		}
	}
	first := restoring[0]
	sev, confidence := settling(report.Warning, tm), 0.7
	summary := fmt.Sprintf("%s %s %s still being restored from the snapshot (Pending): the snapshot-controller keeps the snapshot until %s provisioned", agree(len(names), "claim", "claims"), strings.Join(names, ", "), agree(len(names), "is", "are"), agree(len(names), "it is", "they are"))
	if failing != nil {
		first = *failing
		sev, confidence = settling(report.Critical, tm), 0.85
		summary = fmt.Sprintf("claim %s, restored from the snapshot, cannot be provisioned: %s: %s", first.Name, failure.reason, failure.message)
	}
	c := cause(catalog.SnapshotSourceInUse, sev, confidence, summary,
		evidence,
		step(catalog.SnapshotSourceInUse, "read-claim", kubectlOn(first.Namespace, "describe", "persistentvolumeclaim", first.Name)),
		step(catalog.SnapshotSourceInUse, "fix-claim", ""),
		step(catalog.SnapshotSourceInUse, "delete-claim", kubectlOn(first.Namespace, "delete", "persistentvolumeclaim", first.Name), "claim", first.Name),
		step(catalog.SnapshotSourceInUse, "never-remove-snapshot-protection", "", "finalizer", f.name))
	var refs []report.ObjectRef
	for _, r := range restoring {
		refs = append(refs, claimRef(r))
	}
	return []report.Cause{heldByOthers(c, claimRef(first), refs)}
}

func claimRef(c corev1.PersistentVolumeClaim) report.ObjectRef {
	return report.ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID)}
}

// restoresFrom: the claim's dataSource or dataSourceRef is the VolumeSnapshot.
func restoresFrom(c corev1.PersistentVolumeClaim, snap string) bool {
	if ds := c.Spec.DataSource; ds != nil && ds.Kind == "VolumeSnapshot" && ds.Name == snap && deref(ds.APIGroup) == snapshotGroup {
		return true
	}
	ref := c.Spec.DataSourceRef
	return ref != nil && ref.Kind == "VolumeSnapshot" && ref.Name == snap && deref(ref.APIGroup) == snapshotGroup && (ref.Namespace == nil || *ref.Namespace == c.Namespace)
}

func describeSnapshot(v observed.VolumeSnapshot) string {
	ready := "unset"
	if v.ReadyToUse != nil {
		ready = fmt.Sprint(*v.ReadyToUse)
	}
	line := fmt.Sprintf("volumesnapshot %s: spec.source.persistentVolumeClaimName %s, volumeSnapshotClassName %q, status.readyToUse %s", v.Name, v.SourceClaim, v.Class, ready)
	if v.Error != "" {
		line += ", status.error: " + v.Error
	}
	if v.Deleted {
		line += ", being deleted"
	}
	return line
}
