package diagnose

import (
	"fmt"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// finalizerCauses explains metadata.finalizers that still hold an object,
// with how alive each third-party finalizer's controller looks.
func finalizerCauses(s *snapshot.Snapshot, finalizers []string, ref report.ObjectRef, tm timing) []report.Cause {
	if len(finalizers) == 0 {
		return nil
	}
	// Controllers remove their finalizers within seconds of a delete.
	sev, confidence := settling(report.Warning, tm), 0.7
	evidence := []string{fmt.Sprintf("metadata.finalizers: [%s]", strings.Join(finalizers, ", "))}
	var gone, down, healthy []string
	for _, f := range finalizers {
		o := catalog.FinalizerOwner(f)
		evidence = append(evidence, fmt.Sprintf("finalizer %s: removed by %s; holds while %s", f, o.Owner, o.HoldsWhile))
		if !catalog.ThirdPartyFinalizer(f) {
			continue
		}
		state, ev := ownerLiveness(s.Controllers, f)
		evidence = append(evidence, ev...)
		switch state {
		case ownerGone:
			gone = append(gone, f)
		case ownerDown:
			down = append(down, f)
		case ownerHealthy:
			healthy = append(healthy, f)
		}
	}
	summary := fmt.Sprintf("deletion waits for %d finalizer(s) to be removed: %s", len(finalizers), strings.Join(finalizers, ", "))
	switch {
	case tm.overdue < settleTime:
	case len(down) > 0:
		sev, confidence = report.Critical, 0.7
		summary = fmt.Sprintf("the controller that removes %s has no ready replica: nothing removes the finalizer", strings.Join(down, ", "))
	case len(gone) > 0:
		sev, confidence = report.Critical, 0.6
		summary = fmt.Sprintf("no controller that could remove %s is found in the cluster: nothing will remove the finalizer", strings.Join(gone, ", "))
	case len(healthy) > 0:
		confidence = 0.5
		summary = fmt.Sprintf("the controller that removes %s looks healthy but has not removed it: read its logs for the cleanup it is failing", strings.Join(healthy, ", "))
	}
	target := fmt.Sprintf("%s %s%s", strings.ToLower(ref.Resource), ref.Name, nsFlag(ref.Namespace))
	return []report.Cause{cause(catalog.FinalizerPending, sev, confidence, summary, evidence,
		step("Find the controller that owns each finalizer and bring it back; it removes the finalizer itself", "", "none"),
		step("Only if that controller is gone for good: remove the finalizer by hand",
			fmt.Sprintf("kubectl patch %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'", target),
			"skips the cleanup the finalizer protects (external resources, dependent objects) and leaves it undone"),
	)}
}
