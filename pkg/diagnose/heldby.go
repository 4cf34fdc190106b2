package diagnose

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// What holds an object its controller cannot finish is often named by the
// object itself, whatever its kind: a node its spec or status names (a
// virtual machine's status.nodeName, a local volume's spec.ownerNodeID),
// where the cleanup must run and cannot once the node is gone or silent;
// and its own dependents being deleted (a launcher pod, a job), which its
// controller waits for. Both are judged as the pod rules and the foreground
// rule judge them, and nested as namespaces nest pods.

// namedNodeCauses reports the nodes a held object names that are gone or
// not reporting: nothing on them (the node agent a DaemonSet runs there,
// the kubelet) can do the cleanup its finalizers wait for.
func namedNodeCauses(s *observed.Snapshot, t *observed.Target, finalizers []heldBy, tm timing) []report.Cause {
	if t.Pod != nil {
		return nil // the pod rules judge a pod's node
	}
	var causes []report.Cause
	names := finalizerNames(finalizers)
	for _, ref := range observed.NodeReferences(t.Object) {
		n := nodeHealthOf(s, ref.Node)
		evidence := append([]report.Fact{report.FieldFact(ref.Field, ref.Node)}, n.evidence()...)
		evidence = append(evidence, nodeAgents(s, finalizers, ref.Node, n)...)
		sev := report.Critical
		if tm.overdue < settleTime {
			sev = report.Info
		}
		look := func(code catalog.Code) report.Step {
			return step(code, "check-named-node", kubectlOn("", "get", "node", ref.Node, "-o", "wide"))
		}
		switch {
		case n.missing:
			causes = append(causes, aboutNode([]report.Cause{cause(catalog.NodeNotFound, sev, 0.7,
				fmt.Sprintf("%s names node %s, which no longer exists: the cleanup %s waits for on that node cannot run", ref.Field, ref.Node, report.FirstFew(names)),
				evidence, append([]report.Step{look(catalog.NodeNotFound)}, removeByHand(catalog.NodeNotFound, t, finalizers)...)...)}, ref.Node)...)
		case n.unreachable():
			causes = append(causes, aboutNode([]report.Cause{cause(catalog.NodeUnreachable, sev, 0.7,
				fmt.Sprintf("%s names node %s, which stopped reporting%s: nothing on it can finish the cleanup %s waits for", ref.Field, ref.Node, n.since(), report.FirstFew(names)),
				evidence, append([]report.Step{look(catalog.NodeUnreachable), step(catalog.NodeUnreachable, "restore-named-node", "")},
					removeByHand(catalog.NodeUnreachable, t, finalizers)...)...)}, ref.Node)...)
		case n.notReady():
			causes = append(causes, aboutNode([]report.Cause{cause(catalog.NodeNotReady, settling(report.Warning, tm), 0.5,
				fmt.Sprintf("%s names node %s, which is NotReady (%s): the cleanup %s waits for on that node may not run", ref.Field, ref.Node, n.ready.Reason, report.FirstFew(names)),
				evidence, look(catalog.NodeNotReady), step(catalog.NodeNotReady, "repair-named-node", ""))}, ref.Node)...)
		}
	}
	return ofFinalizers(causes, names...)
}

// nodeAgents says, for a controller that runs as a DaemonSet (a node
// agent: one pod per node), that its pod on a node gone or not reporting
// cannot act.
func nodeAgents(s *observed.Snapshot, finalizers []heldBy, node string, n nodeHealth) []report.Fact {
	if s.Controllers == nil || n.alive() {
		return nil
	}
	state := "not reporting"
	if n.missing {
		state = "gone"
	}
	var out []report.Fact
	for _, f := range finalizers {
		for _, w := range ownerWorkloads(s.Controllers, f.name) {
			if strings.EqualFold(w.Kind, "DaemonSet") {
				out = append(out, report.Noted(fmt.Sprintf("DaemonSet %s/%s looks like the owner of %s: it runs one pod per node, and its pod on node %s cannot act (the node is %s)",
					w.Namespace, w.Name, f.name, node, state)))
			}
		}
	}
	return out
}

// maxNestedDependents bounds the dependents a held object's diagnosis nests.
const maxNestedDependents = 5

// dependentsDeleted diagnoses the dependents of t (objects whose
// ownerReferences name it) that are being deleted, the worst first, and
// quotes them as evidence; none for an owner in foreground deletion, whose
// rule nests them.
func dependentsDeleted(s *observed.Snapshot, t *observed.Target, tm timing) ([]report.Item, []report.Fact) {
	if slices.Contains(listedFinalizers(t.Object), any(metav1.FinalizerDeleteDependents)) {
		return nil, nil // the foreground rule nests them
	}
	var items []report.Item
	var evidence []report.Fact
	for _, d := range t.Dependents {
		if d.Object.GetDeletionTimestamp() == nil {
			continue
		}
		evidence = append(evidence, report.Noted(fmt.Sprintf("dependent %s: ownerReference to %s/%s, %s", refName(d.Ref), t.Ref.Kind, t.Ref.Name, deletionState(d))))
		items = append(items, nested(s, d, tm))
	}
	SortItems(items)
	return items[:min(len(items), maxNestedDependents)], evidence
}

// removeByHand is the last resort for each finalizer: removing it by hand,
// for when its controller is gone for good.
func removeByHand(code catalog.Code, t *observed.Target, finalizers []heldBy) []report.Step {
	var steps []report.Step
	for _, f := range finalizers {
		if f.spec {
			steps = append(steps, step(code, "remove-finalizer", removeCommand(t, f), "finalizer", f.name))
		} else {
			steps = append(steps, removeFinalizer(code, "remove-finalizer", t, f.name, "finalizer", f.name))
		}
	}
	return steps
}

func finalizerNames(finalizers []heldBy) []string {
	names := make([]string, 0, len(finalizers))
	for _, f := range finalizers {
		names = append(names, f.name)
	}
	return names
}

// trouble is an object a held object depends on that says it fails, or is
// paused: the way there (each field and the object it names), and its words
// or its pause. missing is the first object it depends on that does not
// exist, with its way there.
type trouble struct {
	path   []string
	at     *observed.Target
	words  []complaint
	paused *pause

	missing     *observed.ObjectRef
	missingPath []string
}

// namedTrouble follows what a held object's spec names (and what those
// name in turn, as the collector read them) to the first object whose
// status says it fails, or that is paused: a restore's backup's storage
// location Unavailable, a claim's snapshot in error, a Cluster API
// cluster's infrastructure object paused (its controller then never
// finishes deleting it, and the cluster waits for it).
func namedTrouble(s *observed.Snapshot, t *observed.Target) (trouble, []report.Fact) {
	var evidence []report.Fact
	type step struct {
		t    *observed.Target
		path []string
	}
	queue := []step{{t: t}}
	seen := map[*observed.Target]bool{t: true}
	var found trouble
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		refs := observed.NamedIn(from.t.Object)
		fieldOf := func(kind, name string) string {
			if i := slices.IndexFunc(refs, func(r observed.NamedRef) bool { return r.Names(kind, name) }); i >= 0 {
				return refs[i].Field
			}
			return "names"
		}
		for _, u := range from.t.Unfound {
			field := fieldOf(u.Kind, u.Name)
			evidence = append(evidence, report.Noted(fmt.Sprintf("%s %s: %s: not found", ownerOf(from.t, t), field, report.Name(u))))
			if found.missing == nil {
				found.missing, found.missingPath = &u, append(slices.Clone(from.path), field, report.Name(u))
			}
		}
		for _, n := range from.t.Named {
			if seen[n] {
				continue
			}
			seen[n] = true
			field := fieldOf(n.Ref.Kind, n.Ref.Name)
			path := append(slices.Clone(from.path), field, report.Name(n.Ref))
			evidence = append(evidence, report.Noted(fmt.Sprintf("%s %s: %s", ownerOf(from.t, t), field, report.Name(n.Ref))))
			if words := wordsOf(s, n, nil); len(words) > 0 {
				sortComplaints(words)
				for _, w := range words {
					evidence = append(evidence, ofObject(n.Ref, report.Name(n.Ref)+": ", w.evidence))
				}
				found.path, found.at, found.words = path, n, words
				return found, evidence
			}
			if p, ok := pausedBy(n.Object); ok { // its controller leaves it alone, its deletion included
				evidence = append(evidence, ofObject(n.Ref, report.Name(n.Ref)+": ", p.fact()))
				found.path, found.at, found.paused = path, n, &p
				return found, evidence
			}
			queue = append(queue, step{t: n, path: path})
		}
	}
	return found, evidence
}

// ownerOf names the object a reference is read from in the evidence:
// "reference" for the held object itself, else the named object.
func ownerOf(from, held *observed.Target) string {
	if from == held {
		return "reference"
	}
	return report.Name(from.Ref)
}
