package diagnose

import (
	"fmt"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// finalizerOwner says who removes a finalizer and what it protects.
type finalizerOwner struct {
	owner      string
	holdsWhile string
}

// knownFinalizers is the catalogue of finalizers whose owner is known
// (causes.md section 3). Any other domain-qualified name belongs to a
// third-party controller.
var knownFinalizers = map[string]finalizerOwner{
	"kubernetes":                                          {"namespace controller (kube-controller-manager)", "content remains in the namespace or discovery fails"},
	"foregroundDeletion":                                  {"garbage collector (kube-controller-manager)", "dependents with blockOwnerDeletion: true still exist"},
	"orphan":                                              {"garbage collector (kube-controller-manager)", "dependents are being orphaned"},
	"kubernetes.io/pvc-protection":                        {"PVC protection controller (kube-controller-manager)", "a scheduled pod, in any phase, references the claim"},
	"kubernetes.io/pv-protection":                         {"PV protection controller (kube-controller-manager)", "the volume is still Bound"},
	"kubernetes.io/pv-controller":                         {"PV controller (kube-controller-manager)", "the backend volume is not deleted yet"},
	"batch.kubernetes.io/job-tracking":                    {"Job controller (kube-controller-manager)", "the Job controller has not counted the pod"},
	"customresourcecleanup.apiextensions.k8s.io":          {"apiextensions (kube-apiserver)", "instances of the CRD remain"},
	"service.kubernetes.io/load-balancer-cleanup":         {"cloud service controller (cloud-controller-manager)", "the cloud load balancer is not deleted"},
	"external-provisioner.volume.kubernetes.io/finalizer": {"CSI external-provisioner", "the backend volume is not deleted yet"},
}

// ownerOf returns the known owner of a finalizer, or a third-party description.
func ownerOf(finalizer string) finalizerOwner {
	if o, ok := knownFinalizers[finalizer]; ok {
		return o
	}
	if strings.HasPrefix(finalizer, "external-attacher/") {
		return finalizerOwner{"CSI external-attacher " + strings.TrimPrefix(finalizer, "external-attacher/"), "detach is not finished"}
	}
	return finalizerOwner{"a third-party controller", "that controller removes it; if the controller is gone, nothing ever will"}
}

// finalizerCauses explains metadata.finalizers that still hold an object.
func finalizerCauses(finalizers []string, ref report.ObjectRef, tm timing) []report.Cause {
	if len(finalizers) == 0 {
		return nil
	}
	// Controllers remove their finalizers within seconds of a delete.
	sev, confidence := settling(report.Warning, tm), 0.7
	evidence := []string{fmt.Sprintf("metadata.finalizers: [%s]", strings.Join(finalizers, ", "))}
	for _, f := range finalizers {
		o := ownerOf(f)
		evidence = append(evidence, fmt.Sprintf("finalizer %s: removed by %s; holds while %s", f, o.owner, o.holdsWhile))
	}
	target := fmt.Sprintf("%s %s%s", strings.ToLower(ref.Resource), ref.Name, nsFlag(ref.Namespace))
	return []report.Cause{cause(catalog.FinalizerPending, sev, confidence,
		fmt.Sprintf("deletion waits for %d finalizer(s) to be removed: %s", len(finalizers), strings.Join(finalizers, ", ")),
		evidence,
		step("Find the controller that owns each finalizer and bring it back; it removes the finalizer itself", "", "none"),
		step("Only if that controller is gone for good: remove the finalizer by hand",
			fmt.Sprintf("kubectl patch %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'", target),
			"skips the cleanup the finalizer protects (external resources, dependent objects) and leaves it undone"),
	)}
}
