package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// terminatingCRD is the widgets CRD, deleted `requested` ago, with instances
// left in namespaces (by count) held by finalizer f.
func terminatingCRD(requested time.Duration, reason string, counts map[string]int, f string) *observed.Snapshot {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName("widgets.example.com")
	u.SetDeletionTimestamp(ago(requested))
	u.SetFinalizers([]string{crdCleanupFinalizer})
	s := observed.New(now)
	t := &observed.Target{Object: u, Ref: report.ObjectRef{Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions.apiextensions.k8s.io", Name: u.GetName()}}
	s.Targets = []*observed.Target{t}
	s.CRDs[u.GetName()] = &observed.CRD{Name: u.GetName(), Group: "example.com", Kind: "Widget", Plural: "widgets", Namespaced: true,
		Terminating: &metav1.Condition{Type: "Terminating", Status: "True", Reason: reason, Message: "CustomResource deletion is in progress", LastTransitionTime: *ago(requested)}}
	t.Contents = &observed.Contents{ByNamespace: counts, Finalizers: map[string]int{}, Held: map[string][]*observed.Target{}}
	for ns, n := range counts {
		t.Contents.Finalizers[f] += n
		w := widget(requested, f)
		w.SetNamespace(ns)
		t.Contents.Held[f] = append(t.Contents.Held[f], snap(w).Targets[0])
	}
	s.Controllers = &observed.Controllers{}
	return s
}

func TestCRDInstancesRemaining(t *testing.T) {
	s := terminatingCRD(10*time.Minute, "InstanceDeletionInProgress", map[string]int{"shop": 3, "lab": 1}, "widgets.acme.io/cleanup")
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"CRDInstancesRemaining", "FinalizerPending"}, report.Critical, "live scan: 4 instances left: lab: 1, shop: 3")
	top := it.Causes[0]
	if !strings.HasPrefix(top.Summary, "4 Widget instances remain (lab: 1, shop: 3)") || !strings.Contains(top.Summary, "nothing will remove the finalizer") {
		t.Errorf("summary names the instances and their root cause: %q", top.Summary)
	}
	if len(top.BlockedBy) != 2 || top.BlockedBy[0].Causes[0].Code != "FinalizerPending" || len(it.Causes[1].BlockedBy) != 0 {
		t.Errorf("the examples are nested once, under the CRD's cause: %d and %d", len(top.BlockedBy), len(it.Causes[1].BlockedBy))
	}
	last := top.Remediation[len(top.Remediation)-1]
	if !strings.Contains(last.Action, "Never remove "+crdCleanupFinalizer) || !strings.Contains(last.Risk, "reappear") {
		t.Errorf("last step: %+v", last)
	}
}

func TestCRDRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested time.Duration
		reason    string
		counts    map[string]int
		want      []string
		severity  report.Severity
	}{
		{"deletion failed", 10 * time.Minute, "InstanceDeletionFailed", map[string]int{"shop": 1}, []string{"CRDInstancesRemaining", "FinalizerPending"}, report.Critical},
		{"nothing left: apiextensions finishes", 10 * time.Minute, "InstanceDeletionCheck", map[string]int{}, []string{"FinalizerPending"}, report.Warning},
		{"just deleted", 5 * time.Second, "InstanceDeletionInProgress", map[string]int{"shop": 1}, []string{"CRDInstancesRemaining", "FinalizerPending"}, report.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(terminatingCRD(tc.requested, tc.reason, tc.counts, "kubernetes")).Items[0]
			if got := codes(it); !slices.Equal(got, tc.want) || it.Severity != tc.severity {
				t.Errorf("codes %v severity %s, want %v %s", got, it.Severity, tc.want, tc.severity)
			}
		})
	}
}

// The step that removes a finalizer from the objects it holds (a CRD's
// instances, a namespace's leftovers) removes that one finalizer, from each
// object being deleted that has it, tested at its index: run for real with
// jq and sh, a kubectl stub serving the objects (one with a hostile name,
// one not being deleted) and recording the patches.
func TestRemoveFromEachRemovesOneFinalizerEach(t *testing.T) {
	dir, log := stubs(t)
	const deleted = `"deletionTimestamp":"2026-11-22T11:00:00Z"`
	list := `{"items":[
	 {"metadata":{"name":"a","namespace":"shop",` + deleted + `,"finalizers":["other.io/x","acme.io/keep"]}},
	 {"metadata":{"name":"b","namespace":"shop",` + deleted + `,"finalizers":["other.io/x"]}},
	 {"metadata":{"name":"not-deleted","namespace":"shop","finalizers":["acme.io/keep"]}},
	 {"metadata":{"name":"c$(touch PWNED)","namespace":"lab;touch PWNED",` + deleted + `,"finalizers":["acme.io/keep"]}},
	 {"metadata":{"name":"cluster-wide",` + deleted + `,"finalizers":["acme.io/keep"]}}]}`
	if err := os.WriteFile(filepath.Join(dir, "list.json"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectlStub := "#!/bin/sh\nif [ \"$1\" = get ]; then cat \"$LIST\"; exit; fi\n" +
		"{ printf kubectl; for a in \"$@\"; do printf '\\037%s' \"$a\"; done; printf '\\036'; } >> \"$CALLS\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "kubectl"), []byte(kubectlStub), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "bin", "jq")); err != nil { // the real one
		t.Fatal(err)
	}
	t.Setenv("LIST", filepath.Join(dir, "list.json"))
	patch := func(i int) string {
		return fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":"acme.io/keep"},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, i)
	}
	want := [][]string{
		{"kubectl", "patch", "widgets.example.com", "a", "-n", "shop", "--type=json", "-p", patch(1)},
		{"kubectl", "patch", "widgets.example.com", "c$(touch PWNED)", "-n", "lab;touch PWNED", "--type=json", "-p", patch(0)},
		{"kubectl", "patch", "widgets.example.com", "cluster-wide", "--type=json", "-p", patch(0)},
	}
	for _, ns := range []string{"", "shop"} {
		if calls := runSuggested(t, dir, log, removeFromEach("widgets.example.com", ns, "acme.io/keep")); !slices.EqualFunc(calls, want, slices.Equal) {
			t.Errorf("namespace %q: calls:\n%q\nwant:\n%q", ns, calls, want)
		}
	}
	// Several types: one loop, each type's objects patched through it (the
	// stub serves the same list for each; a hostile type name stays one word).
	types := []string{"widgets.example.com", "g$(touch PWNED).example.com"}
	var both [][]string
	for _, r := range types {
		for _, w := range want {
			both = append(both, append([]string{w[0], w[1], r}, w[3:]...))
		}
	}
	cmd := removeFromEachOf(types, "shop", "acme.io/keep")
	if calls := runSuggested(t, dir, log, cmd); !slices.EqualFunc(calls, both, slices.Equal) || strings.Count(cmd, "kubectl get") != 1 {
		t.Errorf("two types: %s\ncalls:\n%q\nwant:\n%q", cmd, calls, both)
	}
}
