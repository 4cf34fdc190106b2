// Package catalog is the table of cause codes: the public contract runbooks
// match on. A code, once shipped, keeps its name; docs/causes.md has an entry
// for each (TestEveryCodeIsDocumented).
package catalog

import (
	"sort"
)

// Code is a stable cause code.
type Code string

// The cause codes. Keep in step with docs/causes.md.
const (
	WithinGracePeriod            Code = "WithinGracePeriod"
	GracePeriodOverrun           Code = "GracePeriodOverrun"
	NegativeGracePeriod          Code = "NegativeGracePeriod"
	NodeUnreachable              Code = "NodeUnreachable"
	NodeNotReady                 Code = "NodeNotReady"
	NodeNotFound                 Code = "NodeNotFound"
	ContainerKillFailed          Code = "ContainerKillFailed"
	ContainersStillRunning       Code = "ContainersStillRunning"
	SandboxTeardownFailed        Code = "SandboxTeardownFailed"
	VolumeTeardownPending        Code = "VolumeTeardownPending"
	ResourceClaimCleanupPending  Code = "ResourceClaimCleanupPending"
	CgroupCleanupPending         Code = "CgroupCleanupPending"
	AdmissionWebhookDenied       Code = "AdmissionWebhookDenied"
	AdmissionPolicyDenied        Code = "AdmissionPolicyDenied"
	MirrorPodKubeletNotSyncing   Code = "MirrorPodKubeletNotSyncing"
	FinalizerPending             Code = "FinalizerPending"
	ForegroundDeletionBlocked    Code = "ForegroundDeletionBlocked"
	PVCInUse                     Code = "PVCInUse"
	PVBound                      Code = "PVBound"
	VolumeDetachFailed           Code = "VolumeDetachFailed"
	VolumeDeleteFailed           Code = "VolumeDeleteFailed"
	LoadBalancerCleanupPending   Code = "LoadBalancerCleanupPending"
	CRDInstancesRemaining        Code = "CRDInstancesRemaining"
	ConversionWebhookFailing     Code = "ConversionWebhookFailing"
	APIServiceUnavailable        Code = "APIServiceUnavailable"
	NamespaceDiscoveryFailure    Code = "NamespaceDiscoveryFailure"
	NamespaceContentFailure      Code = "NamespaceContentFailure"
	NamespaceContentRemaining    Code = "NamespaceContentRemaining"
	NamespaceFinalizersRemaining Code = "NamespaceFinalizersRemaining"
	PodStuckTerminating          Code = "PodStuckTerminating"
	NamespaceControllerInactive  Code = "NamespaceControllerInactive"
	// KubeletNoLongerManagesPod: the pod's kubelet (--kubelet) reports
	// nothing of a pod the API still has: no status, no final DELETE will come.
	KubeletNoLongerManagesPod Code = "KubeletNoLongerManagesPod"
	// NodeDrainBlocked: a node (or the Machine or NodeClaim that drains it)
	// is held by a drain finalizer, and pods on it cannot be evicted.
	NodeDrainBlocked Code = "NodeDrainBlocked"
	// SnapshotSourceInUse: a claim or snapshot is held by the CSI
	// snapshotter's protection finalizer while a snapshot is being taken
	// from it, or a claim restored from it.
	SnapshotSourceInUse Code = "SnapshotSourceInUse"
	// DiagnosisIncomplete is the tool's own code: the object is past its
	// deadline but no rule explains why (or the evidence could not be read).
	DiagnosisIncomplete Code = "DiagnosisIncomplete"
)

// Entry describes a code.
type Entry struct {
	// Title is a few words for tables and docs.
	Title string
	// Depth orders coexisting causes of equal severity: a lower depth is
	// closer to the root cause (a dead node explains running containers).
	Depth int
}

var entries = map[Code]Entry{
	NodeNotFound:                 {"node object is gone", 10},
	NodeUnreachable:              {"node stopped reporting", 10},
	APIServiceUnavailable:        {"aggregated API unavailable", 10},
	NamespaceControllerInactive:  {"namespace controller not acting", 12},
	MirrorPodKubeletNotSyncing:   {"static pod's kubelet not syncing", 12},
	NodeNotReady:                 {"node not ready", 15},
	AdmissionWebhookDenied:       {"webhook refuses the request", 20},
	AdmissionPolicyDenied:        {"admission policy refuses the request", 20},
	ConversionWebhookFailing:     {"conversion webhook failing", 20},
	NegativeGracePeriod:          {"negative grace period", 25},
	ContainerKillFailed:          {"runtime cannot kill containers", 30},
	KubeletNoLongerManagesPod:    {"kubelet no longer manages the pod", 30},
	SandboxTeardownFailed:        {"sandbox (CNI) teardown failed", 30},
	VolumeTeardownPending:        {"volumes not unmounted", 30},
	ResourceClaimCleanupPending:  {"DRA claims not unprepared", 30},
	VolumeDetachFailed:           {"volume detach failed", 30},
	VolumeDeleteFailed:           {"backend volume not deleted", 30},
	LoadBalancerCleanupPending:   {"load balancer not deleted", 30},
	NodeDrainBlocked:             {"drain cannot evict pods", 35},
	PVCInUse:                     {"claim still used by pods", 35},
	SnapshotSourceInUse:          {"snapshot or restore in progress", 35},
	PVBound:                      {"volume still bound", 35},
	ForegroundDeletionBlocked:    {"dependents still present", 40},
	CRDInstancesRemaining:        {"custom resources remain", 40},
	FinalizerPending:             {"finalizers not removed", 40},
	PodStuckTerminating:          {"pods stuck terminating", 45},
	NamespaceDiscoveryFailure:    {"discovery failed", 50},
	NamespaceContentFailure:      {"content deletion failed", 55},
	NamespaceFinalizersRemaining: {"content held by finalizers", 58},
	NamespaceContentRemaining:    {"content remaining", 60},
	ContainersStillRunning:       {"containers still running", 70},
	CgroupCleanupPending:         {"kubelet cleanup pending", 75},
	GracePeriodOverrun:           {"past grace period", 80},
	DiagnosisIncomplete:          {"no rule explains it", 85},
	WithinGracePeriod:            {"inside grace period", 90},
}

// Lookup returns the entry of a code and whether it is catalogued.
func Lookup(c Code) (Entry, bool) {
	e, ok := entries[c]
	return e, ok
}

// Codes lists every catalogued code, sorted by name.
func Codes() []Code {
	out := make([]Code, 0, len(entries))
	for c := range entries {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
