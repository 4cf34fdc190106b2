// Package observed is the evidence model: everything a diagnosis reads of
// the cluster, gathered once by package collect (or built by hand in tests),
// so that the rules in package diagnose stay pure. A run's evidence is a
// Snapshot (what a snapshot file saves, package snapfile); the package is
// not named after it, so that it is never read as a CSI VolumeSnapshot.
package observed

import (
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is the evidence for one run. Its one convention for a read that
// was not made: absent — a nil pointer, slice or map, or a missing key; a
// read that found nothing leaves an empty value.
type Snapshot struct {
	// Now is the clock every duration is computed against.
	Now time.Time `json:"now"`
	// Targets are the objects with a deletionTimestamp to diagnose (in a
	// snapshot file, the roots of its table of targets).
	Targets []*Target `json:"roots"`
	// Nodes holds the nodes the targets run on, by name.
	Nodes map[string]*corev1.Node `json:"nodes"`
	// MissingNodes holds node names that were looked up and do not exist.
	MissingNodes map[string]bool `json:"missingNodes"`
	// Leases holds the kube-node-lease Lease of each node in Nodes, by node name.
	Leases map[string]*coordinationv1.Lease `json:"leases"`
	// AttacherLeases holds, by CSI driver (a VolumeAttachment's
	// spec.attacher), the leader-election Lease of its external-attacher
	// (external-attacher-leader-<driver>, in whichever namespace it runs):
	// nil when none was found; a driver not read has no entry.
	AttacherLeases map[string]*coordinationv1.Lease `json:"attacherLeases,omitempty"`
	// Provisioners holds, by CSI driver (a PersistentVolume's spec.csi.driver),
	// what says whether its external-provisioner runs; a driver not read has
	// no entry.
	Provisioners map[string]*Provisioner `json:"provisioners,omitempty"`
	// Events holds the events about each target, by involvedObject.uid.
	// Events expire (one hour by default): their absence proves nothing.
	Events map[types.UID][]corev1.Event `json:"events"`
	// Admission holds what can refuse a DELETE or UPDATE: webhooks, policies,
	// and the endpoints of the webhooks' services.
	Admission *Admission `json:"admission"`
	// Volumes holds what the pods' volumes lead to, for pods whose kubelet
	// must unmount them (state C).
	Volumes Volumes `json:"volumes"`
	// DRA holds the resource claims of pods whose kubelet must unprepare them
	// (containers stopped, no terminal phase yet) and their drivers' slices.
	DRA DRA `json:"dra"`
	// Controllers lists the workloads that could own third-party finalizers,
	// read when a target waits on one. Nil: not read.
	Controllers *Controllers `json:"controllers"`
	// Finalized is what a cluster-wide scan found carrying a third-party
	// finalizer and not being deleted, read for a preflight of what runs a
	// controller (what its deletion would leave with no one to finish it).
	Finalized *Finalized `json:"finalized,omitempty"`
	// APIServices holds the aggregated APIServices, read when discovery failed.
	APIServices []APIService `json:"apiServices"`
	// Namespaces holds the namespaces of the targets, by name (their labels
	// decide which webhooks apply).
	Namespaces map[string]*corev1.Namespace `json:"namespaces"`
	// CRDs holds the CustomResourceDefinitions by name, read when a target is
	// a CRD or a namespace's content deletion failed (conversion webhooks).
	CRDs map[string]*CRD `json:"crds"`
	// Kubelets holds what the kubelets of the pod targets' nodes report
	// through the apiserver's node proxy (--kubelet), by node name; a
	// missing key: not read.
	Kubelets map[string]*Kubelet `json:"kubelets"`
	// NodePods holds the pods bound to each node a drain finalizer empties,
	// by node name; a missing key: not read.
	NodePods map[string][]corev1.Pod `json:"nodePods"`
	// PDBs holds the PodDisruptionBudgets of those pods' namespaces, by
	// namespace; a missing key: not read.
	PDBs map[string][]policyv1.PodDisruptionBudget `json:"pdbs"`
	// VolumeSnapshots holds the VolumeSnapshots of the namespaces of claims
	// held by the snapshotter's pvc-as-source-protection, by namespace; an
	// empty list when the snapshot API is not served; a missing key: not read.
	VolumeSnapshots map[string][]VolumeSnapshot `json:"volumeSnapshots"`
	// NamespaceClaims holds the PersistentVolumeClaims of the namespaces of
	// VolumeSnapshots held by volumesnapshot-as-source-protection (the claims
	// restored from them), by namespace; a missing key: not read.
	NamespaceClaims map[string][]corev1.PersistentVolumeClaim `json:"namespaceClaims"`
	// Skipped lists run-wide reads that could not be made.
	Skipped []Skip `json:"skipped"`
	// BlockerEvents are the events about objects that hold targets without
	// being targets (the snapshots and claims the snapshot-controller waits
	// for), by the object's UID.
	BlockerEvents map[types.UID][]corev1.Event `json:"blockerEvents"`
	// Server is the apiserver's version (GET /version); nil: not read.
	Server *Server `json:"server"`
	// NotServed lists the APIs a check needed and the server does not
	// serve: not applicable there, not a failed read.
	NotServed []NotServed `json:"notServed"`
	// Slots are the parts of the evidence declared by the sources in their
	// own files (Declare): what they read, by slot name.
	Slots Slots `json:"slots,omitempty"`
}

// Server is what /version says.
type Server struct {
	GitVersion string `json:"gitVersion"`
}

// NotServed is an API the server does not serve, and the check that would
// have read it.
type NotServed struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

// AddNotServed records an API not served, once per check.
func (s *Snapshot) AddNotServed(check, reason string) {
	for _, n := range s.NotServed {
		if n.Check == check {
			return
		}
	}
	s.NotServed = append(s.NotServed, NotServed{Check: check, Reason: reason})
}

// VolumeSnapshot is a snapshot.storage.k8s.io VolumeSnapshot, reduced to
// what explains the snapshotter's protection finalizers.
type VolumeSnapshot struct {
	Namespace, Name string
	// UID keys the snapshot's events in Snapshot.Events.
	UID types.UID
	// SourceClaim is spec.source.persistentVolumeClaimName ("" for a
	// pre-provisioned snapshot).
	SourceClaim string
	Class       string
	// ReadyToUse is status.readyToUse; nil while the status is unset.
	ReadyToUse *bool
	// Error is status.error.message, if any.
	Error   string
	Deleted bool
}

// Kubelet is a node's kubelet's own view of the pod targets on that node:
// its /pods (the pods it still manages, with its container statuses) and its
// /stats/summary (per pod, the cgroup's stats while the cgroup exists and the
// volumes still mounted), reduced to those pods.
type Kubelet struct {
	// ReadAt is when the reads were made.
	ReadAt time.Time
	// PodsRead and SummaryRead say which of the two endpoints answered.
	PodsRead, SummaryRead bool
	// Pods holds what the kubelet reports of each pod target on the node, by
	// UID; a pod it reports nothing of has no entry.
	Pods map[types.UID]*KubeletPod
}

// KubeletPod is what a kubelet reports of one pod.
type KubeletPod struct {
	// Managed: listed by /pods (the kubelet still manages the pod).
	Managed bool
	// Containers are the kubelet's own container statuses (from /pods).
	Containers []corev1.ContainerStatus
	// Cgroup: /stats/summary reports the pod with CPU or memory stats, which
	// it reads from the pod's cgroup.
	Cgroup bool
	// Volumes are the pod's volumes /stats/summary still reports (mounted).
	Volumes []KubeletVolume
}

// KubeletVolume is a volume the kubelet reports for a pod.
type KubeletVolume struct {
	Name string
	// Claim names the PersistentVolumeClaim behind it, if any.
	Claim string
}

// Volumes is the storage chain of the targets' volumes: claim, volume, CSI
// driver registration on the node, attachments.
type Volumes struct {
	// Claims; PersistentVolumes, CSINodes by name. A nil value: not found;
	// a missing key: not read.
	Claims            map[types.NamespacedName]*corev1.PersistentVolumeClaim
	PersistentVolumes map[string]*corev1.PersistentVolume
	CSINodes          map[string]*storagev1.CSINode
	// CSIDrivers by name (attachRequired); nil: not read.
	CSIDrivers map[string]*storagev1.CSIDriver
	// Attachments are the VolumeAttachments to the targets' nodes.
	Attachments []storagev1.VolumeAttachment
}

// DRA is what dynamic resource allocation says about the targets' claims.
type DRA struct {
	// Claims; a nil value: not found; a missing key: not read.
	Claims map[types.NamespacedName]*resourcev1.ResourceClaim
	// Slices are the ResourceSlices published for each node, by node name;
	// a missing key means they were not read.
	Slices map[string][]resourcev1.ResourceSlice
}

// Controllers is the inventory used to judge whether the controller behind a
// third-party finalizer is alive.
type Controllers struct {
	Workloads []Workload
	// APIGroups are the groups served by CRDs, e.g. "cert-manager.io".
	APIGroups []string
	// Grants are what RBAC lets service accounts write: who may remove a
	// finalizer, whatever its controller is named. Nil: not read.
	Grants []Grant
}

// Grant is a role's rule that lets a service account update or patch
// resources of API groups (never a wildcard group: that is an
// administrator's, not a controller's), and how it is bound.
type Grant struct {
	// ServiceAccount is "namespace/name".
	ServiceAccount string
	APIGroups      []string
	// Resources may hold "*", a resource, or its finalizers subresource
	// ("awsclusters/finalizers").
	Resources []string
	// Via names the role and its binding: "clusterrole capa-manager-role
	// (clusterrolebinding capa-manager-rolebinding)".
	Via string
	// Namespace limits the grant to one namespace (a RoleBinding's); ""
	// for every namespace.
	Namespace string
}

// Finalized counts, by third-party finalizer, the objects not being deleted
// that carry it, by namespace ("" for cluster-scoped ones), with a few
// examples of each.
type Finalized struct {
	Counts   map[string]map[string]int `json:"counts"`
	Examples map[string][]ObjectRef    `json:"examples"`
	// Skipped lists the types that could not be listed.
	Skipped []Skip `json:"skipped,omitempty"`
}

// Workload is a Deployment, StatefulSet or DaemonSet, reduced to what the
// liveness judgement needs.
type Workload struct {
	Kind, Namespace, Name string
	// Labels holds the workload's WorkloadNameLabels, the only ones read.
	Labels         map[string]string
	Desired, Ready int32
	// ServiceAccount is its pods' service account: the user its
	// controller's writes are sent as.
	ServiceAccount string
}

// Provisioner is what the API says of a CSI driver's external-provisioner,
// which deletes the backend volume of a released volume, then removes its
// finalizer.
type Provisioner struct {
	// Lease is its leader-election Lease (ProvisionerLeaseName, in whichever
	// namespace it runs); nil when none was found.
	Lease *coordinationv1.Lease
	// Installed says a CSIDriver object of the driver's name exists: a
	// driver's install makes one, its uninstall deletes it.
	Installed bool
}

// CRD is a CustomResourceDefinition, reduced to what explains a stuck CRD
// and a failing conversion webhook.
type CRD struct {
	Name, Group, Kind, Plural string
	Namespaced                bool
	// StorageVersion is the version objects are written in; Served lists the served versions.
	StorageVersion string
	Served         []string
	// ConversionStrategy is "None" or "Webhook"; for a webhook, its Service
	// ("namespace/name") or URL, and the Service's ready endpoints (nil: not read).
	ConversionStrategy         string
	ConversionService          string
	ConversionURL              string
	ConversionServiceEndpoints *int
	// Terminating is the Terminating condition; nil when absent.
	Terminating *metav1.Condition
	// StoredVersions lists every version objects may be stored in (status.storedVersions).
	StoredVersions []string
}

// APIService is an aggregated API (apiregistration.k8s.io/v1), reduced to
// what explains a discovery failure.
type APIService struct {
	Name, Group, Version string
	// UID and ResourceVersion identify the APIService as read: fix deletes
	// that one or none.
	UID, ResourceVersion string
	// Service is "namespace/name"; empty for a group served by the apiserver itself.
	Service string
	// Available is the status of the Available condition, with its reason and message.
	Available, Reason, Message string
	// ReadyEndpoints counts the service's ready endpoints; nil: not read.
	ReadyEndpoints *int
}

// Admission is the cluster's admission configuration, read once; nil in a
// snapshot when it was not read (forbidden, or no target needed it): rules
// then claim nothing about admission.
type Admission struct {
	Validating     []admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating       []admissionregistrationv1.MutatingWebhookConfiguration
	Policies       []admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	// ServiceEndpoints counts the ready endpoints of each webhook service;
	// a missing key means it was not read.
	ServiceEndpoints map[types.NamespacedName]int
}

// Target is one object to diagnose, with its typed form where a rule needs it.
type Target struct {
	Ref    ObjectRef                  `json:"ref"`
	Object *unstructured.Unstructured `json:"object"`
	// Whole says Object was read in full (a named object), not from a
	// scan's metadata: the typed form comes from it, with no second read.
	// A snapshot does not carry it: a loaded target is never read.
	Whole bool `json:"-"`
	// Forecast marks a preflight's target, not being deleted: what its
	// deletion would run into is read and forecast.
	Forecast bool `json:"forecast,omitempty"`
	// Cascade is the propagation policy a forecast deletion would be sent
	// with (preflight --cascade; "" is the apiserver's default,
	// Background). Under Foreground the owner waits for its dependents with
	// blockOwnerDeletion, which the garbage collector deletes in the
	// foreground in turn: the collector marks them forecasts of the same.
	Cascade metav1.DeletionPropagation `json:"cascade,omitempty"`
	// Pod is set when the target is a pod.
	Pod *corev1.Pod `json:"pod"`
	// Namespace is set when the target is a namespace.
	Namespace *corev1.Namespace `json:"namespace"`
	// Skipped lists reads about this target that could not be made.
	Skipped []Skip `json:"skipped"`
	// Contents is the live scan of what a terminating namespace or CRD still
	// holds; nil if not scanned.
	Contents *Contents `json:"contents"`
	// Typed forms of the kinds whose finalizer rules read more than metadata.
	Claim   *corev1.PersistentVolumeClaim `json:"claim"`
	Volume  *corev1.PersistentVolume      `json:"volume"`
	Service *corev1.Service               `json:"service"`
	// Attachments are the VolumeAttachments of a PersistentVolume, or the
	// VolumeAttachment the target is.
	Attachments []storagev1.VolumeAttachment `json:"attachments"`
	// Dependents are the objects whose ownerReferences name the target
	// (foregroundDeletion, orphan); ClaimUsers the pods that reference a
	// claim (pvc-protection). Nil: not read; a read that found none leaves
	// an empty slice.
	Dependents []*Target `json:"dependents"`
	ClaimUsers []*Target `json:"claimUsers"`
	// Referrers are the objects that name the target in the field an
	// in-use protection finalizer watches (the catalogue's referencedBy).
	// Nil: not read.
	Referrers []*Target `json:"referrers"`
	// Named are the objects the target's spec names (NamedIn: a restore's
	// backup, and that backup's storage location in turn), found. Nil: not
	// read.
	Named []*Target `json:"named"`
	// Unfound are the objects the target's spec names, resolved to a kind,
	// that do not exist (a restore's deleted backup). Nil: not read.
	Unfound []ObjectRef `json:"unfound"`
	// NamedBy are the objects of the target's namespace, of its API group's
	// family (knative.dev for eventing.knative.dev), whose spec names it
	// (NamingField): an event source naming its bus. Nil: not read.
	NamedBy []*Target `json:"namedBy"`
	// NodeAgents are the pods, on the nodes the target names, of the
	// namespaces of the DaemonSets that look like its finalizers'
	// controllers (diagnose.NodeAgentReads): only a node agent's pod on the
	// object's node can do its cleanup. Nil: not read.
	NodeAgents []corev1.Pod `json:"nodeAgents"`
}

// WorkloadNameLabels are the labels that name what a workload runs, matched
// against a finalizer's domain to find its controller.
var WorkloadNameLabels = []string{"app", "app.kubernetes.io/name", "app.kubernetes.io/part-of", "app.kubernetes.io/instance"}

// MirrorPodAnnotation marks a static pod's mirror in the API.
const MirrorPodAnnotation = corev1.MirrorPodAnnotationKey

// IsMirrorPod reports whether the pod is a static pod's mirror in the API.
func IsMirrorPod(p *corev1.Pod) bool {
	_, mirror := p.Annotations[MirrorPodAnnotation]
	return mirror
}

// Annotations by which a pod refuses a drain's eviction.
const (
	DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
	// DoNotEvictAnnotation is do-not-disrupt's name before Karpenter v0.32.
	DoNotEvictAnnotation  = "karpenter.sh/do-not-evict"
	SafeToEvictAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// ReadAnnotations are the only annotations any rule reads: a snapshot file
// keeps these and no other (package snapfile).
var ReadAnnotations = []string{MirrorPodAnnotation, DoNotDisruptAnnotation, DoNotEvictAnnotation, SafeToEvictAnnotation}

// Pods is the core group's pods, as scans count them.
var Pods = schema.GroupResource{Resource: "pods"}

// Contents is what a live scan found left in a terminating namespace (its
// objects) or CRD (its instances).
type Contents struct {
	// Counts holds the objects left by type; ByNamespace by namespace ("" for
	// cluster-scoped objects).
	Counts      map[schema.GroupResource]int `json:"counts"`
	ByNamespace map[string]int               `json:"byNamespace"`
	// Resources is every type scanned, with the version it was listed in.
	Resources map[schema.GroupResource]schema.GroupVersionResource `json:"resources"`
	// NotDeleted counts by type the objects left that have no
	// deletionTimestamp: their deletion has not been requested (yet).
	NotDeleted map[schema.GroupResource]int `json:"notDeleted"`
	// Finalizers counts the objects being deleted that each finalizer holds.
	Finalizers map[string]int `json:"finalizers"`
	// Pending counts, by finalizer, the objects not deleted yet that carry
	// it: each will wait for it once the namespace controller deletes it.
	Pending map[string]int `json:"pending"`
	// Waiting names a few of the objects Pending counts, by finalizer: those
	// a preflight forecast says would wait for it.
	Waiting map[string][]ObjectRef `json:"waiting,omitempty"`
	// Held keeps a few examples of the objects (pods aside) each finalizer holds, as targets.
	Held map[string][]*Target `json:"held"`
	// Pods are the namespace's terminating pods, read in full and diagnosed.
	Pods []*Target `json:"pods"`
	// Live are, for a preflight of a namespace not being deleted, its pods
	// bound to a node and not being deleted, read in full: the namespace
	// controller would delete them first, and each waits for its kubelet.
	Live []*Target `json:"live,omitempty"`
	// Skipped lists the types that could not be listed.
	Skipped []Skip `json:"skipped"`
	// Read says how the types were chosen.
	Read ContentsRead `json:"read"`
}

// ContentsRead says which types a namespace's contents were listed from.
type ContentsRead struct {
	// Index: only the types the namespace controller's conditions name as
	// left, and pods (diagnose.ContentIndex); otherwise every namespaced type.
	Index bool `json:"index,omitempty"`
	// Types is how many types were listed.
	Types int `json:"types"`
	// Why the conditions could not stand in for a full scan ("" when they
	// did, or were not asked: --full-scan, or a run that scanned anyway).
	Why string `json:"why,omitempty"`
}

// AllTargets returns the targets and the objects nested in them, at any
// depth (a namespace's leftover pods, a namespace's or CRD's held examples,
// an owner's dependents and theirs, a claim's pods), each once, in the order
// a depth-first walk meets them. The walk keeps its own stack: however a
// graph nests, it neither loops nor grows the call stack.
func (s *Snapshot) AllTargets() []*Target {
	out := make([]*Target, 0, len(s.Targets))
	seen := make(map[*Target]bool, len(s.Targets))
	stack := slices.Clone(s.Targets)
	slices.Reverse(stack)
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t == nil || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		children := t.Children()
		slices.Reverse(children)
		stack = append(stack, children...)
	}
	return out
}

// New returns an empty snapshot taken at now.
func New(now time.Time) *Snapshot {
	return &Snapshot{
		Now:            now,
		Nodes:          map[string]*corev1.Node{},
		MissingNodes:   map[string]bool{},
		Leases:         map[string]*coordinationv1.Lease{},
		AttacherLeases: map[string]*coordinationv1.Lease{},
		Provisioners:   map[string]*Provisioner{},
		Events:         map[types.UID][]corev1.Event{},
		Namespaces:     map[string]*corev1.Namespace{},
		CRDs:           map[string]*CRD{},
		DRA:            DRA{Claims: map[types.NamespacedName]*resourcev1.ResourceClaim{}, Slices: map[string][]resourcev1.ResourceSlice{}},
		Volumes: Volumes{Claims: map[types.NamespacedName]*corev1.PersistentVolumeClaim{},
			PersistentVolumes: map[string]*corev1.PersistentVolume{}, CSINodes: map[string]*storagev1.CSINode{}},
	}
}

// PodClaimNames lists the ResourceClaims a pod uses: named ones, and those
// generated from templates (recorded in status.resourceClaimStatuses).
func PodClaimNames(pod *corev1.Pod) []string {
	var names []string
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil {
			names = append(names, *rc.ResourceClaimName)
			continue
		}
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == rc.Name && st.ResourceClaimName != nil {
				names = append(names, *st.ResourceClaimName)
			}
		}
	}
	return names
}

// VolumeClaim names the PersistentVolumeClaim a pod volume mounts: a
// persistentVolumeClaim volume's, or the claim generated for a generic
// ephemeral volume (<pod>-<volume>); "" for any other volume.
func VolumeClaim(pod *corev1.Pod, vol corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name
	}
	return ""
}

// NewAdmission returns an empty admission configuration, read.
func NewAdmission() *Admission {
	return &Admission{ServiceEndpoints: map[types.NamespacedName]int{}}
}
