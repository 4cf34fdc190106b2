package diagnose

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Evidence is a set of reads a rule needs beyond the target itself. The
// collector reads, for each target, exactly what Needs returns, so that the
// predicates deciding what to read live with the rules that use them.
type Evidence uint32

const (
	// NodeEvidence: the pod's Node and its kube-node-lease Lease.
	NodeEvidence Evidence = 1 << iota
	// EventEvidence: the events whose involvedObject is the target.
	EventEvidence
	// AdmissionEvidence: webhooks, admission policies, their services'
	// endpoints and the target's namespace (for namespaceSelectors).
	AdmissionEvidence
	// VolumeEvidence: the pod's claims, their volumes, the CSI drivers and
	// the node's CSINode and VolumeAttachments.
	VolumeEvidence
	// ResourceClaimEvidence: the pod's DRA ResourceClaims and its node's ResourceSlices.
	ResourceClaimEvidence
	// OwnerEvidence: the workloads and CRD groups that could own a
	// third-party finalizer.
	OwnerEvidence
	// DependentEvidence: the objects whose ownerReferences name the target.
	DependentEvidence
	// ClaimUserEvidence: the pods that reference a PersistentVolumeClaim.
	ClaimUserEvidence
	// AttachmentEvidence: the VolumeAttachments of a PersistentVolume.
	AttachmentEvidence
	// ContentEvidence: a live scan of what a namespace still holds.
	ContentEvidence
	// InstanceEvidence: a live scan of a CRD's instances.
	InstanceEvidence
	// CRDEvidence: the CustomResourceDefinitions (conversion webhooks).
	CRDEvidence
	// APIServiceEvidence: the aggregated APIServices (discovery failures,
	// which hold back the namespace controller and the garbage collector).
	APIServiceEvidence
	// DrainEvidence: the pods still on the node a drain finalizer empties,
	// and the PodDisruptionBudgets of their namespaces.
	DrainEvidence
	// SnapshotEvidence: the VolumeSnapshots taken from a claim, or the
	// claims restored from a VolumeSnapshot, in the target's namespace.
	SnapshotEvidence
	// ReferenceEvidence: the objects that name the target where an in-use
	// protection finalizer looks (the catalogue's referencedBy).
	ReferenceEvidence
	// ObjectEvidence: the target in full (its status), where a scan read
	// only its metadata.
	ObjectEvidence
	// NamedEvidence: the objects the target's spec names, and those they
	// name in turn (observed.NamedIn).
	NamedEvidence
	// NamedByEvidence: the objects of the target's namespace and API group
	// family whose spec names it (observed.NamingField).
	NamedByEvidence
	// FinalizedEvidence: every object of the cluster not being deleted that
	// carries a third-party finalizer (a preflight of what runs a controller).
	FinalizedEvidence
	// NodeAgentEvidence: the pods, on the nodes the target names, of the
	// DaemonSets that look like its finalizers' controllers (node agents).
	NodeAgentEvidence
	// ProvisionerEvidence: for a CSI volume, its driver's CSIDriver object
	// and its external-provisioner's leader-election Lease.
	ProvisionerEvidence
)

// lastEvidence is the last bit given out: the block above, then the bits a
// rule declares in its own file with newEvidence.
var lastEvidence = ProvisionerEvidence

// newEvidence gives out the next Evidence bit: a rule declares what it reads
// in its own file (var XEvidence = newEvidence()), and the source that reads
// it asks for the same variable. The bits are never saved, so their order
// (the files') does not matter.
func newEvidence() Evidence {
	if lastEvidence == 1<<31 {
		panic("diagnose: more than 32 kinds of evidence")
	}
	lastEvidence <<= 1
	return lastEvidence
}

// Has reports whether e includes every read of x.
func (e Evidence) Has(x Evidence) bool { return e&x == x }

// rule explains one mechanism that can hold a deletion: whom it applies to,
// what it must read, and a pure function from the snapshot to causes.
type rule struct {
	name    string
	applies func(t *observed.Target) bool
	needs   func(t *observed.Target) Evidence
	explain func(subject) []report.Cause
}

// subject is what the rules judge: a target, its timing and, for a pod,
// the facts of its shutdown, gathered once for the rules and the checklist.
type subject struct {
	s   *observed.Snapshot
	t   *observed.Target
	tm  timing
	pod *podFacts // nil for any other kind
}

// subjectOf gathers what the rules judge t by.
func subjectOf(s *observed.Snapshot, t *observed.Target, tm timing) subject {
	x := subject{s: s, t: t, tm: tm}
	if t.Pod != nil {
		f := podFactsOf(s, t, tm)
		x.pod = &f
	}
	return x
}

// rules are the registry, in the order they register (registerRule, from
// the init of their file: rules.go's own, then the others'), which is the
// order their causes are gathered (the ranking orders them afterwards).
// Generic rules apply to every target
// whatever its kind: its own finalizers (each explained by the rule its
// catalogue row's code names, the namespace controller and CRD cleanup
// among them) and admission on the write that would remove one. The pod
// reclaim checklist is the one rule chosen by kind. DiagnosisIncomplete is
// the answer when none of them explains an overdue object.
var rules []rule

// registerRule adds a rule to the registry; call it from an init function.
func registerRule(r rule) { rules = append(rules, r) }

func init() {
	registerRule(rule{name: "pod reclaim", applies: isPod, needs: podNeeds, explain: podRuleCauses})
	registerRule(rule{name: "finalizers", applies: hasFinalizers, needs: finalizerNeeds, explain: func(x subject) []report.Cause { return ownFinalizerCauses(x.s, x.t, x.tm) }})
	registerRule(rule{name: "finalizer removal admission", applies: hasMetadataFinalizers, needs: func(*observed.Target) Evidence { return AdmissionEvidence },
		explain: func(x subject) []report.Cause { return finalizerUpdateRefusals(x.s, x.t, x.tm) }})
}

// Needs returns what the rules that apply to t must read beyond t itself;
// for a preflight's target, what the forecast rules read too.
func Needs(t *observed.Target) Evidence {
	var e Evidence
	if t.Forecast {
		e = forecastNeeds(t)
	}
	for _, r := range rules {
		if r.applies(t) {
			e |= r.needs(t)
		}
	}
	return e
}

// explainTarget gathers every applicable rule's causes.
func explainTarget(x subject) []report.Cause {
	var causes []report.Cause
	for _, r := range rules {
		if r.applies(x.t) {
			causes = append(causes, r.explain(x)...)
		}
	}
	return causes
}

func isPod(t *observed.Target) bool { return t.Pod != nil }

// hasMetadataFinalizers reads the list in place: the rules ask it of each
// of thousands of held objects.
func hasMetadataFinalizers(t *observed.Target) bool { return len(listedFinalizers(t.Object)) > 0 }

func hasFinalizers(t *observed.Target) bool { return len(finalizersOf(t)) > 0 }

// heldBy is one finalizer of a target and where it is written: every object
// has metadata.finalizers; a Namespace also has spec.finalizers, which only
// the namespace's /finalize subresource changes.
type heldBy struct {
	name string
	spec bool // in a Namespace's spec.finalizers
}

// finalizersOf lists every finalizer that holds t.
func finalizersOf(t *observed.Target) []heldBy {
	var out []heldBy
	if ns := t.Namespace; ns != nil {
		for _, f := range ns.Spec.Finalizers {
			out = append(out, heldBy{name: string(f), spec: true})
		}
	}
	for _, f := range listedFinalizers(t.Object) {
		out = append(out, heldBy{name: f.(string)})
	}
	return out
}

// listedFinalizers is metadata.finalizers as GetFinalizers reads it (none
// when an entry is not a string), read in place: the rules ask for it
// several times of each of thousands of held objects, and GetFinalizers
// copies it each time.
func listedFinalizers(u *unstructured.Unstructured) []any {
	metadata, _ := u.Object["metadata"].(map[string]any)
	list, _ := metadata["finalizers"].([]any)
	for _, f := range list {
		if _, ok := f.(string); !ok {
			return nil
		}
	}
	return list
}

// finalizerRule explains what one finalizer waits for on one object. It
// returns nothing when its evidence was not read or shows nothing specific:
// the generic FinalizerPending then speaks for that finalizer.
type finalizerRule struct {
	needs   func(t *observed.Target, f heldBy) Evidence
	explain func(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause
}

// finalizerRules picks a finalizer's rule by the code of its catalogue row
// (finalizers.yaml): adding a finalizer the project knows is a row, and a
// rule (registerFinalizerRule, in the rule's own file) only when its code is
// new. Filled in init: the rules nest diagnoses, which would make the
// table's initialisation circular.
var finalizerRules = map[catalog.Code]finalizerRule{}

// registerFinalizerRule makes r the rule of the finalizers whose catalogue
// row names code; call it from an init function.
func registerFinalizerRule(code catalog.Code, r finalizerRule) {
	if _, dup := finalizerRules[code]; dup {
		panic("diagnose: two finalizer rules for " + string(code))
	}
	finalizerRules[code] = r
}

func init() {
	for code, r := range map[catalog.Code]finalizerRule{
		catalog.NamespaceContentRemaining:  {needs: namespaceNeeds, explain: namespaceCauses},
		catalog.CRDInstancesRemaining:      {needs: evidence(InstanceEvidence | CRDEvidence), explain: crdCauses},
		catalog.ForegroundDeletionBlocked:  {needs: evidence(DependentEvidence | APIServiceEvidence), explain: foregroundCause},
		catalog.PVCInUse:                   {needs: evidence(ClaimUserEvidence), explain: claimInUseCause},
		catalog.PVBound:                    {needs: evidence(0), explain: volumeBoundCause},
		catalog.VolumeDetachFailed:         {needs: evidence(AttachmentEvidence), explain: detachCause},
		catalog.VolumeDeleteFailed:         {needs: evidence(EventEvidence | ProvisionerEvidence), explain: volumeDeleteCause},
		catalog.LoadBalancerCleanupPending: {needs: evidence(EventEvidence), explain: loadBalancerCause},
		catalog.NodeDrainBlocked:           {needs: evidence(DrainEvidence | EventEvidence), explain: drainCause},
		catalog.SnapshotSourceInUse:        {needs: evidence(SnapshotEvidence), explain: snapshotSourceCause},
		catalog.ObjectInUse:                {needs: inUseNeeds, explain: inUseCause},
		catalog.FinalizerPending:           {needs: pendingNeeds, explain: orphanCause},
		// Kubernetes' own finalizers the generic FinalizerPending explains.
	} {
		registerFinalizerRule(code, r)
	}
}

func evidence(e Evidence) func(*observed.Target, heldBy) Evidence {
	return func(*observed.Target, heldBy) Evidence { return e }
}

// ruleOf returns the rule the catalogue's code column names for a finalizer.
func ruleOf(f string) (finalizerRule, bool) {
	row, _ := catalog.LookupFinalizer(f)
	r, ok := finalizerRules[row.Code]
	return r, ok
}

func finalizerNeeds(t *observed.Target) Evidence {
	var e Evidence
	for _, f := range finalizersOf(t) {
		if r, ok := ruleOf(f.name); ok {
			e |= r.needs(t, f)
		}
	}
	return e
}

// pendingNeeds, for a third-party finalizer: owner liveness; what the owner
// says (events; the object's status, where a scan read only its metadata,
// when a controller wrote it since the deletion began: it says progressing
// only if its words do not say it failed); what the object owns in its
// namespace, and the nodes it names. The dependents for the garbage
// collector's orphan finalizer.
func pendingNeeds(t *observed.Target, f heldBy) Evidence {
	switch {
	case catalog.ThirdPartyFinalizer(f.name):
		e := OwnerEvidence | EventEvidence
		if metadataOnly(t.Object) && writtenSinceDeletion(t.Object) {
			e |= ObjectEvidence
		}
		if t.Object.GetDeletionTimestamp() == nil || t.Pod != nil {
			return e // what it owns and names hold only a deletion
		}
		if t.Ref.Namespace != "" {
			e |= DependentEvidence // what it owns, in its namespace
		}
		if t.Ref.Namespace != "" && t.Object.GroupVersionKind().Group != "" && !metadataOnly(t.Object) {
			e |= NamedByEvidence // what of its kin names it (for an object read in full, as what it names)
		}
		if len(observed.NodeReferences(t.Object)) > 0 {
			e |= NodeEvidence | NodeAgentEvidence
		}
		if len(observed.NamedIn(t.Object)) > 0 {
			e |= NamedEvidence
		}
		return e
	case f.name == metav1.FinalizerOrphanDependents:
		return DependentEvidence | APIServiceEvidence
	}
	return 0
}

// ownFinalizerCauses explains each finalizer that holds t through its rule;
// those no rule explains make one FinalizerPending with owner liveness.
func ownFinalizerCauses(s *observed.Snapshot, t *observed.Target, tm timing) []report.Cause {
	var causes []report.Cause
	var generic []heldBy
	for _, f := range finalizersOf(t) {
		if r, ok := ruleOf(f.name); ok {
			if c := r.explain(s, t, f, tm); len(c) > 0 {
				causes = append(causes, ofFinalizers(c, f.name)...)
				continue
			}
		}
		generic = append(generic, f)
	}
	return append(causes, pendingFinalizerCauses(s, t, generic, tm)...)
}

// podNeeds: the kubelet's node always; its events; and, by the step the
// kubelet is at, the claims it must unprepare (containers stopped, no
// terminal phase yet) or the volumes it must unmount and the admission its
// final DELETE must pass (state C).
func podNeeds(t *observed.Target) Evidence {
	pod := t.Pod
	e := EventEvidence
	if pod.Spec.NodeName != "" {
		e |= NodeEvidence
	}
	if len(pod.Spec.ResourceClaims) > 0 && !isTerminalPhase(pod.Status.Phase) {
		e |= ResourceClaimEvidence
	}
	if awaitsFinalDelete(pod) {
		e |= VolumeEvidence | AdmissionEvidence
	}
	return e
}

// awaitsFinalDelete is state C: the kubelet wrote a terminal phase but has
// not sent its grace-0 DELETE; it waits on volumes and the cgroup, or
// admission refuses that DELETE.
func awaitsFinalDelete(pod *corev1.Pod) bool {
	g := pod.DeletionGracePeriodSeconds
	return isTerminalPhase(pod.Status.Phase) && g != nil && *g > 0
}

// contentFailed reports a namespace whose controller failed to delete content.
func contentFailed(ns *corev1.Namespace) bool {
	return slices.ContainsFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool {
		return c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue
	})
}

// namespaceNeeds: the live scan and the APIServices always (an unavailable
// one blocks every namespace); the CRDs (conversion webhooks) and admission
// (webhooks refusing the controller's DELETEs) once content deletion failed.
func namespaceNeeds(t *observed.Target, _ heldBy) Evidence {
	e := ContentEvidence | APIServiceEvidence
	if t.Namespace != nil && contentFailed(t.Namespace) {
		e |= CRDEvidence | AdmissionEvidence
	}
	return e
}

// ForecastNeedsOwners: a namespace's forecast (while its pods go), and a
// preflight's of a namespace or a CRD not being deleted, ask whether the
// controllers of the third-party finalizers its scan found on objects not
// deleted yet are there (OwnerEvidence). Known only once the scan is done,
// and Needs is asked while it runs, so the source that reads the owners
// asks this itself.
func ForecastNeedsOwners(t *observed.Target) bool {
	c := t.Contents
	forecast := t.Namespace != nil || t.Forecast
	return forecast && c != nil && slices.ContainsFunc(sortedKeys(c.Pending), catalog.ThirdPartyFinalizer)
}

// metadataOnly: an object as a metadata scan lists it, without its spec or
// status.
func metadataOnly(u *unstructured.Unstructured) bool {
	for k := range u.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	return true
}
