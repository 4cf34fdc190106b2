package collect

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "volume snapshots", after: nesting, read: (*Collector).readSnapshotSources,
		permissions: []Permission{
			{Read: "`list` volumesnapshots (`snapshot.storage.k8s.io`) in the namespace of a claim held by `pvc-as-source-protection`; `list` persistentvolumeclaims in the namespace of a VolumeSnapshot held by `volumesnapshot-as-source-protection`", UsedFor: "`SnapshotSourceInUse`: the snapshot still being taken from the claim, the claim still being restored from the snapshot", Without: "the generic `FinalizerPending`; `skipped` names the read"},
		}})
}

// volumeSnapshots is read through the dynamic client: the API is a CRD of
// the CSI external-snapshotter, served only where it is installed.
var volumeSnapshots = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}

// readSnapshotSources reads, for targets held by the CSI snapshotter's
// source protections, what holds them: the VolumeSnapshots of a held claim's
// namespace, the claims of a held snapshot's namespace; one list each per
// namespace.
func (c *Collector) readSnapshotSources(ctx context.Context, s *observed.Snapshot) {
	var snapNS, claimNS []string
	for _, t := range c.needing(s, diagnose.SnapshotEvidence) {
		list := &claimNS
		if t.Ref.Kind == "PersistentVolumeClaim" {
			list = &snapNS
		}
		if !slices.Contains(*list, t.Ref.Namespace) {
			*list = append(*list, t.Ref.Namespace)
		}
	}
	if len(snapNS) > 0 {
		s.VolumeSnapshots = map[string][]observed.VolumeSnapshot{}
	}
	for _, ns := range snapNS {
		items, err := listAll[unstructured.Unstructured](ctx, metav1.ListOptions{}, pages(c.Clients.Dynamic.Resource(volumeSnapshots).Namespace(ns).List))
		switch {
		case apierrors.IsNotFound(err):
			s.VolumeSnapshots[ns] = []observed.VolumeSnapshot{} // not served: no snapshot holds anything
		case err != nil:
			c.Skip(skipOf("volumesnapshots in "+ns, err))
		default:
			for i := range items {
				s.VolumeSnapshots[ns] = append(s.VolumeSnapshots[ns], volumeSnapshotOf(&items[i]))
			}
			if s.VolumeSnapshots[ns] == nil {
				s.VolumeSnapshots[ns] = []observed.VolumeSnapshot{}
			}
		}
	}
	if len(claimNS) > 0 {
		s.NamespaceClaims = map[string][]corev1.PersistentVolumeClaim{}
	}
	for _, ns := range claimNS {
		claims, err := listAll[corev1.PersistentVolumeClaim](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.CoreV1().PersistentVolumeClaims(ns).List))
		if err != nil {
			c.Skip(skipOf("persistentvolumeclaims in "+ns, err))
			continue
		}
		s.NamespaceClaims[ns] = claims
	}
	c.readBlockerEvents(ctx, s, append(snapNS, claimNS...))
}

// readBlockerEvents reads what the snapshot-controller and the provisioner
// say about the snapshots and claims read (SnapshotCreationFailed,
// ProvisioningFailed...): one event list per namespace, kept by the UID of
// the object they are about, for those objects only (in their own map: the
// targets' events are read at the same time).
func (c *Collector) readBlockerEvents(ctx context.Context, s *observed.Snapshot, namespaces []string) {
	slices.Sort(namespaces)
	uids := map[types.UID]bool{}
	var with []string // the namespaces that hold such objects
	for _, ns := range slices.Compact(namespaces) {
		held := len(uids)
		for _, v := range s.VolumeSnapshots[ns] {
			uids[v.UID] = true
		}
		for _, pvc := range s.NamespaceClaims[ns] {
			uids[pvc.UID] = true
		}
		if len(uids) > held {
			with = append(with, ns)
		}
	}
	all, errs := c.eventsOfNamespaces(ctx, with)
	for i, ns := range with {
		if errs[i] != nil {
			c.Skip(skipOf("events in "+ns, errs[i]))
			continue
		}
		for uid, events := range all[i] {
			if uids[uid] {
				if s.BlockerEvents == nil {
					s.BlockerEvents = map[types.UID][]corev1.Event{}
				}
				s.BlockerEvents[uid] = events
			}
		}
	}
}

func volumeSnapshotOf(u *unstructured.Unstructured) observed.VolumeSnapshot {
	str := func(fields ...string) string { v, _, _ := unstructured.NestedString(u.Object, fields...); return v }
	v := observed.VolumeSnapshot{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), SourceClaim: str("spec", "source", "persistentVolumeClaimName"),
		Class: str("spec", "volumeSnapshotClassName"), Error: str("status", "error", "message"), Deleted: u.GetDeletionTimestamp() != nil}
	if ready, found, _ := unstructured.NestedBool(u.Object, "status", "readyToUse"); found {
		v.ReadyToUse = &ready
	}
	return v
}
