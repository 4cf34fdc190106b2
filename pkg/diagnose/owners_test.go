package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
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
	acme := func(ready int32) observed.Workload {
		return observed.Workload{Kind: "deployment", Namespace: "acme-system", Name: "acme-controller-manager", Desired: 1, Ready: ready}
	}
	cases := []struct {
		name     string
		ctl      *observed.Controllers
		severity report.Severity
		summary  string
		evidence string
	}{
		{"controller healthy: never claim it is gone", &observed.Controllers{Workloads: []observed.Workload{acme(1)}},
			report.Warning, "looks healthy", "deployment acme-system/acme-controller-manager: 1/1 ready"},
		{"controller with no ready replica", &observed.Controllers{Workloads: []observed.Workload{acme(0)}},
			report.Critical, "has no ready replica", "0/1 ready"},
		{"no controller at all", &observed.Controllers{APIGroups: []string{"acme.io"}, Workloads: []observed.Workload{{Kind: "deployment", Namespace: "kube-system", Name: "coredns", Desired: 2, Ready: 2}}},
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
	s.Controllers = &observed.Controllers{}
	if c := Diagnose(s).Items[0].Causes[0]; c.Severity != report.Warning || strings.Contains(strings.Join(c.Evidence, " "), "looks gone") {
		t.Errorf("kube-controller-manager's finalizers are not third-party: %+v", c)
	}
}

// An operator that runs one controller per finalizer: each finalizer is
// judged by the workloads that carry its path's word too (Config
// Connector's deletion defender, crash-looping beside a healthy controller
// manager), or more of its words (Tekton Chains' controller beside the
// Pipelines webhook), not by any workload of the operator; a generic path
// (cleanup) narrows nothing.
func TestEachFinalizerItsOwnController(t *testing.T) {
	ctl := &observed.Controllers{Workloads: []observed.Workload{
		{Kind: "StatefulSet", Namespace: "cnrm-system", Name: "cnrm-controller-manager", Desired: 1, Ready: 1},
		{Kind: "StatefulSet", Namespace: "cnrm-system", Name: "cnrm-deletiondefender", Desired: 1, Ready: 0},
	}}
	for f, want := range map[string]ownerState{
		"cnrm.cloud.google.com/deletion-defender": ownerDown,
		"cnrm.cloud.google.com/finalizer":         ownerHealthy, // a generic path: any of the operator's
		"cnrm.cloud.google.com/cleanup":           ownerHealthy,
	} {
		if got, _ := ownerLiveness(ctl, f, nil); got != want {
			t.Errorf("%s: state %d, want %d", f, got, want)
		}
	}
	// The workloads that carry more of its words: Tekton Chains' controller,
	// down, not the Pipelines webhook beside it.
	tekton := &observed.Controllers{Workloads: []observed.Workload{
		{Kind: "Deployment", Namespace: "tekton-pipelines", Name: "tekton-pipelines-webhook", Desired: 1, Ready: 1},
		{Kind: "Deployment", Namespace: "tekton-chains", Name: "tekton-chains-controller", Desired: 1, Ready: 0},
	}}
	if got, ev := ownerLiveness(tekton, "chains.tekton.dev", nil); got != ownerDown || slices.ContainsFunc(ev, func(f report.Fact) bool { return strings.Contains(f.Text, "webhook") }) {
		t.Errorf("chains.tekton.dev: state %d, evidence %v", got, ev)
	}
	u := widget(10*time.Minute, "cnrm.cloud.google.com/finalizer", "cnrm.cloud.google.com/deletion-defender")
	s := snap(u)
	s.Controllers = ctl
	c := Diagnose(s).Items[0].Causes[0]
	if c.Severity != report.Critical || c.Summary != "the controller that removes cnrm.cloud.google.com/deletion-defender has no ready replica: nothing removes the finalizer" {
		t.Errorf("why: %s %q", c.Severity, c.Summary)
	}
	notDeleted(u)
	s = snap(u)
	s.Controllers = ctl
	if it := Preflight(s).Items[0]; !it.Stuck || it.Severity != report.Critical ||
		!slices.ContainsFunc(it.Causes, func(c report.Cause) bool {
			return strings.Contains(c.Summary, "finalizer cnrm.cloud.google.com/deletion-defender, and its controller has no ready replica")
		}) {
		t.Errorf("preflight: %s %+v", it.Severity, it.Causes)
	}
}

// A controller named unlike its finalizer is found by what RBAC lets it
// write: the workloads whose service account may update the held object's
// resource (or its finalizers) in its group; a grant bound in another
// namespace, or to a wildcard group (never read), names none.
func TestAControllerFoundByItsGrant(t *testing.T) {
	build := func(grant observed.Grant, ready int32) report.Cause {
		u := heldWith("awscluster.infrastructure.cluster.x-k8s.io")
		s := snap(u)
		s.Targets[0].Ref.Resource = "awsclusters.infrastructure.cluster.x-k8s.io"
		s.Controllers = &observed.Controllers{
			Workloads: []observed.Workload{{Kind: "deployment", Namespace: "capa-system", Name: "capa-controller-manager", Desired: 1, Ready: ready, ServiceAccount: "capa-controller-manager"}},
			Grants:    []observed.Grant{grant},
		}
		return Diagnose(s).Items[0].Causes[0]
	}
	grant := observed.Grant{ServiceAccount: "capa-system/capa-controller-manager", APIGroups: []string{"infrastructure.cluster.x-k8s.io"},
		Resources: []string{"awsclusters", "awsclusters/status"}, Via: "clusterrole capa-manager-role (clusterrolebinding capa-manager-rolebinding)"}
	c := build(grant, 1)
	if !strings.Contains(c.Summary, "the controller that removes awscluster.infrastructure.cluster.x-k8s.io looks healthy") ||
		!hasLine(c.Evidence, "deployment capa-system/capa-controller-manager: 1/1 ready (its service account capa-controller-manager may update awsclusters.infrastructure.cluster.x-k8s.io: clusterrole capa-manager-role (clusterrolebinding capa-manager-rolebinding)") ||
		hasLine(c.Evidence, "looks gone") {
		t.Errorf("granted, ready: %s; evidence %q", c.Summary, c.Evidence)
	}
	if c := build(grant, 0); !strings.Contains(c.Summary, "has no ready replica") {
		t.Errorf("granted, down: %s", c.Summary)
	}
	for name, g := range map[string]observed.Grant{
		"another namespace's binding": func() observed.Grant { g := grant; g.Namespace = "elsewhere"; return g }(),
		"another group":               func() observed.Grant { g := grant; g.APIGroups = []string{"cluster.x-k8s.io"}; return g }(),
		"another account":             func() observed.Grant { g := grant; g.ServiceAccount = "capa-system/default"; return g }(),
	} {
		if c := build(g, 1); !strings.Contains(c.Summary, "no controller that could remove") {
			t.Errorf("%s: %s", name, c.Summary)
		}
	}
}
