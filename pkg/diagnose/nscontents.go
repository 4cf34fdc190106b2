package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kubeversion"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// contentCauses explains a namespace from the live scan of what is left in
// it: the stuck pods (diagnosed in full, nested) and the objects held by each
// finalizer (grouped, with a few examples nested), so that the first line of
// the report names the root cause.
func contentCauses(s *observed.Snapshot, t *observed.Target, tm timing) []report.Cause {
	c := t.Contents
	if c == nil {
		return nil
	}
	var causes []report.Cause
	if pc, ok := stuckPodsCause(s, t, tm); ok {
		causes = append(causes, pc)
	}
	return append(causes, heldCauses(s, t, func(n int) string { return report.Count(n, "object") + " in the namespace" }, "namespace "+t.Ref.Name, tm)...)
}

// heldCauses groups the objects t still holds by the finalizer that holds
// them: one cause per finalizer, with counts and a few examples nested.
// things counts them for a person ("3 objects in the namespace").
func heldCauses(s *observed.Snapshot, t *observed.Target, things func(n int) string, where string, tm timing) []report.Cause {
	c := t.Contents
	finalizers := make([]string, 0, len(c.Finalizers))
	for f := range c.Finalizers {
		if len(c.Held[f]) > 0 { // pods' finalizers are in their own diagnosis
			finalizers = append(finalizers, f)
		}
	}
	sort.Strings(finalizers)
	var causes []report.Cause
	for _, f := range finalizers {
		causes = append(causes, heldCause(s, c, f, things, where, tm))
	}
	return causes
}

// stuckPodsCause nests the diagnosis of the namespace's stuck pods.
func stuckPodsCause(s *observed.Snapshot, t *observed.Target, tm timing) (report.Cause, bool) {
	var stuck []report.Item
	for _, p := range t.Contents.Pods {
		if it := nested(s, p, tm); it.Stuck {
			stuck = append(stuck, it)
		}
	}
	if len(stuck) == 0 {
		return report.Cause{}, false
	}
	SortItems(stuck)
	top := stuck[0]
	summary := fmt.Sprintf("pod %s is stuck terminating: %s", top.Object.Name, top.Causes[0].Summary)
	if len(stuck) > 1 {
		summary = fmt.Sprintf("%d pods are stuck terminating; %s", len(stuck), summary)
	}
	evidence := []report.Fact{report.Noted(fmt.Sprintf("live scan of namespace %s: %s, %d stuck", t.Ref.Name, report.Count(len(t.Contents.Pods), "terminating pod"), len(stuck)))}
	for _, it := range stuck {
		evidence = append(evidence, report.Noted(fmt.Sprintf("pod %s: %s (%s)", it.Object.Name, it.Causes[0].Code, it.Severity)))
	}
	quotes := quotedOf(top.Causes[0])
	return report.Cause{
		Code: string(catalog.PodStuckTerminating), Severity: top.Severity, Confidence: 0.85, Summary: summary, Quotes: quotes.summaries, Names: quotes.names, Facts: evidence,
		Remediation: []report.Step{
			step(catalog.PodStuckTerminating, "resolve-pods", command("kubectl", "terminating", "why", "pods", "-n", t.Ref.Name)),
			clearNamespaceFinalizers(catalog.PodStuckTerminating, t.Ref.Name),
		},
		About:     report.About{Object: &top.Object, Count: len(stuck)},
		BlockedBy: stuck,
	}, true
}

// podsInGraceCause: a namespace whose pods are terminating normally is
// progressing. Under ordered namespace deletion (on by default from 1.33,
// always from 1.34) the namespace controller deletes the pods first and
// leaves the rest until they are gone, so it progresses whatever else it
// still holds; without it every type is deleted at once, and what else it
// holds is judged beside the pods. Stuck pods are PodStuckTerminating instead.
func podsInGraceCause(s *observed.Snapshot, t *observed.Target, tm timing, ordered kubeversion.State) report.Cause {
	c := t.Contents
	var latest time.Time
	var evidence []report.Fact
	for _, p := range c.Pods {
		it := nested(s, p, tm)
		if d := it.DeletionTimestamp.Time; d.After(latest) {
			latest = d
		}
		evidence = append(evidence, report.Noted(fmt.Sprintf("pod %s: deletion deadline %s, %s", p.Ref.Name, it.DeletionTimestamp.UTC().Format(time.RFC3339), it.Causes[0].Summary)))
	}
	others := sum(c.Counts) - c.Counts[observed.Pods]
	evidence = append(evidence,
		report.Noted(fmt.Sprintf("live scan of namespace %s: %s left, %d being deleted; %s, %d of them not deleted yet", t.Ref.Name, report.Count(c.Counts[observed.Pods], "pod"), len(c.Pods), report.Count(others, "other object"), sum(c.NotDeleted)-c.NotDeleted[observed.Pods])),
		report.Noted(ordered.Why))
	deadline := "its pods are past their deadline and settling"
	if latest.After(s.Now) {
		deadline = fmt.Sprintf("the last pod's grace period ends in %s (%s)", report.HumanDuration(latest.Sub(s.Now)), latest.UTC().Format(time.RFC3339))
	}
	if waiting := c.Counts[observed.Pods] - len(c.Pods); waiting > 0 {
		deadline += fmt.Sprintf("; %s not deleted yet by the namespace controller", report.Count(waiting, "pod"))
	}
	pods := report.Count(len(c.Pods), "pod") + agree(len(c.Pods), " is", " are")
	them := agree(len(c.Pods), "it", "them")
	summary := fmt.Sprintf("progressing: the namespace controller deletes the pods first and waits for them; %s terminating normally and %s; the %s deleted after %s", pods, deadline, report.Count(others, "other object")+agree(others, " is", " are"), them)
	if !ordered.On {
		summary = fmt.Sprintf("progressing: %s terminating normally and %s; the namespace controller deletes every type at once (no ordered namespace deletion on this release), so the %s not wait for %s", pods, deadline, report.Count(others, "other object")+agree(others, " does", " do"), them)
	}
	return cause(catalog.WithinGracePeriod, report.Info, 0.9, summary, evidence,
		step(catalog.WithinGracePeriod, "wait-pods", command("kubectl", "terminating", "wait", "ns/"+t.Ref.Name, "--timeout", "5m")))
}

// forecastCauses: while a namespace progresses (its pods in grace), objects
// not deleted yet whose finalizer no controller will remove are bound to hold
// it once the namespace controller deletes them. Said now, as information:
// nothing is stuck yet.
func forecastCauses(s *observed.Snapshot, t *observed.Target) []report.Cause {
	var out []report.Cause
	for _, f := range sortedKeys(t.Contents.Pending) {
		if !catalog.ThirdPartyFinalizer(f) {
			continue
		}
		state, evidence := livenessOf(s, f, nil)
		if state != ownerGone && state != ownerDown {
			continue
		}
		n := t.Contents.Pending[f]
		why := "no controller that could remove it is found"
		if state == ownerDown {
			why = "its controller has no ready replica"
		}
		c := cause(catalog.FinalizerPending, report.Info, 0.6,
			fmt.Sprintf("forecast: once the pods are gone, %s carrying %s will be deleted, and %s: the namespace will then stay Terminating", report.Count(n, "object"), f, why),
			append([]report.Fact{report.Noted(fmt.Sprintf("live scan of namespace %s: %s not deleted yet %s finalizer %s (removed by %s)", t.Ref.Name, report.Count(n, "object"), agree(n, "carries", "carry"), f, catalog.FinalizerOwner(f).Owner))}, evidence...),
			findOwners(s, catalog.FinalizerPending, t, []string{f}),
			step(catalog.FinalizerPending, "restore-owner-early", "", "finalizer", f))
		c.About.Finalizers, c.About.Count = []string{f}, n
		out = append(out, c)
	}
	return out
}

// heldCause groups every object one finalizer holds, named as the report
// heads them (kind.group/name).
func heldCause(s *observed.Snapshot, c *observed.Contents, finalizer string, things func(n int) string, where string, tm timing) report.Cause {
	examples := make([]report.Item, 0, len(c.Held[finalizer]))
	var names []string
	for _, h := range c.Held[finalizer] {
		examples = append(examples, nested(s, h, tm))
		names = append(names, report.Name(h.Ref))
	}
	held := c.Held[finalizer][0]
	n := c.Finalizers[finalizer]
	scanned := fmt.Sprintf("live scan of %s: finalizer %s on %s", where, finalizer, report.Count(n, "object"))
	holding := fmt.Sprintf("%s %s held by finalizer %s (%s)", things(n), agree(n, "is", "are"), finalizer, strings.Join(names, ", "))
	// A finalizer with a rule of its own (a claim's pvc-protection judged by
	// the pods that use it...) speaks through the first example's diagnosis.
	worst := slices.Clone(examples)
	SortItems(worst)
	if top := worst[0]; len(top.Causes) > 0 && top.Causes[0].Code != string(catalog.FinalizerPending) && slices.Contains(top.Causes[0].About.Finalizers, finalizer) {
		fc := top.Causes[0]
		fc.Severity = top.Severity
		quoted{names: names}.on(&fc) // the example's cause's lists: not in place
		prefixed(&fc, holding+": ")
		fc.Facts = append([]report.Fact{report.Noted(scanned)}, fc.Facts...)
		fc.BlockedBy = examples
		return fc
	}
	judged := tm                 // the objects' deletion began with the parent's
	if tm.requestedAt.IsZero() { // a parent not being deleted (a preflight's): they are judged by their own
		judged = timingOf(held.Object, s.Now)
		judged.depth, judged.verdictOnly = tm.depth, tm.verdictOnly
	}
	fc := pendingFinalizerCauses(s, held, []heldBy{{name: finalizer}}, judged)[0]
	quoted{names: names}.on(&fc)
	prefixed(&fc, holding+": ")
	fc.BlockedBy = examples
	if tm.verdictOnly { // no evidence or steps to rewrite
		return fc
	}
	fc.Facts = append([]report.Fact{report.Noted(scanned)}, fc.Facts[1:]...)
	// Its last step, the removal by hand, is for every object the
	// finalizer holds, not the example's alone: each of their types.
	each := removeFromEachOf(heldTypes(c, finalizer), held.Ref.Namespace, finalizer)
	fc.Remediation[len(fc.Remediation)-1] = step(catalog.FinalizerPending, "remove-finalizer-everywhere", each, "finalizer", finalizer, "which", agree(n, "the", "all"), "objects", things(n))
	return fc
}

// heldTypes are the types of the objects a finalizer holds: those of its
// examples when they are all of them, else every type with objects being
// deleted (pods aside: they have their own diagnosis).
func heldTypes(c *observed.Contents, finalizer string) []string {
	var types []string
	if len(c.Held[finalizer]) >= c.Finalizers[finalizer] {
		for _, h := range c.Held[finalizer] {
			types = append(types, h.Ref.Resource)
		}
	} else {
		for r, n := range c.Counts {
			if r != observed.Pods && n > c.NotDeleted[r] {
				types = append(types, r.String())
			}
		}
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// scanEvidence lists the live counts by resource, to compare with what the
// namespace controller last reported.
func scanEvidence(c *observed.Contents) []report.Fact {
	if c == nil {
		return nil
	}
	resources := make([]schema.GroupResource, 0, len(c.Counts))
	for r := range c.Counts {
		resources = append(resources, r)
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].String() < resources[j].String() })
	out := []report.Fact{}
	for _, r := range resources {
		out = append(out, report.Noted(fmt.Sprintf("live scan: %s: %s left", r, report.Count(c.Counts[r], "object"))))
	}
	if len(resources) == 0 {
		out = append(out, report.Noted("live scan: no object left in the namespace"))
	}
	for _, sk := range c.Skipped {
		out = append(out, report.Noted(fmt.Sprintf("live scan: could not %s (%s)", sk.Check, sk.Reason)))
	}
	return out
}
