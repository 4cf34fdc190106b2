package diagnose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pendingFinalizerCauses explains finalizers that still hold an object and
// that no specific rule explains, with how alive each third-party
// finalizer's controller looks.
func pendingFinalizerCauses(s *observed.Snapshot, t *observed.Target, finalizers []heldBy, tm timing) []report.Cause {
	if len(finalizers) == 0 {
		return nil
	}
	names := finalizerNames(finalizers)
	// Controllers remove their finalizers within seconds of a delete.
	sev, confidence := settling(report.Warning, tm), 0.7
	// A verdict alone (tm.verdictOnly) skips the costliest of the evidence
	// and steps below, for each of thousands of held objects: Verdicts
	// drops them all.
	detail := !tm.verdictOnly
	var evidence []report.Fact
	if detail {
		evidence = append(make([]report.Fact, 0, 8), finalizerFields(t)...) // room for what follows, without regrowing
		evidence = append(evidence, ownerEvidence(s, names)...)
	}
	var gone, down, healthy []string
	for _, f := range finalizers {
		if !catalog.ThirdPartyFinalizer(f.name) {
			continue
		}
		state, ev := livenessOf(s, f.name, t)
		evidence = append(evidence, ev...)
		switch state {
		case ownerGone:
			gone = append(gone, f.name)
		case ownerDown:
			down = append(down, f.name)
		case ownerHealthy:
			healthy = append(healthy, f.name)
		}
	}
	said := complaints(s, t, finalizers)
	for _, c := range said {
		evidence = append(evidence, c.evidence)
	}
	writes := writesOfTarget(s, t.Object)
	if detail {
		evidence = append(evidence, writeEvidence(writes, names, s.Now)...)
	}
	paused, isPaused := pausedBy(t.Object)
	if isPaused {
		evidence = append(evidence, paused.fact())
	}
	summary := fmt.Sprintf("deletion waits for %s to be removed: %s", report.Count(len(finalizers), "finalizer"), report.FirstFew(names))
	var quotes quoted // what summary quotes of other causes
	var steps []report.Step
	if detail {
		steps = []report.Step{findOwners(s, catalog.FinalizerPending, t, names), step(catalog.FinalizerPending, "restore-owner", "")}
	}
	var quoted string // the reason of the complaint the summary quotes
	saysWhy := func(confidence float64) (report.Severity, float64) {
		top := said[0]
		quoted = top.reason
		summary = fmt.Sprintf("the controller that removes %s cannot finish the deletion: it reports %s: %s", report.FirstFew(names), top.reason, top.message)
		steps = []report.Step{
			step(catalog.FinalizerPending, "describe-object", kubectlOn(t.Ref.Namespace, "describe", strings.ToLower(t.Ref.Resource), t.Ref.Name)),
			step(catalog.FinalizerPending, "fix-what-it-reports", "", "reason", top.reason),
		}
		return report.Critical, confidence
	}
	working, isWorking := atWork(writes, tm, s.Now)
	var until time.Time // when the verdict lapses with time alone
	dependents, depEvidence := dependentsDeleted(s, t, tm)
	evidence = append(evidence, depEvidence...)
	stuck := slices.IndexFunc(dependents, func(it report.Item) bool { return it.Stuck })
	agent, agentWhy, agentEvidence := stuckAgent(s, t)
	evidence = append(evidence, agentEvidence...)
	depends, namedEvidence := namedTrouble(s, t)
	evidence = append(evidence, namedEvidence...)
	users := make([]string, 0, len(t.NamedBy)) // what still names it, and where
	var firstUser *observed.Target
	for _, u := range t.NamedBy {
		field, _ := observed.NamingField(u.Object, t.Ref.Kind, t.Ref.Name)
		evidence = append(evidence, report.Noted(fmt.Sprintf("named by %s: %s: %s (%s)", refName(u.Ref), field, t.Ref.Name, deletionState(u))))
		if u.Object.GetDeletionTimestamp() != nil {
			continue // going too, and often waiting for this one (a Cluster API cluster for its infrastructure): no user to remove
		}
		users = append(users, fmt.Sprintf("%s (%s)", report.Name(u.Ref), field))
		if firstUser == nil {
			firstUser = u
		}
	}
	switch {
	case tm.overdue < settleTime:
	case len(said) > 0 && said[0].direct:
		sev, confidence = saysWhy(0.85)
	case stuck >= 0: // it waits for its own dependents, and one cannot go
		sev, confidence = dependents[stuck].Severity, 0.75
		summary = fmt.Sprintf("the controller that removes %s waits for the object's dependents, being deleted: %s", report.FirstFew(names), chainSummary(dependents[stuck]))
		quotes = chainQuotes(dependents[stuck])
		steps = []report.Step{step(catalog.FinalizerPending, "diagnose-dependent", kubectl(dependents[stuck].Object.Namespace, "terminating", "why", report.Name(dependents[stuck].Object), "-o", "wide"))}
	case len(down) > 0:
		sev, confidence = report.Critical, 0.7
		summary = fmt.Sprintf("the controller that removes %s has no ready replica: nothing removes the finalizer", report.FirstFew(down))
	case isPaused && len(down) == 0: // told to leave it alone, whoever its controller is
		sev, confidence = report.Critical, 0.8
		summary = fmt.Sprintf("the object is paused (%s): a controller leaves a paused object alone, its deletion included", paused.field)
		steps = []report.Step{paused.unpause("unpause", t)}
		if len(healthy) > 0 {
			summary = fmt.Sprintf("the controller that removes %s looks healthy, but %s", report.FirstFew(healthy), summary)
		} else { // named unlike its finalizer (CAPA's capa-controller-manager), or not there
			steps = append(steps, findOwners(s, catalog.FinalizerPending, t, names))
		}
	case agentWhy != "": // the one replica that can act on the object's node cannot
		sev, confidence = report.Critical, 0.7
		summary = fmt.Sprintf("the node agent that removes %s on node %s (%s) cannot act: %s", agent.finalizer, agent.node.Node, agent.node.Field, agentWhy)
		steps = agentSteps(agent)
	case len(said) > 0 && said[0].fresh: // said about this deletion
		sev, confidence = saysWhy(0.8)
	case isWorking:
		sev, confidence = report.Info, 0.6
		until = working.at.Add(settleTime) // then, with no new write, it is not at work any more
		summary = fmt.Sprintf("progressing: field manager %s wrote %s %s ago, after the deletion began: the controller that removes %s is at work",
			working.manager, working.what(), report.HumanDuration(s.Now.Sub(working.at)), report.FirstFew(names))
		steps = []report.Step{step(catalog.FinalizerPending, "wait", waitCommand(t.Ref, 5*time.Minute))}
	case depends.paused != nil: // what it depends on is left alone by its own controller
		sev, confidence = report.Critical, 0.75
		summary = fmt.Sprintf("the controller that removes %s depends on %s (%s), which is paused (%s): its controller leaves it alone, its deletion included",
			report.FirstFew(names), report.Name(depends.at.Ref), strings.Join(depends.path[:len(depends.path)-1], " -> "), depends.paused.field)
		steps = []report.Step{
			step(catalog.FinalizerPending, "describe-dependency", kubectlOn(depends.at.Ref.Namespace, "describe", strings.ToLower(depends.at.Ref.Resource), depends.at.Ref.Name)),
			depends.paused.unpause("unpause-dependency", depends.at, "object", report.Name(depends.at.Ref)),
		}
	case depends.at != nil: // what it depends on says it fails
		sev, confidence = report.Critical, 0.7
		top := depends.words[0]
		quoted = top.reason
		summary = fmt.Sprintf("the controller that removes %s depends on %s (%s), which reports %s: %s",
			report.FirstFew(names), report.Name(depends.at.Ref), strings.Join(depends.path[:len(depends.path)-1], " -> "), top.reason, top.message)
		steps = []report.Step{
			step(catalog.FinalizerPending, "describe-dependency", kubectlOn(depends.at.Ref.Namespace, "describe", strings.ToLower(depends.at.Ref.Resource), depends.at.Ref.Name)),
			step(catalog.FinalizerPending, "fix-dependency", "", "object", report.Name(depends.at.Ref), "reason", top.reason),
		}
	case len(users) > 0: // its kin still name it: the controller may wait for them
		sev, confidence = report.Critical, 0.6
		summary = fmt.Sprintf("the controller that removes %s may wait for the %s that still %s the object: %s",
			report.FirstFew(names), report.Count(len(users), "object"), agree(len(users), "names", "name"), strings.Join(users[:min(len(users), 3)], ", "))
		steps = []report.Step{
			step(catalog.FinalizerPending, "read-users", kubectlOn(t.Ref.Namespace, "get", strings.ToLower(firstUser.Ref.Resource), firstUser.Ref.Name, "-o", "yaml")),
			step(catalog.FinalizerPending, "delete-users", ""),
		}
	case len(gone) > 0:
		sev, confidence = report.Critical, 0.6
		summary = fmt.Sprintf("no controller that could remove %s is found in the cluster: nothing will remove the finalizer", report.FirstFew(gone))
	case len(dependents) > 0: // none stuck
		sev, confidence = report.Info, 0.6
		summary = fmt.Sprintf("progressing: the object's %s being deleted %s not stuck (%s); the controller removes %s once %s gone",
			report.Count(len(dependents), "dependent"), agree(len(dependents), "is", "are"), nestedSummary(dependents[0]), report.FirstFew(names), agree(len(dependents), "it is", "they are"))
		quotes = nestedQuotes(dependents[0])
		steps = []report.Step{step(catalog.FinalizerPending, "wait-dependents", waitCommand(t.Ref, 5*time.Minute))}
	case len(said) > 0:
		sev, confidence = saysWhy(0.65)
	case depends.missing != nil: // what it depends on is gone: its controller may wait for it forever
		confidence = 0.5
		summary = fmt.Sprintf("the controller that removes %s may wait for %s (%s), which does not exist",
			report.FirstFew(names), report.Name(*depends.missing), strings.Join(depends.missingPath[:len(depends.missingPath)-1], " -> "))
		steps = []report.Step{
			step(catalog.FinalizerPending, "describe-object", kubectlOn(t.Ref.Namespace, "describe", strings.ToLower(t.Ref.Resource), t.Ref.Name)),
			step(catalog.FinalizerPending, "recreate-missing", "", "object", report.Name(*depends.missing)),
		}
	case len(healthy) > 0:
		confidence = 0.5
		summary = fmt.Sprintf("the controller that removes %s looks healthy but has not removed it", report.FirstFew(healthy))
		if last, silent := silentSince(writes, tm); silent {
			summary += fmt.Sprintf(", nor written to the object since its deletion began %s ago (its last write: %s, %s ago)",
				report.HumanDuration(tm.terminating), last.manager, report.HumanDuration(s.Now.Sub(last.at)))
		}
		summary += ": read its logs for the cleanup it is failing"
	}
	if detail {
		steps = append(steps, removeByHand(catalog.FinalizerPending, t, finalizers)...)
	}
	c := cause(catalog.FinalizerPending, sev, confidence, summary, evidence, steps...)
	quotes.on(&c)
	c.BlockedBy = dependents
	c.Until = until
	c.About.Finalizers = names
	c.About.Reason = quoted
	switch { // what fix reads before it removes one
	case len(healthy) > 0:
		c.About.Controller = "alive"
	case len(down) > 0:
		c.About.Controller = "down"
	case len(gone) > 0:
		c.About.Controller = "gone"
	}
	return append([]report.Cause{c}, namedNodeCauses(s, t, finalizers, tm)...)
}

// ownerEvidence says who removes each finalizer, once for the finalizers
// the catalogue says the same of (two hundred of one unknown operator).
func ownerEvidence(s *observed.Snapshot, finalizers []string) []report.Fact {
	type key struct{ finalizers string } // the same lines for every object they hold: composed once
	return slices.Clip(derive(s, key{strings.Join(finalizers, "\x00")}, func() []report.Fact { return ownerFacts(finalizers) }))
}

func ownerFacts(finalizers []string) []report.Fact {
	type says struct{ owner, holdsWhile string }
	var order []says
	named := map[says][]string{}
	for _, f := range finalizers {
		row := catalog.FinalizerOwner(f)
		o := says{row.Owner, row.HoldsWhile}
		if _, ok := named[o]; !ok {
			order = append(order, o)
		}
		named[o] = append(named[o], f)
	}
	evidence := make([]report.Fact, 0, len(order))
	for _, o := range order {
		fs := named[o]
		evidence = append(evidence, report.Noted(fmt.Sprintf("%s %s: removed by %s; holds while %s", agree(len(fs), "finalizer", "finalizers"), report.FirstFew(fs), o.owner, o.holdsWhile)))
	}
	return evidence
}

// findOwners is the read-only look for the controllers that remove
// finalizers: the Deployments, StatefulSets and DaemonSets named or
// labelled with their words, as ownerLiveness matches them, or with the
// name of the field manager that added the finalizer; for finalizers with
// no such words (Kubernetes' own), the object itself.
func findOwners(s *observed.Snapshot, code catalog.Code, t *observed.Target, finalizers []string) report.Step {
	var words []string
	for _, f := range finalizers {
		if catalog.ThirdPartyFinalizer(f) {
			words = append(words, ownerWords(f)...)
			words = append(words, addedBy(writesOfTarget(s, t.Object), f)...)
		}
	}
	if len(words) == 0 {
		return step(code, "read-object", kubectlOn(t.Ref.Namespace, "get", strings.ToLower(t.Ref.Resource), t.Ref.Name, "-o", "yaml"))
	}
	slices.Sort(words)
	words = slices.Compact(words)
	// The same look for every object of an operator's: composed once.
	type key struct {
		code              catalog.Code
		words, finalizers string
	}
	few := report.FirstFew(finalizers)
	return derive(s, key{code, strings.Join(words, "\x00"), few}, func() report.Step {
		grep := []string{"-Fi"}
		for _, w := range words {
			grep = append(grep, "-e", w)
		}
		return step(code, "find-owner", pipe(kubectl("", "get", "deployments,statefulsets,daemonsets", "-A", "--show-labels"), command("grep", grep...)), "finalizers", few)
	})
}

// finalizerFields quotes the fields that hold the finalizers.
func finalizerFields(t *observed.Target) []report.Fact {
	var out []report.Fact
	if ns := t.Namespace; ns != nil {
		out = append(out, specFinalizers(ns))
	}
	if hasMetadataFinalizers(t) || t.Namespace == nil {
		out = append(out, metadataFinalizers(t.Object))
	}
	return out
}

// metadataFinalizers quotes metadata.finalizers, the first few of a long
// list (the item's finalizers hold them all).
func metadataFinalizers(u *unstructured.Unstructured) report.Fact {
	return report.FieldFact("metadata.finalizers", "["+report.FirstFew(u.GetFinalizers())+"]")
}

// removeCommand removes one finalizer: from metadata.finalizers with a JSON
// patch that tests the entry first, from a namespace's spec.finalizers
// through its finalize subresource.
func removeCommand(t *observed.Target, f heldBy) string {
	if f.spec {
		name := t.Ref.Name
		return finalizeNamespace(name, ".spec.finalizers -= "+jsonText([]string{f.name}))
	}
	return removeFinalizerCommand(t.Ref, finalizerIndex(t.Object, f.name), f.name)
}

// removeFinalizer is the step that removes one finalizer from
// metadata.finalizers: the command for a person, the action for fix, for
// the version of the object the diagnosis read.
func removeFinalizer(code catalog.Code, id string, t *observed.Target, f string, args ...string) report.Step {
	s := step(code, id, removeFinalizerCommand(t.Ref, finalizerIndex(t.Object, f), f), args...)
	s.Apply = &report.Action{Verb: report.ActionRemoveFinalizer, Object: t.Ref, Finalizer: f, ResourceVersion: t.Object.GetResourceVersion()}
	return s
}

// finalizerIndex is f's place in metadata.finalizers, read in place: a
// copy of the list for each of its finalizers is quadratic.
func finalizerIndex(u *unstructured.Unstructured, f string) int {
	return slices.IndexFunc(listedFinalizers(u), func(v any) bool { return v == f })
}

// removeFinalizerCommand removes one finalizer with a JSON patch that tests
// the list first, so a concurrent change makes it fail instead of removing
// the wrong entry.
func removeFinalizerCommand(ref report.ObjectRef, index int, f string) string {
	return kubectlOn(ref.Namespace, "patch", strings.ToLower(ref.Resource), ref.Name, "--type=json", "-p",
		removeFinalizerPatch(index, f))
}

// removeFinalizerPatch is jsonText of the test and the remove, written
// around the finalizer's JSON string: the reflecting encoder of the two
// operations was a third of the remove-finalizer step, one per held object
// (TestRemoveFinalizerPatchIsTheEncodersText holds them equal).
func removeFinalizerPatch(index int, f string) string {
	path := "/metadata/finalizers/" + strconv.Itoa(index)
	if f == "" { // the encoder leaves an empty value out
		return jsonText([]patchOp{{Op: "test", Path: path, Value: f}, {Op: "remove", Path: path}})
	}
	return `[{"op":"test","path":"` + path + `","value":` + jsonText(f) + `},{"op":"remove","path":"` + path + `"}]`
}
