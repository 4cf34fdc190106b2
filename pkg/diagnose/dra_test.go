package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// draStateBPrime: containers stopped, phase Running, a GPU claim reserved for
// the pod; the driver publishes a slice on the node or not.
func draStateBPrime(driverOnNode bool) *observed.Snapshot {
	p := allStopped(terminatingPod(10*time.Minute, 30))
	claimName := "gpu-claim"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claimName}}
	s := healthySnap(p)
	s.DRA.Claims[key("shop/gpu-claim")] = &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: "shop"},
		Status: resourcev1.ResourceClaimStatus{
			Allocation:  &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web-0", UID: "pod-uid"}},
		}}
	s.DRA.Slices["node-1"] = nil
	if driverOnNode {
		nodeName := "node-1"
		s.DRA.Slices["node-1"] = []resourcev1.ResourceSlice{{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: &nodeName}}}
	}
	return s
}

func TestResourceClaimCleanupPending(t *testing.T) {
	for _, tc := range []struct {
		name     string
		onNode   bool
		severity report.Severity
		evidence string
	}{
		{"driver's kubelet plugin gone", false, report.Critical, "none of driver gpu.example.com"},
		{"driver present, unprepare not done", true, report.Warning, "status.reservedFor names the pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(draStateBPrime(tc.onNode)).Items[0]
			if got := codes(it); !slices.Equal(got, []string{"ResourceClaimCleanupPending", "SandboxTeardownFailed"}) {
				t.Fatalf("codes = %v", got)
			}
			if it.Severity != tc.severity || !slices.ContainsFunc(it.Causes[0].Evidence, func(e string) bool { return strings.Contains(e, tc.evidence) }) {
				t.Errorf("severity %s evidence %q", it.Severity, it.Causes[0].Evidence)
			}
			if !slices.ContainsFunc(it.Checks, func(c report.Check) bool { return c.Name == "resource claims unprepared" && c.Status == report.Fail }) {
				t.Errorf("checks: %+v", it.Checks)
			}
		})
	}
}

func TestPodClaimNamesFromTemplates(t *testing.T) {
	generated := "web-0-gpu-x7k2"
	p := &corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("gpu-template")}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &generated}}}}
	if got := observed.PodClaimNames(p); !slices.Equal(got, []string{generated}) {
		t.Errorf("claim names = %v", got)
	}
}
