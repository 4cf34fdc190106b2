package catalog

import "strings"

// Owner says who removes a finalizer and what it protects.
type Owner struct {
	Owner      string
	HoldsWhile string
}

// knownFinalizers is the catalogue of finalizers whose owner is known
// (causes.md section 3). Any other domain-qualified name belongs to a
// third-party controller.
var knownFinalizers = map[string]Owner{
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

// FinalizerOwner returns the known owner of a finalizer, or a third-party description.
func FinalizerOwner(finalizer string) Owner {
	if o, ok := knownFinalizers[finalizer]; ok {
		return o
	}
	if strings.HasPrefix(finalizer, "external-attacher/") {
		return Owner{"CSI external-attacher " + strings.TrimPrefix(finalizer, "external-attacher/"), "detach is not finished"}
	}
	return Owner{"a third-party controller", "that controller removes it; if the controller is gone, nothing ever will"}
}

// ThirdPartyFinalizer reports a finalizer that no Kubernetes component owns:
// its controller comes from an add-on, which may be gone.
func ThirdPartyFinalizer(f string) bool {
	if _, ok := knownFinalizers[f]; ok {
		return false
	}
	return !strings.HasPrefix(f, "external-attacher/")
}
