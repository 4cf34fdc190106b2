package cmd

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// preflight ns/NAME forecasts a namespace's deletion from what is in it:
// exit 2 when an object it would delete carries a finalizer nothing in the
// cluster would remove, 0 when nothing would hold it; every item and cause
// is marked a forecast; a type alone forecasts every object of it in scope.
func TestPreflightNamespace(t *testing.T) {
	objs := cluster()
	for _, name := range []string{"preview", "calm"} {
		objs = append(objs, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name)},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	}
	objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "preview", UID: "uid-ledger", Finalizers: []string{"archive.example.com/keep"}}})
	clients := withConfigMaps(t, objs)

	out, _, err := execute(t, clients, "preflight", "ns/preview", "-o", "json")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitStuck)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	it := r.Items[0]
	if len(r.Items) != 1 || !it.Forecast || !it.Stuck || it.Causes[0].Code != "FinalizerPending" || !it.Causes[0].Forecast || it.Causes[0].Severity != report.Critical {
		t.Fatalf("%+v", r.Items)
	}
	if want := "once deleted, 1 object (configmap/ledger) would wait for finalizer archive.example.com/keep, and no controller"; !strings.HasPrefix(it.Causes[0].Summary, want) {
		t.Errorf("summary %q, want %q...", it.Causes[0].Summary, want)
	}
	if !strings.Contains(out, `"forecast": true`) {
		t.Errorf("the JSON marks the forecast: %s", out)
	}

	out, _, err = execute(t, clients, "preflight", "ns/preview")
	if ExitCode(err) != ExitStuck || !strings.HasPrefix(out, "namespace/preview  CRITICAL  not being deleted  its deletion WOULD STICK\n") {
		t.Errorf("exit %d, table:\n%s", ExitCode(err), out)
	}

	out, errOut, err := execute(t, clients, "preflight", "ns/calm")
	if err != nil || !strings.HasPrefix(out, "namespace/calm  CLEAR  not being deleted  nothing found that would hold it\n") || errOut != "" {
		t.Errorf("calm: exit %d (%v)\nstdout %s\nstderr %s", ExitCode(err), err, out, errOut)
	}

	// A type alone: every object of it in scope, being deleted or not.
	out, _, err = execute(t, clients, "preflight", "namespaces", "-A", "-o", "json")
	r = report.Report{}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]bool{}
	for _, it := range r.Items {
		verdicts[it.Object.Name] = it.Stuck
	}
	if ExitCode(err) != ExitStuck || !verdicts["preview"] || verdicts["calm"] || len(verdicts) < 3 {
		t.Errorf("preflight namespaces -A: exit %d, stuck by name %v", ExitCode(err), verdicts)
	}
	out, _, err = execute(t, clients, "preflight", "configmaps", "-n", "preview", "-o", "name")
	if ExitCode(err) != ExitStuck || out != "configmap/ledger\n" {
		t.Errorf("preflight configmaps -n preview: exit %d %q", ExitCode(err), out)
	}
	if _, errOut, err := execute(t, clients, "preflight", "configmaps", "-n", "calm"); err != nil || errOut != "No resources found in calm namespace.\n" {
		t.Errorf("nothing of the type: exit %d %q", ExitCode(err), errOut)
	}
}

// A forecast that could not read all it needed is partial: exit 1, saying
// what it could not read, never "clear".
func TestPreflightPartial(t *testing.T) {
	forbidPods := func(typed *kubefake.Clientset, _ *kube.Clients) {
		typed.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no rights"))
		})
	}
	_, _, err := execute(t, fakes(t, cluster(), forbidPods), "preflight", "ns/quiet")
	if ExitCode(err) != ExitError || err == nil ||
		!strings.HasPrefix(err.Error(), "nothing was found that would hold the deletion, but the report is partial: could not read list pods in namespace quiet (Forbidden)") {
		t.Errorf("exit %d, %v", ExitCode(err), err)
	}
}

// --cascade=foreground: the owner would wait for its dependents with
// blockOwnerDeletion, each forecast in turn (its own finalizer, whose
// controller nothing in the cluster looks like); in the background, the
// default, it goes at once.
func TestPreflightForegroundCascade(t *testing.T) {
	yes := true
	objs := append(cluster(),
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "parent", Namespace: "preview", UID: "uid-parent"}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "preview", UID: "uid-child", Finalizers: []string{"archive.example.com/keep"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "uid-parent", BlockOwnerDeletion: &yes}}}})
	clients := withConfigMaps(t, objs)

	out, _, err := execute(t, clients, "preflight", "configmap/parent", "-n", "preview", "--cascade=foreground", "-o", "json")
	var r report.Report
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d (%v): %v\n%s", ExitCode(err), err, jerr, out)
	}
	it := r.Items[0]
	if it.Causes[0].Code != "ForegroundDeletionBlocked" || !it.Causes[0].Forecast || len(it.Causes[0].BlockedBy) != 1 ||
		!strings.HasPrefix(it.Causes[0].Summary, "deleted with --cascade=foreground, it would wait on configmap/child, whose deletion would stick: once deleted, ConfigMap child would wait for finalizer archive.example.com/keep") {
		t.Fatalf("%+v", it.Causes)
	}
	if child := it.Causes[0].BlockedBy[0]; !child.Forecast || child.Causes[0].Code != "FinalizerPending" {
		t.Errorf("nested %+v", child)
	}
	for _, cascade := range []string{"", "--cascade=background", "--cascade=orphan"} {
		args := []string{"preflight", "configmap/parent", "-n", "preview"}
		if cascade != "" {
			args = append(args, cascade)
		}
		if out, _, err := execute(t, clients, args...); err != nil || !strings.Contains(out, "CLEAR") {
			t.Errorf("%q: exit %d (%v)\n%s", cascade, ExitCode(err), err, out)
		}
	}
}

// withConfigMaps is the fake cluster of objs, whose discovery serves
// configmaps too.
func withConfigMaps(t *testing.T, objs []runtime.Object) func() (*kube.Clients, error) {
	core := *apiResources[0]
	core.APIResources = append(append([]metav1.APIResource(nil), core.APIResources...),
		metav1.APIResource{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "delete"}})
	resources := append([]*metav1.APIResourceList{&core}, apiResources[1:]...)
	return fakes(t, objs, func(typed *kubefake.Clientset, _ *kube.Clients) {
		typed.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources
	})
}
