package diagnose

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kubeversion"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// The forecasts of finalizers (kubectl terminating preflight): on the
// object, on what its deletion deletes, and on the objects elsewhere whose
// controller it deletes; each judged by its controller, or, for Kubernetes'
// in-use protections, by what still uses the object.

func ownFinalizerNeeds(t *observed.Target) Evidence {
	if slices.ContainsFunc(t.Object.GetFinalizers(), catalog.ThirdPartyFinalizer) {
		return OwnerEvidence
	}
	return 0
}

// ownFinalizerForecasts: each finalizer on the object: an in-use
// protection by what still uses the object; a third-party finalizer by
// whether its controller is there to remove it once the deletion begins.
func ownFinalizerForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	var causes []report.Cause
	for _, f := range t.Object.GetFinalizers() {
		if held := ruleForecasts(s, t, f); len(held) > 0 { // what its rule names holds it, whatever its controller
			causes = append(causes, held...)
			continue
		}
		if !catalog.ThirdPartyFinalizer(f) {
			continue
		}
		c, ok := finalizerForecast(s, catalog.FinalizerPending, f, t.Ref.Kind+" "+t.Ref.Name, "",
			[]report.Fact{report.FieldFact("metadata.finalizers", "["+strings.Join(t.Object.GetFinalizers(), ", ")+"]")},
			findOwners(s, catalog.FinalizerPending, t, []string{f}), t)
		if !ok {
			continue
		}
		if controllerMissing(c) {
			c.Remediation = append(c.Remediation, step(catalog.FinalizerPending, "remove-finalizer-before",
				removeFinalizerCommand(t.Ref, finalizerIndex(t.Object, f), f), "finalizer", f, "objects", report.Name(t.Ref)))
		}
		causes = append(causes, c)
	}
	return causes
}

// contentForecasts: the objects a namespace's deletion deletes (or a CRD's:
// its instances) that carry a third-party finalizer, by finalizer, judged
// by whether its controller is there to remove it.
func contentForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	c := t.Contents
	if c == nil {
		return nil
	}
	code, where, things := catalog.FinalizerPending, "namespace "+t.Ref.Name, "object"
	if t.Namespace == nil {
		code, where, things = catalog.CRDInstancesRemaining, "the instances of CRD "+t.Ref.Name, "instance"
	}
	var causes []report.Cause
	for _, f := range sortedKeys(c.Pending) {
		if !catalog.ThirdPartyFinalizer(f) {
			continue
		}
		n := c.Pending[f]
		names := make([]string, 0, len(c.Waiting[f]))
		for _, r := range c.Waiting[f] {
			names = append(names, report.Name(r))
		}
		held := report.Count(n, things)
		if len(names) > 0 {
			held += " (" + strings.Join(names, ", ") + agree(n-len(names)+1, ")", ", ...)")
		}
		scanned := report.Noted(fmt.Sprintf("live scan of %s: finalizer %s on %s, none of them being deleted yet", where, f, report.Count(n, things)))
		var first report.Step
		last := "remove-finalizer-before"
		if code == catalog.CRDInstancesRemaining {
			first, last = step(code, "list-instances", kubectl("", "get", t.Ref.Name, "-A")), "remove-instance-finalizers-before"
		} else {
			first = findOwners(s, code, t, []string{f})
		}
		within := ""
		if t.Namespace != nil {
			within = t.Ref.Name
		}
		fc, ok := finalizerForecast(s, code, f, held, within, []report.Fact{scanned}, first, nil)
		if !ok {
			continue
		}
		if controllerMissing(fc) { // the last resort, when the controller is gone for good
			fc.Remediation = append(fc.Remediation, step(code, last, "", "finalizer", f, "objects", held, "instances", held))
		}
		fc.About.Count = n
		causes = append(causes, fc)
	}
	return causes
}

// finalizerForecast judges one third-party finalizer that held (what names
// the objects) would wait for: critical when nothing in the cluster looks
// like its controller or its controller has no ready replica; information
// when its controller looks alive (it would remove it) or could not be
// judged. When within names the namespace being deleted and every live
// replica of the controller runs in it, the namespace controller deletes
// the controller too: under ordered namespace deletion its pods go first,
// before the objects it would finish (critical); without it the two race
// (warning). own is the held object when it was read in full (a
// preflight's own target; nil for a scan's objects): what it says now is
// judged too (aliveForecast). ok is false when the controllers were not
// read (the run's skipped reads say so).
func finalizerForecast(s *observed.Snapshot, code catalog.Code, f, held, within string, evidence []report.Fact, first report.Step, own *observed.Target) (report.Cause, bool) {
	if s.Controllers == nil {
		return report.Cause{}, false
	}
	state, liveness := livenessOf(s, f, own)
	evidence = append(append(evidence, ownerEvidence(s, []string{f})...), liveness...)
	waits := fmt.Sprintf("once deleted, %s would wait for finalizer %s", held, f)
	var c report.Cause
	switch inside := liveOwnersWithin(s.Controllers, f, within); {
	case state == ownerGone:
		c = cause(code, report.Critical, 0.6, waits+", and no controller that could remove it is found in the cluster: the deletion would stick", evidence,
			first, step(code, "restore-owner-before", "", "finalizer", f))
	case state == ownerDown:
		c = cause(code, report.Critical, 0.7, waits+", and its controller has no ready replica: the deletion would stick until it has one", evidence,
			first, step(code, "restore-owner-before", "", "finalizer", f))
	case state == ownerHealthy && inside != "":
		ordered := kubeversion.OrderedNamespaceDeletion.On(minorOf(s))
		sev, how := report.Warning, "deletes every type at once (no ordered namespace deletion on this release): the controller may go before it has removed the finalizer"
		if ordered.On {
			sev, how = report.Critical, "deletes the pods first and waits for them: the controller's pods go before the objects it would finish"
		}
		c = cause(code, sev, 0.7, fmt.Sprintf("%s, whose controller (%s) runs in the namespace being deleted; the namespace controller %s", waits, inside, how),
			append(evidence, report.Noted(ordered.Why)),
			first, step(code, "delete-objects-first", "", "finalizer", f, "objects", held))
	case state == ownerHealthy:
		c = aliveForecast(s, code, f, waits, evidence, first, own)
	default:
		c = cause(code, report.Info, 0.3, waits+"; no workload could be matched to its controller: whether it is there is not known", evidence, first)
	}
	c.About.Finalizers = []string{f}
	return c, true
}

// aliveForecast: a controller that looks alive would remove its finalizer,
// unless what the object says now stops it (own, read in full; nil for a
// scan's objects): paused, its controller leaves it alone (critical); a
// failure its controller reports about it now, the deletion may run into
// as well (warning: the cleanup is the same controller's work).
func aliveForecast(s *observed.Snapshot, code catalog.Code, f, waits string, evidence []report.Fact, first report.Step, own *observed.Target) report.Cause {
	alive := cause(code, report.Info, 0.6, waits+"; its controller looks alive and would remove it", evidence, first)
	if own == nil {
		return alive
	}
	if p, ok := pausedBy(own.Object); ok {
		return cause(code, report.Critical, 0.75, fmt.Sprintf("%s; its controller looks alive, but the object is paused (%s): a controller leaves a paused object alone, its deletion included: the deletion would stick until it is unpaused", waits, p.field),
			append(evidence, p.fact()), first, p.unpause("unpause-before", own))
	}
	said := complaints(s, own, []heldBy{{name: f}})
	if len(said) == 0 {
		return alive
	}
	for _, c := range said {
		evidence = append(evidence, c.evidence)
	}
	return cause(code, report.Warning, 0.5, fmt.Sprintf("%s; its controller looks alive but reports a failure about the object now, %s: %s: the deletion, its cleanup the same controller's work, may stick on it", waits, said[0].reason, said[0].message), evidence,
		step(code, "describe-object", kubectlOn(own.Ref.Namespace, "describe", strings.ToLower(own.Ref.Resource), own.Ref.Name)),
		step(code, "fix-what-it-reports-before", "", "reason", said[0].reason))
}

// controllerMissing: a finalizer forecast whose controller is gone or down
// (its remedy is to bring it back).
func controllerMissing(c report.Cause) bool {
	return slices.ContainsFunc(c.Remediation, func(st report.Step) bool { return st.ID == "restore-owner-before" })
}

// liveOwnersWithin names the ready workloads that look like finalizer f's
// controller when every one of them runs in namespace ns ("" otherwise, or
// when ns is "").
func liveOwnersWithin(ctl *observed.Controllers, f, ns string) string {
	var names []string
	for _, w := range liveOwners(ctl, f) {
		if w.Namespace != ns || ns == "" {
			return ""
		}
		names = append(names, workloadName(w))
	}
	return strings.Join(names, ", ")
}

// liveOwners are the workloads with ready replicas that look like
// finalizer f's controller (ownerLiveness's matching).
func liveOwners(ctl *observed.Controllers, f string) []observed.Workload {
	return slices.DeleteFunc(ownerWorkloads(ctl, f), func(w observed.Workload) bool { return w.Ready == 0 })
}

// workloadName names a workload as the evidence does: "deployment ops/acme".
func workloadName(w observed.Workload) string {
	return strings.ToLower(w.Kind) + " " + w.Namespace + "/" + w.Name
}

// foreseenCodes are the rules of Kubernetes' finalizers whose judgement
// of an object, as if its deletion had begun, foresees it, from the
// severity given: the in-use protections, whatever the object's age (a
// claim a pod mounts, a volume bound to a claim, an object others still
// name, a snapshot's source, a node a drain must empty: only a drain
// refused an eviction would stick, one waiting for pods it may evict is at
// work); the cloud load balancer's cleanup, when no service controller is
// there to run it; a CSI volume's detach, when its attacher is not running,
// and its delete, when its provisioner is not (or its driver is gone).
var foreseenCodes = map[catalog.Code]report.Severity{catalog.PVCInUse: report.Warning, catalog.PVBound: report.Warning,
	catalog.ObjectInUse: report.Warning, catalog.SnapshotSourceInUse: report.Warning, catalog.NodeDrainBlocked: report.Critical,
	catalog.LoadBalancerCleanupPending: report.Critical, catalog.VolumeDetachFailed: report.Critical, catalog.VolumeDeleteFailed: report.Critical}

// asIfDeleted is the timing of a deletion past its settle time: what still
// holds it then is held, not settling.
var asIfDeleted = timing{terminating: settleTime, overdue: settleTime}

// ruleForecasts: what a finalizer's rule among foreseenCodes says of the
// object as if its deletion had begun, when it says the deletion would be
// held.
func ruleForecasts(s *observed.Snapshot, t *observed.Target, f string) []report.Cause {
	row, _ := catalog.LookupFinalizer(f)
	r, ok := ruleOf(f)
	least, foreseen := foreseenCodes[row.Code]
	if !ok || !foreseen {
		return nil
	}
	causes := slices.DeleteFunc(r.explain(s, t, heldBy{name: f}, asIfDeleted), func(c report.Cause) bool { return c.Severity.Weight() < least.Weight() })
	return wouldStick(ofFinalizers(causes, f))
}

// strandedNeeds: for what runs controllers (a Deployment, StatefulSet or
// DaemonSet; a namespace, with its workloads), the workloads and every
// object of the cluster carrying a third-party finalizer.
func strandedNeeds(t *observed.Target) Evidence {
	if t.Namespace != nil || isWorkload(t.Ref) {
		return FinalizedEvidence | OwnerEvidence
	}
	return 0
}

// DeletesLiveWorkloads: t's deletion would delete a workload with ready
// replicas (t itself, or one in the namespace t is), the only kind whose
// loss strands a finalizer. False when the workloads were not read.
func DeletesLiveWorkloads(s *observed.Snapshot, t *observed.Target) bool {
	return s.Controllers != nil && slices.ContainsFunc(s.Controllers.Workloads, func(w observed.Workload) bool { return w.Ready > 0 && deletedWith(t, w) })
}

func isWorkload(r report.ObjectRef) bool {
	return r.APIVersion == "apps/v1" && (r.Kind == "Deployment" || r.Kind == "StatefulSet" || r.Kind == "DaemonSet")
}

// deletedWith: the workload goes with t's deletion (t is it, or its namespace).
func deletedWith(t *observed.Target, w observed.Workload) bool {
	if t.Namespace != nil {
		return w.Namespace == t.Ref.Name
	}
	return strings.EqualFold(w.Kind, t.Ref.Kind) && w.Namespace == t.Ref.Namespace && w.Name == t.Ref.Name
}

// strandedForecasts: the third-party finalizers whose only live controller
// the deletion deletes (an operator uninstalled, or the namespace it runs
// in deleted, before its custom resources): the objects elsewhere that
// carry them would keep them, and their deletion, and their namespaces',
// would stick. Objects in a namespace being deleted are its content's
// forecast (contentForecasts).
func strandedForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if s.Finalized == nil || s.Controllers == nil {
		return nil
	}
	var causes []report.Cause
	for _, f := range sortedKeys(s.Finalized.Counts) {
		var going []string
		stays := false
		for _, w := range liveOwners(s.Controllers, f) {
			if !deletedWith(t, w) {
				stays = true
				break
			}
			going = append(going, workloadName(w))
		}
		byNS := maps.Clone(s.Finalized.Counts[f])
		if t.Namespace != nil {
			delete(byNS, t.Ref.Name)
		}
		n := sum(byNS)
		if stays || len(going) == 0 || n == 0 {
			continue
		}
		var names []string
		for _, r := range s.Finalized.Examples[f] {
			if t.Namespace == nil || r.Namespace != t.Ref.Name {
				names = append(names, report.Name(r)+inNamespace(r.Namespace))
			}
		}
		objects := report.Count(n, "object")
		if len(names) > 0 {
			objects += " (" + strings.Join(names, ", ") + agree(n-len(names)+1, ")", ", ...)")
		}
		c := cause(catalog.FinalizerPending, report.Warning, 0.6,
			fmt.Sprintf("once it is deleted, nothing would remove finalizer %s from %s: %s, which looks like its controller, goes with it; their deletion, and their namespaces', would then stick", f, objects, strings.Join(going, ", ")),
			append([]report.Fact{report.Noted(fmt.Sprintf("live scan of the cluster: finalizer %s on %s not being deleted (%s)", f, report.Count(n, "object"), countsByNamespace(byNS)))},
				ownerEvidence(s, []string{f})...),
			findOwners(s, catalog.FinalizerPending, t, []string{f}),
			step(catalog.FinalizerPending, "uninstall-last", "", "finalizer", f, "objects", objects))
		c.About.Finalizers, c.About.Count = []string{f}, n
		causes = append(causes, c)
	}
	return causes
}

// inNamespace says where a namespaced object is, as kubectl's -n does.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}
