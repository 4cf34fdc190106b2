package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/celeval"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// foregroundCause: the garbage collector deletes the dependents that block
// their owner's deletion first, and removes foregroundDeletion once they are gone.
func foregroundCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	if i := slices.IndexFunc(t.Skipped, func(sk report.Skip) bool { return sk.Reason == observed.SkipDepth }); i >= 0 {
		return []report.Cause{chainCut(t, t.Skipped[i], tm)}
	}
	if t.Dependents == nil {
		return nil
	}
	uid := t.Object.GetUID()
	var blocking []*observed.Target
	evidence := []report.Fact{metadataFinalizers(t.Object)}
	for _, d := range t.Dependents {
		blocks := d.BlocksOwnerDeletion(uid)
		evidence = append(evidence, report.Noted(fmt.Sprintf("dependent %s: ownerReference to %s/%s, blockOwnerDeletion %t, %s", refName(d.Ref), t.Ref.Kind, t.Ref.Name, blocks, deletionState(d))))
		if blocks {
			blocking = append(blocking, d)
		}
	}
	if len(blocking) == 0 {
		evidence = append(evidence, report.Noted(fmt.Sprintf("live scan: %s, %s blockOwnerDeletion", report.Count(len(t.Dependents), "dependent"), agree(len(t.Dependents), "without", "none with"))))
		return []report.Cause{cause(catalog.ForegroundDeletionBlocked, settling(report.Warning, tm), 0.5,
			"no dependent blocks the deletion any more, yet the garbage collector has not removed foregroundDeletion: "+collectorBlocked(s),
			append(evidence, unavailableAPIs(s)...),
			step(catalog.ForegroundDeletionBlocked, "check-gc", "kubectl get apiservices | grep False"))}
	}
	var items []report.Item
	sev := settling(report.Warning, tm)
	for _, d := range blocking {
		it := nestedItem(s, d, tm)
		items = append(items, it)
		if it.Severity.Weight() > sev.Weight() && it.Stuck {
			sev = it.Severity
		}
	}
	SortItems(items)
	chain, root := chainOf(items[0])
	remain := report.Count(len(blocking), "dependent") + " with blockOwnerDeletion still " + agree(len(blocking), "exists", "exist")
	summary, quotes := remain+": "+chainSummary(items[0]), chainQuotes(items[0])
	if len(chain) > 1 {
		evidence = append(evidence, report.Noted(fmt.Sprintf("chain of objects waiting in foreground deletion: %s -> %s", report.Name(t.Ref), strings.Join(chain, " -> "))))
	}
	// Judged by its leaves: while every blocking dependent is being deleted
	// and none is stuck (pods inside their grace period, owners of such
	// pods), the garbage collector is progressing, as a namespace whose pods
	// terminate normally is.
	if !slices.ContainsFunc(items, func(it report.Item) bool { return it.Stuck || it.DeletionTimestamp.IsZero() }) {
		sev = report.Info
		summary = fmt.Sprintf("progressing: the %s with blockOwnerDeletion %s being deleted and %s stuck (%s); the garbage collector removes foregroundDeletion once %s gone", report.Count(len(blocking), "dependent"), agree(len(blocking), "is", "are"), agree(len(blocking), "is not", "none is"), nestedSummary(root), agree(len(blocking), "it is", "they are"))
		quotes = nestedQuotes(root)
	}
	return []report.Cause{{Code: string(catalog.ForegroundDeletionBlocked), Severity: sev, Confidence: 0.9, Summary: summary, Quotes: quotes.summaries, Names: quotes.names, Facts: evidence,
		About: report.About{Count: len(blocking)},
		Remediation: []report.Step{
			step(catalog.ForegroundDeletionBlocked, "diagnose-dependents", kubectl(items[0].Object.Namespace, "terminating", "why", report.Name(items[0].Object), "-o", "wide")),
			dropForeground(t),
		},
		BlockedBy: items}}
}

// chainCut: the collector stopped following a chain of owners in
// foreground deletion at this object; what holds the chain lies deeper, and
// a diagnosis from here reads on.
func chainCut(t *observed.Target, sk report.Skip, tm timing) report.Cause {
	here := kubectl(t.Ref.Namespace, "terminating", "why", report.Name(t.Ref), "-o", "wide")
	return cause(catalog.ForegroundDeletionBlocked, settling(report.Warning, tm), 0.5,
		fmt.Sprintf("waits on its dependents, which were not read: %s; what holds the chain is deeper, and a diagnosis from this object reads on", sk.Detail),
		[]report.Fact{metadataFinalizers(t.Object), report.Noted(fmt.Sprintf("not read: %s (%s)", sk.Check, sk.Reason))},
		step(catalog.ForegroundDeletionBlocked, "diagnose-chain", here),
		dropForeground(t))
}

// dropForeground lets an owner go without waiting for its dependents.
func dropForeground(t *observed.Target) report.Step {
	return removeFinalizer(catalog.ForegroundDeletionBlocked, "remove-foreground", t, "foregroundDeletion")
}

// collectorBlocked says what may hold the garbage collector back: an
// unavailable aggregated API fails its discovery, and it cannot resolve
// owners and dependents of that group.
func collectorBlocked(s *observed.Snapshot) string {
	if gvs := unavailableGroupVersions(s); len(gvs) > 0 {
		return fmt.Sprintf("its discovery fails for %s (unavailable aggregated API), which may hold it back", strings.Join(gvs, ", "))
	}
	return "it may be blocked (a discovery failure stops it; see the namespace conditions and APIServices)"
}

// unavailableAPIs quotes the unavailable APIServices as evidence.
func unavailableAPIs(s *observed.Snapshot) []report.Fact {
	var out []report.Fact
	for _, a := range s.APIServices {
		if a.Available != "True" {
			out = append(out, apiServiceAvailable(a))
		}
	}
	return out
}

// orphanCause: the garbage collector removes the owner's reference from
// each dependent, then the orphan finalizer. It is the FinalizerPending
// rule's one specific case; every other finalizer of that code is explained
// by the generic FinalizerPending.
func orphanCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	if f.name != metav1.FinalizerOrphanDependents || t.Dependents == nil {
		return nil
	}
	var names []string
	for _, d := range t.Dependents {
		names = append(names, refName(d.Ref))
	}
	summary := fmt.Sprintf("the garbage collector still has to orphan %s: %s", report.Count(len(names), "dependent"), strings.Join(names, ", "))
	if len(names) == 0 {
		summary = "every dependent is orphaned, yet the garbage collector has not removed the orphan finalizer: " + collectorBlocked(s)
	}
	return []report.Cause{cause(catalog.FinalizerPending, settling(report.Warning, tm), 0.6, summary,
		append([]report.Fact{report.Noted("finalizer orphan: removed by the garbage collector (kube-controller-manager) once no dependent names the object as its owner"),
			report.Noted(fmt.Sprintf("live scan: %s still %s %s/%s in ownerReferences", report.Count(len(names), "dependent"), agree(len(names), "names", "name"), t.Ref.Kind, t.Ref.Name))}, unavailableAPIs(s)...),
		step(catalog.FinalizerPending, "check-gc", "kubectl get apiservices | grep False"),
		removeFinalizer(catalog.FinalizerPending, "remove-orphan", t, "orphan"))}
}

// claimInUseCause: the PVC protection controller keeps a claim while a pod,
// in any phase, references it.
func claimInUseCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	if len(t.ClaimUsers) == 0 {
		return nil
	}
	var evidence []report.Fact
	var items []report.Item
	sev := report.Warning
	for _, u := range t.ClaimUsers {
		p := u.Pod
		evidence = append(evidence, report.Noted(fmt.Sprintf("pod %s/%s: phase %s on node %q, %s, references claim %s", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName, deletionState(u), t.Ref.Name)))
		if p.DeletionTimestamp != nil {
			it := nested(s, u, tm)
			items = append(items, it)
			if it.Stuck && it.Severity.Weight() > sev.Weight() {
				sev = it.Severity
			}
		}
	}
	SortItems(items)
	summary := fmt.Sprintf("%s still %s the claim: %s", report.Count(len(t.ClaimUsers), "pod"), agree(len(t.ClaimUsers), "uses", "use"), podNames(t.ClaimUsers))
	var quotes quoted
	if len(items) > 0 && items[0].Stuck {
		summary += "; " + nestedSummary(items[0])
		quotes = nestedQuotes(items[0])
	}
	// Judged by its users, as a foreground owner by its leaves: pods that
	// are all being deleted, none stuck (inside their grace period), release
	// the claim by themselves.
	if len(items) == len(t.ClaimUsers) && !items[0].Stuck {
		sev = report.Info
		summary = fmt.Sprintf("progressing: the %s that %s the claim %s being deleted and %s stuck (%s); the PVC protection controller releases the claim once %s gone", report.Count(len(items), "pod"), agree(len(items), "uses", "use"), agree(len(items), "is", "are"), agree(len(items), "is not", "none is"), nestedSummary(items[0]), agree(len(items), "it is", "they are"))
		quotes = nestedQuotes(items[0])
	}
	return []report.Cause{{Code: string(catalog.PVCInUse), Severity: settling(sev, tm), Confidence: 0.95, Summary: summary, Quotes: quotes.summaries, Names: quotes.names, Facts: evidence,
		About: report.About{Count: len(t.ClaimUsers)},
		Remediation: []report.Step{
			step(catalog.PVCInUse, "see-pods", kubectl(t.Ref.Namespace, append(append([]string{"get", "pods"}, targetNames(t.ClaimUsers)...), "-o", "wide")...)),
			step(catalog.PVCInUse, "delete-pods", ""),
			step(catalog.PVCInUse, "never-remove-protection", ""),
		},
		BlockedBy: items}}
}

// volumeBoundCause: the PV protection controller keeps a volume while it is Bound.
func volumeBoundCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	pv := t.Volume
	if pv == nil || pv.Status.Phase != corev1.VolumeBound {
		return nil
	}
	evidence := []report.Fact{report.FieldFact("status.phase", string(pv.Status.Phase)), report.FieldFact("spec.persistentVolumeReclaimPolicy", string(pv.Spec.PersistentVolumeReclaimPolicy))}
	claim := "an unknown claim"
	step1 := step(catalog.PVBound, "find-claim", kubectlOn("", "get", "pv", pv.Name, "-o", "jsonpath={.spec.claimRef}"))
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = fmt.Sprintf("claim %s/%s", ref.Namespace, ref.Name)
		evidence = append(evidence, report.FieldFact("spec.claimRef", fmt.Sprintf("%s/%s (uid %s)", ref.Namespace, ref.Name, ref.UID)))
		step1 = step(catalog.PVBound, "delete-claim", kubectlOn(ref.Namespace, "delete", "pvc", ref.Name))
	}
	c := cause(catalog.PVBound, settling(report.Warning, tm), 0.9,
		fmt.Sprintf("the volume is still Bound to %s: the PV protection controller keeps it until the claim releases it", claim), evidence,
		step1,
		step(catalog.PVBound, "never-remove-protection", ""))
	if ref := pv.Spec.ClaimRef; ref != nil {
		c.About.Object = &report.ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: ref.Namespace, Name: ref.Name, UID: string(ref.UID)}
	}
	return []report.Cause{c}
}

// volumeDeleteCause: with reclaimPolicy Delete, the provisioner that made a
// volume (the CSI external-provisioner, or the PV controller for in-tree
// plugins) deletes the backend volume, then removes its finalizer; it
// records a VolumeFailedDelete event on the volume while it cannot.
func volumeDeleteCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	pv := t.Volume
	if pv == nil || pv.Status.Phase == corev1.VolumeBound {
		return nil // a Bound volume waits for its claim first (PVBound)
	}
	owner := catalog.FinalizerOwner(f.name).Owner
	evidence := []report.Fact{report.FieldFact("status.phase", string(pv.Status.Phase)), report.FieldFact("spec.persistentVolumeReclaimPolicy", string(pv.Spec.PersistentVolumeReclaimPolicy))}
	if csi := pv.Spec.CSI; csi != nil {
		evidence = append(evidence, report.FieldFact("spec.csi", fmt.Sprintf("driver %s, volumeHandle %s", csi.Driver, csi.VolumeHandle)))
		owner += " of driver " + csi.Driver
	}
	provisioner, seen := provisionerSeen(s, pv)
	return externalCleanupCause(s, t, tm, catalog.VolumeDeleteFailed, f.name, owner, "backend volume", provisioner, append(evidence, seen...),
		step(catalog.VolumeDeleteFailed, "read-volume", kubectlOn("", "describe", "pv", pv.Name)),
		step(catalog.VolumeDeleteFailed, "fix-provisioner", ""),
		removeFinalizer(catalog.VolumeDeleteFailed, "remove-finalizer", t, f.name))
}

// externalCleanupCause: a controller deletes something outside the cluster
// (a cloud load balancer, a backend volume), then removes its finalizer; it
// records one of its finalizer's failure events (the catalogue's
// failureEvents) on the object while it cannot. Without one the controller
// may not be running (events expire: a warning only).
// absent, when not "", proves the controller is not running (what it would
// have done at once is not done): critical without a failure event.
func externalCleanupCause(s *observed.Snapshot, t *observed.Target, tm timing, code catalog.Code, finalizer, controller, thing string, owner cleanupOwner, evidence []report.Fact, steps ...report.Step) []report.Cause {
	reasons := catalog.FinalizerOwner(finalizer).FailureEvents
	var failure *corev1.Event
	for _, reason := range reasons {
		if e := latestEvent(s.Events[t.Object.GetUID()], reason); e != nil && (failure == nil || eventTime(*e).After(eventTime(*failure))) {
			failure = e
		}
	}
	if failure != nil {
		return []report.Cause{cause(code, settling(report.Critical, tm), 0.9,
			"the "+controller+" fails to delete the "+thing+": "+failure.Message, append(evidence, eventFact(failure, s.Now)), steps...)}
	}
	evidence = append(evidence, noEventSeen(strings.Join(reasons, " or ")))
	if owner.absent != "" {
		return []report.Cause{cause(code, settling(report.Critical, tm), 0.7,
			"no "+controller+" acts on it: "+owner.absent, evidence, steps...)}
	}
	why := "the " + controller + " may not be running"
	if owner.runs != "" {
		why = owner.runs
	}
	return []report.Cause{cause(code, settling(report.Warning, tm), 0.5,
		"the "+thing+" is not deleted yet and no failure is reported: "+why, evidence, steps...)}
}

// cleanupOwner is what the API shows of the controller that does an
// external cleanup: absent says why none acts, runs that one does.
type cleanupOwner struct{ absent, runs string }

// detachCause: the CSI external-attacher keeps a volume (or its
// VolumeAttachment) until it is detached from the node.
func detachCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	if len(t.Attachments) == 0 {
		return nil
	}
	owner := catalog.FinalizerOwner(f.name).Owner
	var evidence []report.Fact
	var failed []string
	attached := 0
	for _, va := range t.Attachments {
		line := fmt.Sprintf("volumeattachment %s: node %s, attacher %s, status.attached %t", va.Name, va.Spec.NodeName, va.Spec.Attacher, va.Status.Attached)
		if e := va.Status.DetachError; e != nil {
			line += fmt.Sprintf(", status.detachError at %s: %s", e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Message)
			failed = append(failed, fmt.Sprintf("%s from node %s: %s", va.Name, va.Spec.NodeName, e.Message))
		}
		if va.Status.Attached {
			attached++
		}
		evidence = append(evidence, report.Fact{Text: line, Object: &report.ObjectRef{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment", Resource: "volumeattachments", Name: va.Name, UID: string(va.UID)}})
	}
	va := t.Attachments[0]
	check := step(catalog.VolumeDetachFailed, "read-attachment", kubectlOn("", "get", "volumeattachment", va.Name, "-o", "yaml"))
	force := removeFinalizer(catalog.VolumeDetachFailed, "remove-finalizer", t, f.name)
	if len(failed) > 0 {
		return []report.Cause{cause(catalog.VolumeDetachFailed, settling(report.Critical, tm), 0.9,
			"detach failed: "+strings.Join(failed, "; "), evidence, check,
			step(catalog.VolumeDetachFailed, "fix-attacher", "", "owner", owner),
			force)}
	}
	if attached == 0 {
		return nil
	}
	still := fmt.Sprintf("the volume is still attached (%s) and no detach error is reported", report.Count(attached, "attachment"))
	lease, leaseFacts := attacherLease(s, va.Spec.Attacher)
	evidence = append(evidence, leaseFacts...)
	if lease == leaseStale {
		return []report.Cause{cause(catalog.VolumeDetachFailed, settling(report.Critical, tm), 0.8,
			fmt.Sprintf("%s: the external-attacher of driver %s is not running (its leader lease is not renewed): nothing will detach it", still, va.Spec.Attacher), evidence, check,
			step(catalog.VolumeDetachFailed, "check-attacher", ""), force)}
	}
	why := "the " + owner + " may not be running"
	if lease == leaseRenewed {
		why = "the " + owner + " runs (its leader lease is renewed): the detach may be under way, or failing at the storage backend"
	}
	return []report.Cause{cause(catalog.VolumeDetachFailed, settling(report.Warning, tm), 0.5, still+": "+why, evidence, check,
		step(catalog.VolumeDetachFailed, "check-attacher", ""), force)}
}

// leaseState is what a CSI sidecar's leader-election Lease says of it.
type leaseState int

const (
	leaseUnknown leaseState = iota // not read, or none (leader election off)
	leaseRenewed                   // renewed within its duration's grace: the sidecar runs
	leaseStale                     // not renewed: no replica of the sidecar runs
)

// staleLease is how long past a Lease's duration its holder is taken as
// gone: leader election renews well within it.
const staleLease = time.Minute

// attacherLease judges the external-attacher of driver by its leader
// election Lease (observed.AttacherLeaseName).
func attacherLease(s *observed.Snapshot, driver string) (leaseState, []report.Fact) {
	lease, read := s.AttacherLeases[driver]
	return sidecarLease(s, lease, read, observed.AttacherLeaseName(driver), "attacher")
}

// sidecarLease judges a CSI sidecar by its leader-election Lease named
// name: read says it was looked for, lease is nil when none was found.
func sidecarLease(s *observed.Snapshot, lease *coordinationv1.Lease, read bool, name, sidecar string) (leaseState, []report.Fact) {
	switch {
	case !read:
		return leaseUnknown, nil
	case lease == nil:
		return leaseUnknown, []report.Fact{report.Noted(fmt.Sprintf("no lease %s in any namespace: the %s's leader election is off, or it never ran", name, sidecar))}
	case lease.Spec.RenewTime == nil:
		return leaseUnknown, []report.Fact{report.Noted(fmt.Sprintf("lease %s/%s: never renewed", lease.Namespace, name))}
	}
	age := s.Now.Sub(lease.Spec.RenewTime.Time)
	duration := 15 * time.Second // the CSI sidecars' default --leader-election-lease-duration
	if d := lease.Spec.LeaseDurationSeconds; d != nil {
		duration = time.Duration(*d) * time.Second
	}
	holder := ""
	if h := lease.Spec.HolderIdentity; h != nil {
		holder = *h
	}
	fact := report.Fact{Text: fmt.Sprintf("lease %s/%s: holder %q, renewed %s ago (duration %s)", lease.Namespace, name, holder, report.HumanDuration(age), duration),
		Object: &report.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases.coordination.k8s.io", Namespace: lease.Namespace, Name: name},
		Field:  "spec.renewTime", Value: lease.Spec.RenewTime.UTC().Format(time.RFC3339), At: timeOf(lease.Spec.RenewTime.Time)}
	if age > duration+staleLease {
		return leaseStale, []report.Fact{fact}
	}
	return leaseRenewed, []report.Fact{fact}
}

// provisionerSeen says, for a CSI volume, whether its driver's
// external-provisioner runs: absent when the API shows it does not (its
// lease not renewed; or no lease and no CSIDriver: the driver uninstalled),
// runs when its lease is renewed; with what was read.
func provisionerSeen(s *observed.Snapshot, pv *corev1.PersistentVolume) (cleanupOwner, []report.Fact) {
	if pv.Spec.CSI == nil {
		return cleanupOwner{}, nil
	}
	driver := pv.Spec.CSI.Driver
	p, read := s.Provisioners[driver]
	if !read || p == nil {
		return cleanupOwner{}, nil
	}
	state, evidence := sidecarLease(s, p.Lease, true, observed.ProvisionerLeaseName(driver), "external-provisioner")
	if !p.Installed {
		evidence = append(evidence, report.Noted(fmt.Sprintf("csidriver %s: not found", driver)))
	}
	switch {
	case state == leaseStale:
		return cleanupOwner{absent: fmt.Sprintf("the external-provisioner of driver %s is not running (its leader lease is not renewed): nothing will delete the backend volume", driver)}, evidence
	case state == leaseRenewed:
		return cleanupOwner{runs: fmt.Sprintf("the external-provisioner of driver %s runs (its leader lease is renewed): the delete may be under way, or failing at the storage backend", driver)}, evidence
	case p.Lease == nil && !p.Installed:
		return cleanupOwner{absent: fmt.Sprintf("driver %s looks uninstalled (no CSIDriver %s, and no leader lease of its external-provisioner in any namespace): nothing will delete the backend volume", driver, driver)}, evidence
	}
	return cleanupOwner{}, evidence
}

// loadBalancerCause: the cloud service controller deletes the cloud load
// balancer, then removes its finalizer.
func loadBalancerCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	if t.Service == nil {
		return nil
	}
	evidence := []report.Fact{report.FieldFact("spec.type", string(t.Service.Spec.Type))}
	for _, in := range t.Service.Status.LoadBalancer.Ingress {
		evidence = append(evidence, report.FieldFact("status.loadBalancer.ingress", in.IP+in.Hostname))
	}
	// The service controller cleans up a Service that is no LoadBalancer
	// and removes the finalizer at once, deleted or not (needsCleanup).
	absent := ""
	if t.Service.Spec.Type != corev1.ServiceTypeLoadBalancer && writtenBefore(t.Object, s.Now.Add(-settleTime)) {
		absent = fmt.Sprintf("the cloud service controller removes %s from a Service of type %s at once, deleted or not, and it is still there: no service controller runs in this cluster", f.name, t.Service.Spec.Type)
	}
	return externalCleanupCause(s, t, tm, catalog.LoadBalancerCleanupPending, f.name, "cloud-controller-manager", "cloud load balancer", cleanupOwner{absent: absent}, evidence,
		step(catalog.LoadBalancerCleanupPending, "read-events", kubectlOn(t.Ref.Namespace, "describe", "service", t.Ref.Name)),
		step(catalog.LoadBalancerCleanupPending, "fix-cloud", ""),
		removeFinalizer(catalog.LoadBalancerCleanupPending, "remove-finalizer", t, f.name))
}

// finalizerUpdateRefusals judges admission on the UPDATE a controller sends
// to remove a finalizer: a webhook whose service is down refuses it; a
// mutating webhook that answers is a suspect, since a mutation that changes
// an immutable field (a pod's resources, say) turns the patch into an
// invalid update whatever its failurePolicy; what the controller says about
// the object (an invalid update, a denial) confirms a suspect.
func finalizerUpdateRefusals(s *observed.Snapshot, t *observed.Target, tm timing) []report.Cause {
	if s.Admission == nil || !hasMetadataFinalizers(t) {
		return nil
	}
	group, version := splitAPIVersion(t.Ref.APIVersion)
	resource, _, _ := strings.Cut(t.Ref.Resource, ".")
	ns := s.Namespaces[t.Ref.Namespace]
	nsLabels := namespaceLabels(ns)
	// Sent by the finalizer's controller, as the catalogue's writer when it
	// names one (else matchConditions on the sender stay unknown). The
	// object loses its first finalizer.
	sent := lazy(func() *celeval.Request {
		after := t.Object.DeepCopy()
		after.SetFinalizers(t.Object.GetFinalizers()[1:])
		return &celeval.Request{Operation: "UPDATE", Group: group, Version: version, Resource: resource, Kind: t.Ref.Kind,
			Namespace: t.Ref.Namespace, Name: t.Ref.Name, Object: after.Object, OldObject: t.Object.Object, NamespaceObject: objectMap(ns),
			User: writer(s, t.Object.GetFinalizers()[0])}
	})
	r := request{operation: "UPDATE", group: group, version: version, resource: resource, namespaced: t.Ref.Namespace != "",
		objLabels: t.Object.GetLabels(), nsLabels: nsLabels, cel: sent}
	what := "UPDATE " + t.Ref.Resource + " (the patch that removes a finalizer)"
	var causes []report.Cause
	for _, f := range refusals(*s.Admission, r, what) {
		if f.severity == report.Critical {
			causes = append(causes, f.asCause(tm, report.Noted("the finalizer's controller, while it runs, retries and logs the refusal; the object keeps its finalizers")))
		}
	}
	var suspects []refusal
	for _, h := range hooksOf(*s.Admission) {
		if h.kind != mutatingHooks || !h.matches(r) {
			continue
		}
		if f, ok := mutationSuspect(*s.Admission, h, r, what); ok {
			suspects = append(suspects, f)
		}
	}
	var said []complaint // what confirms a suspect: read only when there is one
	if len(suspects) > 0 {
		said = invalidUpdates(complaints(s, t, finalizersOf(t)))
	}
	for _, f := range confirmSuspects(suspects, said, what) {
		causes = append(causes, f.asCause(tm))
	}
	return causes
}

const mutatingHooks = "mutatingwebhookconfiguration"

// invalidUpdates are the controller's words that say its write was refused
// or made invalid (the apiserver's "is invalid", "Forbidden: pod updates may
// not change fields...", "field is immutable", "admission webhook ... denied").
func invalidUpdates(said []complaint) []complaint {
	var out []complaint
	for _, c := range said {
		if containsAny(strings.ToLower(c.message), []string{"is invalid", "forbidden", "immutable", "may not change", "admission webhook"}) {
			out = append(out, c)
		}
	}
	return out
}

// mutationSuspect is a mutating webhook, answering, that intercepts the
// finalizer's removal: a suspect until the controller's words confirm it,
// the likelier the more of its matching points at this very write.
func mutationSuspect(a observed.Admission, h hook, r request, what string) (refusal, bool) {
	conditions := matchConditions(h.matchConditions, r, nil)
	if conditions.result == celeval.False {
		return refusal{}, false
	}
	f, ok := webhookRefusal(a, h, what, conditions)
	if !ok || f.severity == report.Critical {
		return refusal{}, false // down: reported as a refusal already
	}
	id := fmt.Sprintf("%s %s webhook %s", h.kind, h.config, h.name)
	if namesExactly(h.rules, r) {
		f.confidence += 0.1
		f.evidence = append(f.evidence, report.Noted(fmt.Sprintf("%s: its rules name %s and %s themselves, not a wildcard", id, r.resource, r.operation)))
	}
	if (h.objectSelector != nil && len(h.matchConditions) == 0) || (len(h.matchConditions) > 0 && conditions.result == celeval.True) {
		f.confidence += 0.05
		f.evidence = append(f.evidence, report.Noted(id+": its objectSelector or matchConditions select this object's update"))
	}
	if h.reinvoked {
		f.confidence += 0.05
		f.evidence = append(f.evidence, report.Noted(id+": reinvocationPolicy IfNeeded: called again whenever a later webhook changes the object, so its mutation is applied last"))
	}
	if h.failurePolicy == admissionregistrationv1.Ignore {
		f.evidence = append(f.evidence, report.Noted(id+": failurePolicy Ignore does not help: the webhook answers, and what it answers is applied"))
	}
	f.summary = fmt.Sprintf("mutating webhook %s (%s) changes %s: a mutation of an immutable field turns it into an invalid update the apiserver rejects whatever the webhook's failurePolicy, and the finalizer stays", h.name, h.config, what)
	f.evidence = append(f.evidence, report.Noted(refusedPatchUnseen))
	f.steps = append([]report.Step{step(catalog.AdmissionWebhookDenied, "see-mutation", kubectlOn("", "get", h.kind, h.config, "-o", "yaml"))},
		step(catalog.AdmissionWebhookDenied, "narrow-mutation", ""),
		step(catalog.AdmissionWebhookDenied, "delete-configuration", kubectlOn("", "delete", h.kind, h.config)))
	return f, true
}

// refusedPatchUnseen is what a mutating suspect's evidence says until the
// controller's words confirm it.
const refusedPatchUnseen = "the controller's refused patch is only in its logs (the job controller logs \"Error syncing orphan pod ... is invalid\"): no event names it"

// confirmSuspects ranks the mutating suspects, likeliest first; the
// controller's words naming an invalid update confirm the likeliest (which
// webhook made it invalid is in no event), the others stay suspects.
func confirmSuspects(suspects []refusal, said []complaint, what string) []refusal {
	sort.SliceStable(suspects, func(i, j int) bool { return suspects[i].confidence > suspects[j].confidence })
	if len(said) == 0 || len(suspects) == 0 {
		return suspects
	}
	top := &suspects[0]
	top.severity, top.confidence = report.Critical, 0.85
	top.summary = fmt.Sprintf("mutating webhook %s (%s) intercepts %s, and the controller reports: %s", top.about.Webhook, top.about.Object.Name, what, said[0].message)
	top.evidence = slices.DeleteFunc(top.evidence, func(e report.Fact) bool { return e.Text == refusedPatchUnseen })
	for _, c := range said {
		top.evidence = append(top.evidence, c.evidence)
	}
	if len(suspects) > 1 {
		top.evidence = append(top.evidence, report.Noted(fmt.Sprintf("%s the same update: ranked after this one, whose matching names the write more precisely", report.Count(len(suspects)-1, "other mutating webhook")+agree(len(suspects)-1, " intercepts", " intercept"))))
	}
	return suspects
}

// namesExactly: a rule names the request's resource and operation, not
// through a wildcard.
func namesExactly(rules []admissionregistrationv1.RuleWithOperations, r request) bool {
	return slices.ContainsFunc(rules, func(rule admissionregistrationv1.RuleWithOperations) bool {
		return slices.Contains(rule.Resources, r.resource) && slices.Contains(rule.Operations, r.operation)
	})
}

// writer is the user a finalizer's owner removes it as, with the groups the
// apiserver gives a service account: the catalogue's writer (the built-in
// controllers), else the service account of the workload that looks like
// the owner; nil when neither is known.
func writer(s *observed.Snapshot, finalizer string) *celeval.User {
	name := catalog.FinalizerOwner(finalizer).Writer
	if name == "" {
		name, _, _ = ownerServiceAccount(s.Controllers, finalizer)
	}
	ns, _, ok := strings.Cut(strings.TrimPrefix(name, "system:serviceaccount:"), ":")
	if name == "" || !ok {
		return nil
	}
	return &celeval.User{Username: name, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// nestedItem diagnoses a blocking object: in full when it is being deleted,
// otherwise as an item that says it is not deleted yet.
func nestedItem(s *observed.Snapshot, t *observed.Target, parent timing) report.Item {
	if t.Object.GetDeletionTimestamp() != nil {
		return nested(s, t, parent)
	}
	return report.Item{Object: t.Ref, Causes: []report.Cause{}}
}

// chainOf follows a nested item's top cause down the blockers it nests in
// turn (an owner waiting on a dependent that waits on its own), and returns
// the objects on the way and the deepest one, whose cause is the root.
func chainOf(it report.Item) ([]string, report.Item) {
	var chain []string
	for range observed.MaxDepth + 1 {
		chain = append(chain, report.Name(it.Object))
		if len(it.Causes) == 0 || len(it.Causes[0].BlockedBy) == 0 {
			break
		}
		it = it.Causes[0].BlockedBy[0]
	}
	return chain, it
}

// chainSummary names a nested object and what holds it: its top cause, or,
// when it waits on objects nested in turn, the chain down to the root and
// the root's cause.
func chainSummary(it report.Item) string {
	chain, root := chainOf(it)
	if len(chain) == 1 {
		return nestedSummary(it)
	}
	return fmt.Sprintf("%s waits on %s; %s", chain[0], strings.Join(chain[1:], " -> "), nestedSummary(root))
}

// quoted is what a summary that quotes another cause's whole says beside
// its own words: that cause's summary and what it quotes, and the objects
// it names (report.Cause.Quotes and Names).
type quoted struct{ summaries, names []string }

func quotedOf(c report.Cause) quoted {
	return quoted{summaries: append([]string{c.Summary}, c.Quotes...), names: c.Names}
}

// on records q on the cause whose summary quotes it. A cause is often a
// copy of another (a nested item's top cause, led by more words), its lists
// shared with it: they are appended to as copies (Clip), never in place.
func (q quoted) on(c *report.Cause) {
	c.Quotes = append(slices.Clip(c.Quotes), q.summaries...)
	c.Names = append(slices.Clip(c.Names), q.names...)
}

// prefixed puts lead before c's summary, which it then quotes.
func prefixed(c *report.Cause, lead string) {
	c.Quotes = append(slices.Clip(c.Quotes), c.Summary)
	c.Summary = lead + c.Summary
}

// nestedQuotes is what nestedSummary(it) quotes.
func nestedQuotes(it report.Item) quoted {
	if len(it.Causes) == 0 {
		return quoted{}
	}
	return quotedOf(it.Causes[0])
}

// chainQuotes is what chainSummary(it) quotes.
func chainQuotes(it report.Item) quoted {
	_, root := chainOf(it)
	return nestedQuotes(root)
}

// nestedSummary names a nested object and its top cause.
func nestedSummary(it report.Item) string {
	if len(it.Causes) == 0 {
		return fmt.Sprintf("%s is not being deleted yet", report.Name(it.Object))
	}
	if !it.Stuck {
		return fmt.Sprintf("%s: %s", report.Name(it.Object), it.Causes[0].Summary)
	}
	return fmt.Sprintf("%s is stuck: %s", report.Name(it.Object), it.Causes[0].Summary)
}

func deletionState(t *observed.Target) string {
	if ts := t.Object.GetDeletionTimestamp(); ts != nil {
		return "being deleted since " + ts.UTC().Format("2006-01-02T15:04:05Z")
	}
	return "not being deleted"
}

// refName names an object as the report heads it: kind.group/name -n namespace.
func refName(r report.ObjectRef) string {
	name := report.Name(r)
	if r.Namespace != "" {
		name += " -n " + r.Namespace
	}
	return name
}

func podNames(ts []*observed.Target) string {
	return strings.Join(targetNames(ts), ", ")
}

func targetNames(ts []*observed.Target) []string {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, t.Ref.Name)
	}
	return names
}
