package diagnose

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// podClaim is one ResourceClaim of a pod, with what its drivers publish on the node.
type podClaim struct {
	name     string
	claim    *resourcev1.ResourceClaim // nil: not found
	reserved bool                      // status.reservedFor names this pod
	drivers  []string                  // drivers of the allocated devices
	missing  []string                  // drivers without a ResourceSlice on the node
}

// podClaimsOf returns the pod's claims, or false when they were not read.
func podClaimsOf(s *observed.Snapshot, pod *corev1.Pod) ([]podClaim, bool) {
	names := observed.PodClaimNames(pod)
	nodeSlices, slicesRead := s.DRA.Slices[pod.Spec.NodeName]
	var out []podClaim
	for _, name := range names {
		claim, ok := s.DRA.Claims[types.NamespacedName{Namespace: pod.Namespace, Name: name}]
		if !ok {
			return nil, false
		}
		pc := podClaim{name: name, claim: claim}
		if claim != nil {
			pc.reserved = slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == pod.UID })
			if a := claim.Status.Allocation; a != nil {
				for _, r := range a.Devices.Results {
					if !slices.Contains(pc.drivers, r.Driver) {
						pc.drivers = append(pc.drivers, r.Driver)
					}
				}
			}
		}
		for _, d := range pc.drivers {
			if slicesRead && !slices.ContainsFunc(nodeSlices, func(sl resourcev1.ResourceSlice) bool { return sl.Spec.Driver == d }) {
				pc.missing = append(pc.missing, d)
			}
		}
		out = append(out, pc)
	}
	return out, len(names) > 0
}

// claimCauses explains claims the kubelet has not unprepared: it does so after
// stopping the containers and before writing the terminal phase.
func claimCauses(pod *corev1.Pod, claims []podClaim, tm timing) []report.Cause {
	var causes []report.Cause
	for _, pc := range claims {
		if pc.claim == nil || !pc.reserved {
			continue // deleted, or no longer reserved for the pod: nothing left to unprepare
		}
		evidence := []report.Fact{
			report.Noted(fmt.Sprintf("resourceclaim %s/%s: status.reservedFor names the pod; allocated by %s %s", pod.Namespace, pc.name, agree(len(pc.drivers), "driver", "drivers"), strings.Join(pc.drivers, ", "))),
			{Text: fmt.Sprintf("status.phase: %s with every container stopped: the kubelet unprepares claims before it writes the terminal phase", pod.Status.Phase), Field: "status.phase", Value: string(pod.Status.Phase)},
		}
		sev, confidence := settling(report.Warning, tm), 0.5
		summary := fmt.Sprintf("resource claim %s is not unprepared yet: its DRA driver's kubelet plugin on %s may be failing", pc.name, pod.Spec.NodeName)
		if len(pc.missing) > 0 {
			sev, confidence = report.Critical, 0.75
			summary = fmt.Sprintf("DRA driver %s publishes no ResourceSlice on %s (its kubelet plugin is not running), so claim %s cannot be unprepared", strings.Join(pc.missing, ", "), pod.Spec.NodeName, pc.name)
			evidence = append(evidence, report.Noted(fmt.Sprintf("resourceslices with spec.nodeName=%s: none of driver %s", pod.Spec.NodeName, strings.Join(pc.missing, ", "))))
		}
		causes = append(causes, cause(catalog.ResourceClaimCleanupPending, sev, confidence, summary, evidence,
			step(catalog.ResourceClaimCleanupPending, "check-plugin", then(kubectl("", "get", "resourceslices", "--field-selector", "spec.nodeName="+pod.Spec.NodeName), kubectl("", "get", "pods", "-A", "-o", "wide", "--field-selector", "spec.nodeName="+pod.Spec.NodeName))),
			step(catalog.ResourceClaimCleanupPending, "restore-plugin", ""),
			forceDelete(catalog.ResourceClaimCleanupPending, "force-delete", pod)))
	}
	return causes
}

func claimsCheck(claims []podClaim, known bool) (report.Check, bool) {
	if !known {
		return report.Check{}, false
	}
	var pending []string
	for _, pc := range claims {
		if pc.claim != nil && pc.reserved {
			pending = append(pending, pc.name)
		}
	}
	if len(pending) > 0 {
		return report.Check{Name: "resource claims unprepared", Status: report.Fail, Detail: "still reserved for the pod: " + strings.Join(pending, ", ")}, true
	}
	return report.Check{Name: "resource claims unprepared", Status: report.Pass, Detail: "no claim reserved for the pod"}, true
}
