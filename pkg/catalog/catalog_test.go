package catalog

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Every code has a heading of its own in docs/causes.md (or shares one, "### A, B").
func TestEveryCodeIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/causes.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(string(data), -1) {
		for _, c := range strings.Split(m[1], ",") {
			documented[strings.TrimSpace(c)] = true
		}
	}
	for _, c := range Codes() {
		if !documented[string(c)] {
			t.Errorf("code %s has no entry in docs/causes.md", c)
		}
	}
	for d := range documented {
		if _, ok := Lookup(Code(d)); !ok {
			t.Errorf("docs/causes.md documents %q, which is not in the catalogue", d)
		}
	}
}

// The codes causes.md (the design) requires, by name: a rename breaks runbooks.
func TestShippedCodesKeepTheirNames(t *testing.T) {
	shipped := []string{"WithinGracePeriod", "GracePeriodOverrun", "NegativeGracePeriod", "NodeUnreachable", "NodeNotReady",
		"NodeNotFound", "ContainerKillFailed", "ContainersStillRunning", "SandboxTeardownFailed", "VolumeTeardownPending",
		"ResourceClaimCleanupPending", "CgroupCleanupPending", "AdmissionWebhookDenied", "AdmissionPolicyDenied",
		"MirrorPodKubeletNotSyncing", "FinalizerPending", "ForegroundDeletionBlocked", "PVCInUse", "PVBound",
		"VolumeDetachFailed", "LoadBalancerCleanupPending", "CRDInstancesRemaining", "ConversionWebhookFailing",
		"APIServiceUnavailable", "NamespaceDiscoveryFailure", "NamespaceContentFailure", "NamespaceContentRemaining",
		"NamespaceFinalizersRemaining", "PodStuckTerminating", "NamespaceControllerInactive", "DiagnosisIncomplete"}
	for _, c := range shipped {
		if _, ok := Lookup(Code(c)); !ok {
			t.Errorf("shipped code %s is missing from the catalogue", c)
		}
	}
}

func TestLessRanksSeverityThenRootThenConfidence(t *testing.T) {
	c := func(code Code, sev report.Severity, conf float64) report.Cause {
		return report.Cause{Code: string(code), Severity: sev, Confidence: conf}
	}
	cases := []struct {
		name        string
		first, then report.Cause
	}{
		{"severity first", c(GracePeriodOverrun, report.Critical, 0.1), c(NodeUnreachable, report.Warning, 1)},
		{"root before symptom", c(NodeUnreachable, report.Warning, 0.1), c(ContainersStillRunning, report.Warning, 1)},
		{"then confidence", c(FinalizerPending, report.Warning, 0.9), c(FinalizerPending, report.Warning, 0.5)},
	}
	for _, tc := range cases {
		if !Less(tc.first, tc.then) || Less(tc.then, tc.first) {
			t.Errorf("%s: %s should rank before %s", tc.name, tc.first.Code, tc.then.Code)
		}
	}
}
