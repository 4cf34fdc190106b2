package diagnose

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// foreground: a forecast deletion sent with --cascade=foreground, or a
// dependent the garbage collector would delete in the foreground for one.
func foreground(t *observed.Target) bool {
	return t.Cascade == metav1.DeletePropagationForeground
}

// dependentNeeds: deleted in the foreground, an owner waits for its
// dependents.
func dependentNeeds(t *observed.Target) Evidence {
	if foreground(t) {
		return DependentEvidence
	}
	return 0
}

// dependentForecasts: deleted in the foreground, an owner gets finalizer
// foregroundDeletion and waits for each dependent with blockOwnerDeletion,
// which the garbage collector deletes in the foreground in turn (Deployment
// -> ReplicaSet -> Pod). A dependent whose own deletion would stick (its
// finalizer's controller gone, its node dead) or is stuck already holds
// the owner, as why reports once it does. In the background (the default)
// the owner goes at once, whatever its dependents do.
func dependentForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if !foreground(t) || t.Dependents == nil {
		return nil
	}
	uid := t.Object.GetUID()
	evidence := []report.Fact{report.Noted("deleted with propagationPolicy Foreground, it would get finalizer foregroundDeletion, which the garbage collector removes once every dependent with blockOwnerDeletion is gone")}
	var stuck []report.Item
	for _, d := range t.Dependents {
		if !d.BlocksOwnerDeletion(uid) {
			continue
		}
		it := preflightTarget(s, d)
		verdict := "nothing found that would hold its deletion"
		if it.Stuck {
			verdict = fmt.Sprintf("%s (%s)", it.Causes[0].Code, it.Severity)
			stuck = append(stuck, it)
		}
		evidence = append(evidence, report.Noted(fmt.Sprintf("dependent %s: blockOwnerDeletion true, %s: %s", refName(d.Ref), deletionState(d), verdict)))
	}
	if len(stuck) == 0 {
		return nil
	}
	SortItems(stuck)
	chain, root := chainOf(stuck[0])
	state := "whose deletion would stick"
	if !root.Forecast {
		state = "which is stuck already"
	}
	waits := "it would wait on "
	if len(stuck) > 1 {
		waits = fmt.Sprintf("it would wait on %d dependents whose deletion would stick; ", len(stuck))
	}
	summary := fmt.Sprintf("deleted with --cascade=foreground, %s%s, %s: %s", waits, strings.Join(chain, " -> "), state, whyItWouldStick(root.Causes[0]))
	c := cause(catalog.ForegroundDeletionBlocked, stuck[0].Severity, 0.85, summary, evidence,
		step(catalog.ForegroundDeletionBlocked, "resolve-dependents-before", kubectl(root.Object.Namespace, "terminating", "preflight", strings.ToLower(root.Object.Resource)+"/"+root.Object.Name)),
		step(catalog.ForegroundDeletionBlocked, "delete-in-background", kubectlOn(t.Ref.Namespace, "delete", strings.ToLower(t.Ref.Resource), t.Ref.Name, "--cascade=background")))
	c.About = report.About{Finalizers: []string{metav1.FinalizerDeleteDependents}, Object: &stuck[0].Object, Count: len(stuck)}
	c.BlockedBy = stuck
	return []report.Cause{c}
}
