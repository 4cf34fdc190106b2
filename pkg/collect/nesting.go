package collect

// The sources that nest a target's blocking objects as targets of their own
// (objects.go reads them).
func init() {
	// After the namespace scans too: which targets need their dependents is
	// asked of every target (diagnose.Needs), a namespace's by its scan's
	// result, which the scan writes meanwhile (a data race, found by -race).
	register(source{name: "dependents", after: []string{"namespace contents"}, read: (*Collector).readDependents,
		permissions: []Permission{
			{Read: "`list` every type in an owner's namespace (metadata; every namespace for a cluster-scoped owner), then the pods among the dependents in full, their nodes and leases", UsedFor: "`preflight TYPE/NAME --cascade=foreground`: the dependents with `blockOwnerDeletion` the deletion would wait for, and theirs in turn, each forecast", Without: "`skipped` names the types (a partial forecast)"},
			{Read: "`list` every type in an owner's namespace (metadata)", UsedFor: "the dependents of an owner held by `foregroundDeletion` or `orphan`, or of a namespaced object held by a third-party finalizer (what it owns, nested)", Without: "the generic `FinalizerPending`; `skipped` names the types"},
		}})
	// After the namespace scans: a claim a namespace's scan finds held is
	// judged by its users too.
	register(source{name: "claim users", after: []string{"namespace contents"}, read: (*Collector).readClaimUsers,
		permissions: []Permission{
			{Read: "`get` persistentvolumeclaims, `list` pods in its namespace", UsedFor: "the pods that use a claim held by `pvc-protection`", Without: "the generic `FinalizerPending`"},
		}})
	register(source{name: "referrers", after: []string{"namespace contents"}, read: (*Collector).readReferrers,
		permissions: []Permission{
			{Read: "`list` the kinds an in-use protection finalizer's catalogue row names (`referencedBy` in pkg/catalog/finalizers.yaml, described in docs/finalizers.md's holds-while column: Gateways for a GatewayClass, NodeClaims for an EC2NodeClass, PersistentVolumes and PersistentVolumeClaims for a VolumeAttributesClass, Rook's dependents...), in the held object's namespace or all namespaces", UsedFor: "`ObjectInUse`: the objects that still name the held one", Without: "the generic `FinalizerPending`; `skipped` names the read"},
		}})
	register(source{name: "volume attachments", after: []string{"namespace contents", "dependents", "claim users"}, read: (*Collector).readVolumeAttachments,
		permissions: []Permission{
			{Read: "`list` leases in every namespace, by name (`external-attacher-leader-<driver>`)", UsedFor: "whether a CSI driver's external-attacher runs (its leader lease renewed), for a volume or VolumeAttachment still attached", Without: "`skipped` names the read; `VolumeDetachFailed` stays a warning"},
		}})
}
