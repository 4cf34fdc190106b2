package diagnose

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func TestUnavailableAPIServiceIsTheRootCause(t *testing.T) {
	ns := terminatingNamespace(10*time.Minute, allConditions(
		nsCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
	)...)
	s := snap(ns)
	s.APIServices = []observed.APIService{
		{Name: "v1beta1.metrics.k8s.io", Group: "metrics.k8s.io", Version: "v1beta1", Service: "kube-system/metrics-server",
			Available: "False", Reason: "MissingEndpoints", Message: "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\"", ReadyEndpoints: new(int)},
		{Name: "v1.example.io", Group: "example.io", Version: "v1", Service: "x/y", Available: "True"},
	}
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"APIServiceUnavailable", "NamespaceDiscoveryFailure"}, report.Critical, "apiservice v1beta1.metrics.k8s.io: condition Available=False reason MissingEndpoints")
	steps := it.Causes[0].Remediation
	if last := steps[len(steps)-1]; last.Command != "kubectl delete apiservice v1beta1.metrics.k8s.io" ||
		last.Apply == nil || last.Apply.Verb != report.ActionDelete || last.Apply.Object.Name != "v1beta1.metrics.k8s.io" {
		t.Errorf("last step, which fix may send (its Service has no endpoint): %+v", last)
	}
	// Without the APIServices read, the condition alone is reported.
	it = Diagnose(snap(ns)).Items[0]
	expectCauses(t, it, []string{"NamespaceDiscoveryFailure"}, report.Critical, "discovery fails for metrics.k8s.io/v1beta1")
}

// The namespace controller has not (yet) written the discovery condition:
// an unavailable APIService still blocks it.
func TestUnavailableAPIServiceBeforeTheCondition(t *testing.T) {
	s := snap(terminatingNamespace(10*time.Minute, allConditions()...))
	s.APIServices = []observed.APIService{{Name: "v1.hung.example.com", Group: "hung.example.com", Version: "v1", Service: "bench/hung",
		Available: "False", Reason: "FailedDiscoveryCheck", Message: "failing or missing response from https://192.0.2.2:8443/apis/hung.example.com/v1: context deadline exceeded", ReadyEndpoints: intp(1)}}
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"APIServiceUnavailable"}, report.Critical, "reason FailedDiscoveryCheck")
	// Its backend has a ready endpoint: not orphaned, fix may not delete it.
	for _, st := range it.Causes[0].Remediation {
		if st.Apply != nil {
			t.Errorf("a step fix may send for an APIService whose backend answers: %+v", st)
		}
	}
}
