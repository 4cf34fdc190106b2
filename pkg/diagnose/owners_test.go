package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

func TestOwnerTokens(t *testing.T) {
	cases := map[string][]string{
		"finalizers.cert-manager.io/certificate": {"cert-manager"},
		"example.com/x":                          nil,
		"widgets.acme.io/cleanup":                {"widgets", "acme"},
		"argocd.argoproj.io/finalizer":           {"argocd", "argoproj"},
	}
	for f, want := range cases {
		if got := ownerTokens(f); !slices.Equal(got, want) {
			t.Errorf("ownerTokens(%q) = %v, want %v", f, got, want)
		}
	}
}

func TestFinalizerOwnerLiveness(t *testing.T) {
	acme := func(ready int32) snapshot.Workload {
		return snapshot.Workload{Kind: "deployment", Namespace: "acme-system", Name: "acme-controller-manager", Desired: 1, Ready: ready}
	}
	cases := []struct {
		name     string
		ctl      *snapshot.Controllers
		severity report.Severity
		summary  string
		evidence string
	}{
		{"controller healthy: never claim it is gone", &snapshot.Controllers{Workloads: []snapshot.Workload{acme(1)}},
			report.Warning, "looks healthy", "deployment acme-system/acme-controller-manager: 1/1 ready"},
		{"controller with no ready replica", &snapshot.Controllers{Workloads: []snapshot.Workload{acme(0)}},
			report.Critical, "has no ready replica", "0/1 ready"},
		{"no controller at all", &snapshot.Controllers{APIGroups: []string{"acme.io"}, Workloads: []snapshot.Workload{{Kind: "deployment", Namespace: "kube-system", Name: "coredns", Desired: 2, Ready: 2}}},
			report.Critical, "no controller", "CRDs of API group acme.io are installed"},
		{"workloads not read: no claim", nil,
			report.Warning, "waits for 1 finalizer", "removed by a third-party controller"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(widget(10*time.Minute, "widgets.acme.io/cleanup"))
			s.Controllers = tc.ctl
			c := Diagnose(s).Items[0].Causes[0]
			if c.Severity != tc.severity || !strings.Contains(c.Summary, tc.summary) {
				t.Errorf("severity %s summary %q", c.Severity, c.Summary)
			}
			if !slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.Contains(e, tc.evidence) }) {
				t.Errorf("evidence %q lacks %q", c.Evidence, tc.evidence)
			}
		})
	}
}

func TestKubernetesFinalizersAreNotJudgedByWorkloads(t *testing.T) {
	s := snap(widget(10*time.Minute, "kubernetes.io/pvc-protection"))
	s.Controllers = &snapshot.Controllers{}
	if c := Diagnose(s).Items[0].Causes[0]; c.Severity != report.Warning || strings.Contains(strings.Join(c.Evidence, " "), "looks gone") {
		t.Errorf("kube-controller-manager's finalizers are not third-party: %+v", c)
	}
}
