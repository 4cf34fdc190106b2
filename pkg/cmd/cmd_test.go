package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

// The cluster every command test sees: a pod on a dead node, a pod inside its
// grace period, a pod held by a finalizer, a healthy pod, a terminating namespace.
func cluster() []runtime.Object {
	grace := int64(30)
	running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *ago(time.Hour)}}}}}
	pod := func(name, node string, deleted *metav1.Time, finalizers ...string) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: k8stypes.UID("uid-" + name), DeletionTimestamp: deleted,
				DeletionGracePeriodSeconds: &grace, Finalizers: finalizers},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
			Status: running,
		}
	}
	dur := int32(40)
	return []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "quiet"}},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "uid-old", DeletionTimestamp: ago(10 * time.Minute), DeletionGracePeriodSeconds: new(int64)},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{{
				Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain",
				Message: "Some resources are remaining: configmaps. has 1 resource instances", LastTransitionTime: *ago(9 * time.Minute)}}}},
		&corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "dead", UID: "uid-dead", ResourceVersion: "7"},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: *ago(20 * time.Minute)}}}},
		&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "dead", Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-21 * time.Minute)}, LeaseDurationSeconds: &dur}},
		&corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "live"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: *ago(time.Hour)}}}},
		&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Add(-5 * time.Second)}, LeaseDurationSeconds: &dur}},
		pod("web-0", "dead", ago(10*time.Minute)),
		pod("batch-0", "live", ago(-20*time.Second)),
		pod("cache-0", "live", ago(5*time.Minute), "example.com/drain"),
		pod("ok-0", "live", nil),
	}
}

var apiResources = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Verbs: []string{"get", "list", "delete"}},
		{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: []string{"get", "list", "delete"}},
		{Name: "nodes", SingularName: "node", Kind: "Node", ShortNames: []string{"no"}, Verbs: []string{"get", "list"}},
		{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
	}},
	{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease", Verbs: []string{"get", "list"}},
	}},
}

// fakes builds the clients over the cluster; tweak may add reactors.
func fakes(t *testing.T, objs []runtime.Object, tweak func(*kubefake.Clientset, *kube.Clients)) func() (*kube.Clients, error) {
	t.Helper()
	typed := kubefake.NewClientset(objs...)
	fd := typed.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = apiResources
	cached := memory.NewMemCacheClient(fd)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)

	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var metaObjs, dynObjs []runtime.Object
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		dynObjs = append(dynObjs, u)
		metaObjs = append(metaObjs, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
			ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), DeletionTimestamp: u.GetDeletionTimestamp(),
				DeletionGracePeriodSeconds: u.GetDeletionGracePeriodSeconds(), Finalizers: u.GetFinalizers(), OwnerReferences: u.GetOwnerReferences()}})
	}
	listKinds := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "pods"}: "PodList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
		{Version: "v1", Resource: "nodes"}: "NodeList", {Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}: "LeaseList",
		{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}: "APIServiceList",
	}
	metadata := metadatafake.NewSimpleMetadataClient(scheme, metaObjs...)
	metadata.PrependReactor("list", "*", byName(metadata.Tracker()))
	c := &kube.Clients{
		Typed:     typed,
		Metadata:  metadata,
		Dynamic:   dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dynObjs...),
		Discovery: cached,
		Mapper:    mapper,
	}
	if tweak != nil {
		tweak(typed, c)
	}
	return func() (*kube.Clients, error) { return c, nil }
}

// byName selects a list by metadata.name as the apiserver does (the fake
// ignores field selectors): one namespace's scan lists its namespace so.
func byName(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		l, ok := a.(k8stesting.ListActionImpl)
		if !ok || l.GetListRestrictions().Fields == nil {
			return false, nil, nil
		}
		name, ok := l.GetListRestrictions().Fields.RequiresExactMatch("metadata.name")
		if !ok {
			return false, nil, nil
		}
		list, err := tracker.List(l.GetResource(), l.GetKind(), l.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return true, nil, err
		}
		items = slices.DeleteFunc(items, func(o runtime.Object) bool {
			m, err := apimeta.Accessor(o)
			return err != nil || m.GetName() != name
		})
		return true, list, apimeta.SetList(list, items)
	}
}

// execute runs `kubectl terminating ARGS` over the fakes.
func execute(t *testing.T, clients func() (*kube.Clients, error), args ...string) (string, string, error) {
	t.Helper()
	return executeWith(t, clients, func(*Options) {}, args...)
}

// executeWith lets a test change more of the options (clock, terminal).
func executeWith(t *testing.T, clients func() (*kube.Clients, error), customize func(*Options), args ...string) (string, string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	err := executeOn(t, streams, clients, customize, args...)
	return out.String(), errOut.String(), err
}

// executeOn runs it with the given streams (a terminal's).
func executeOn(t *testing.T, streams genericiooptions.IOStreams, clients func() (*kube.Clients, error), customize func(*Options), args ...string) error {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", empty)
	root := newRoot(streams, func(o *Options) {
		o.newClients = clients
		o.now = func() time.Time { return now }
		customize(o)
	})
	root.SetArgs(args)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	return root.Execute()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make golden`)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run `make golden` if intended)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

func TestWhyPodOnDeadNode(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "why", "po/web-0", "-n", "shop")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit code %d (%v), want %d", ExitCode(err), err, ExitStuck)
	}
	golden(t, "why-web-0.golden", out)
}

func TestListAllNamespaces(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "list", "-A")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit code %d (%v)", ExitCode(err), err)
	}
	golden(t, "list-all.golden", out)
	wide, _, _ := execute(t, fakes(t, cluster(), nil), "list", "-A", "-o", "wide")
	golden(t, "list-all-wide.golden", wide)

	// Folded: one row per cause, per finalizer, per namespace.
	for _, by := range []string{"cause", "finalizer", "namespace"} {
		grouped, _, err := execute(t, fakes(t, cluster(), nil), "list", "-A", "--group-by", by)
		if ExitCode(err) != ExitStuck {
			t.Fatalf("--group-by %s: exit %d (%v)", by, ExitCode(err), err)
		}
		golden(t, "list-group-by-"+by+".golden", grouped)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "list", "-A", "--group-by", "colour"); ExitCode(err) != ExitError || !strings.Contains(err.Error(), "--group-by must be one of cause, finalizer, namespace") {
		t.Errorf("--group-by colour: exit %d, %v", ExitCode(err), err)
	}

	// In one namespace, as kubectl does: no NAMESPACE column.
	one, _, _ := execute(t, fakes(t, cluster(), nil), "list", "-n", "shop")
	if header, _, _ := strings.Cut(one, "\n"); !strings.HasPrefix(header, "NAME ") || !strings.Contains(one, "pod/web-0") {
		t.Errorf("list -n shop:\n%s", one)
	}
}

func TestWhyAllAsJSONAndYAML(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "why", "-A", "-o", "json")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit code %d (%v)", ExitCode(err), err)
	}
	var r struct {
		APIVersion, Kind string
		Items            []struct {
			Object struct{ Kind, Name string }
			Stuck  bool
			Causes []struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range r.Items {
		got = append(got, it.Object.Name+"="+it.Causes[0].Code)
	}
	want := "web-0=NodeUnreachable old=NamespaceContentRemaining cache-0=FinalizerPending batch-0=WithinGracePeriod"
	if strings.Join(got, " ") != want {
		t.Errorf("items = %v, want %s", got, want)
	}
	golden(t, "why-all.json.golden", out)
	y, _, _ := execute(t, fakes(t, cluster(), nil), "why", "-A", "-o", "yaml")
	golden(t, "why-all.yaml.golden", y)
}

func TestNamespaceScopeIncludesTheNamespaceItself(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "list", "-n", "old", "-o", "name")
	if ExitCode(err) != ExitStuck || out != "namespace/old\n" {
		t.Errorf("exit %d, out %q", ExitCode(err), out)
	}
}

func TestNothingStuckExitsZero(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "why", "pod/batch-0", "-n", "shop", "-o", "jsonpath={.items[0].causes[0].code}")
	if err != nil || out != "WithinGracePeriod" {
		t.Errorf("err %v out %q", err, out)
	}
}

func TestOlderThan(t *testing.T) {
	out, _, _ := execute(t, fakes(t, cluster(), nil), "list", "-A", "--older-than", "6m", "-o", "name")
	if out != "pod/web-0\nnamespace/old\n" {
		t.Errorf("--older-than 6m: %q", out)
	}
}

func TestKindAndStuckOnlyFilters(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "-A", "--kind", "ns", "-o", "name"}, "namespace/old\n"},
		{[]string{"list", "-A", "--kind", "Pod,namespaces", "-o", "name"}, "pod/web-0\nnamespace/old\npod/cache-0\npod/batch-0\n"},
		{[]string{"list", "-A", "--stuck-only", "-o", "name"}, "pod/web-0\nnamespace/old\npod/cache-0\n"},
		{[]string{"why", "-A", "--kind", "po", "--stuck-only", "-o", "name"}, "pod/web-0\npod/cache-0\n"},
	} {
		out, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitStuck || out != tc.want {
			t.Errorf("%v: exit %d (%v), out %q, want %q", tc.args, ExitCode(err), err, out, tc.want)
		}
	}
	// Only in-grace objects, hidden: nothing stuck, exit 0.
	if out, _, err := execute(t, fakes(t, cluster(), nil), "list", "pod/batch-0", "-n", "shop", "--stuck-only", "-o", "name"); err != nil || out != "" {
		t.Errorf("in grace, --stuck-only: err %v out %q", err, out)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"why", "nosuch/x"}, `the server doesn't have a resource type "nosuch"`},
		{[]string{"why", "pod/missing", "-n", "shop"}, `pods "missing" not found in namespace "shop"`},
		{[]string{"why", "pod/a/b"}, "single resource and name"},
		{[]string{"why", "pods", "pod/x"}, "no need to specify a resource type"},
		{[]string{"why", "pod/x", "-A"}, "cannot be retrieved by name across all namespaces"},
		{[]string{"list", "--older-than", "-5m"}, "must not be negative"},
		{[]string{"list", "-A", "-l", "a b c"}, `invalid --selector "a b c"`},
		{[]string{"list", "-o", "xml"}, `unknown output format "xml": -o takes wide, json, yaml, name, jsonpath=...`},
		{[]string{"list", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"list", "--kind", "pod/web-0"}, "--kind takes types, not names"},
		{[]string{"list", "--kind", "nosuch"}, `the server doesn't have a resource type "nosuch"`},
	}
	for _, tc := range cases {
		_, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || !strings.Contains(Explain(err), tc.want) {
			t.Errorf("%v: exit %d, error %v; want 1 and %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}

func TestIgnoreNotFound(t *testing.T) {
	out, errOut, err := execute(t, fakes(t, cluster(), nil), "why", "pod/missing", "-n", "shop", "--ignore-not-found")
	if err != nil || out != "" || errOut != "No terminating objects found in shop namespace.\n" {
		t.Errorf("err %v stdout %q stderr %q", err, out, errOut)
	}
}

// An object named that is not being deleted is said so, and only that: no
// "No terminating objects found in NS namespace" of a scope not looked at.
// A namespace named that is not being deleted is diagnosed by what is being
// deleted in it (issue 39: "namespace/shop is not being deleted", exit 0,
// read as all clear while 3 pods in it were stuck).
func TestNotTerminatingIsSaidOnStderr(t *testing.T) {
	shop := "namespace/shop is not being deleted (no metadata.deletionTimestamp); being deleted in it: 3 objects\n"
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // a fragment, or "" for none
		stderr string
	}{
		{[]string{"why", "pod/ok-0", "-n", "shop"}, ExitOK, "", "pod/ok-0 is not being deleted (no metadata.deletionTimestamp)\n"},
		{[]string{"why", "ns/shop"}, ExitStuck, "pod/web-0 -n shop  CRITICAL", shop},
		{[]string{"list", "ns/shop", "-o", "wide"}, ExitStuck, "pod/cache-0   5m30s", shop},
		{[]string{"why", "ns/shop", "--kind", "nodes"}, ExitStuck, "pod/web-0 -n shop  CRITICAL", shop},
		{[]string{"why", "ns/quiet"}, ExitOK, "", "namespace/quiet is not being deleted (no metadata.deletionTimestamp), nor is anything in it\n"},
	} {
		out, errOut, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != tc.code || errOut != tc.stderr || (tc.stdout == "") != (out == "") || !strings.Contains(out, tc.stdout) {
			t.Errorf("%v: exit %d (%v) stdout %q stderr %q, want exit %d, stdout with %q, stderr %q", tc.args, ExitCode(err), err, out, errOut, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// Issue 39: an empty report is no all-clear by mistake. A namespace that
// does not exist is an error (exit 1), as kubectl's; one with nothing being
// deleted says what is being deleted elsewhere, to a person (a program
// reads the empty report and the exit code).
func TestNoAccidentalAllClear(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"why", "-n", "shopp"}, ExitError, `error: namespace "shopp" not found` + "\n"},
		{[]string{"list", "-n", "shopp", "-o", "json"}, ExitError, `error: namespace "shopp" not found` + "\n"},
		{[]string{"why", "pods", "-n", "shopp"}, ExitError, `error: namespace "shopp" not found` + "\n"},
		{[]string{"why"}, ExitOK, "No terminating objects found in default namespace.\nElsewhere: 3 pods being deleted in 1 other namespace, 1 other namespace being deleted (kubectl terminating list -A).\n"},
		{[]string{"list", "-n", "quiet"}, ExitOK, "No terminating objects found in quiet namespace.\nElsewhere: 3 pods being deleted in 1 other namespace, 1 other namespace being deleted (kubectl terminating list -A).\n"},
		{[]string{"list", "-n", "quiet", "-o", "json"}, ExitOK, ""},
		// Pods named, or a type that holds them: elsewhere is what was asked about.
		{[]string{"list", "po", "-n", "quiet"}, ExitOK, "No terminating objects found in quiet namespace.\nElsewhere: 3 pods being deleted in 1 other namespace, 1 other namespace being deleted (kubectl terminating list -A).\n"},
		// Another type, or a selector: pods elsewhere are not what was asked about.
		{[]string{"list", "leases", "-n", "quiet"}, ExitOK, "No terminating objects found in quiet namespace.\n"},
		{[]string{"list", "-n", "quiet", "-l", "app=web"}, ExitOK, "No terminating objects found in quiet namespace.\n"},
	} {
		_, errOut, err := executeWith(t, fakes(t, cluster(), nil), func(*Options) {}, tc.args...)
		if err != nil {
			errOut += "error: " + Explain(err) + "\n"
		}
		if ExitCode(err) != tc.code || errOut != tc.stderr {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, stderr %q", tc.args, ExitCode(err), errOut, tc.code, tc.stderr)
		}
	}
}

// A forbidden read is reported and skipped; the diagnosis carries on.
func TestForbiddenNodeIsSkipped(t *testing.T) {
	forbidNodes := func(typed *kubefake.Clientset, _ *kube.Clients) {
		typed.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "dead", errors.New("no rights"))
		})
	}
	out, _, err := execute(t, fakes(t, cluster(), forbidNodes), "why", "pod/web-0", "-n", "shop", "-o", "json")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d %v", ExitCode(err), err)
	}
	for _, want := range []string{`"check": "nodes/dead"`, `"reason": "Forbidden"`, `"code": "DiagnosisIncomplete"`, `"status": "unknown"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

// brokenDiscovery fails one aggregated group, as an unavailable APIService does.
type brokenDiscovery struct {
	discovery.CachedDiscoveryInterface
}

func (b brokenDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	lists, _ := b.CachedDiscoveryInterface.ServerPreferredResources()
	return lists, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
}

func TestBrokenDiscoveryIsAFindingNotACrash(t *testing.T) {
	breakIt := func(_ *kubefake.Clientset, c *kube.Clients) { c.Discovery = brokenDiscovery{c.Discovery} }
	out, _, err := execute(t, fakes(t, cluster(), breakIt), "list", "-A", "-o", "json")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d %v", ExitCode(err), err)
	}
	if !strings.Contains(out, `"check": "discovery metrics.k8s.io/v1beta1"`) || !strings.Contains(out, `"reason": "DiscoveryFailed"`) || !strings.Contains(out, `"name": "web-0"`) {
		t.Errorf("output:\n%s", out)
	}
	// Discovery runs once per run, though the namespace "old" is scanned too.
	if n := strings.Count(out, `"check": "discovery metrics.k8s.io/v1beta1"`); n != 1 {
		t.Errorf("the failed group is reported %d times, want once", n)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := execute(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "kubectl-terminating v") {
		t.Errorf("err %v out %q", err, out)
	}
}

// A report that could not read what its verdict needs never exits 0 by
// finding nothing stuck: exit 1 and a line saying what was not read, unless
// --allow-partial; the partial report is printed either way.
func TestPartialReportDoesNotExitZero(t *testing.T) {
	forbidNodes := func(typed *kubefake.Clientset, _ *kube.Clients) {
		typed.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "live", errors.New("no rights"))
		})
	}
	out, _, err := execute(t, fakes(t, cluster(), forbidNodes), "why", "pod/batch-0", "-n", "shop", "-o", "json")
	var partial *PartialError
	if ExitCode(err) != ExitError || !errors.As(err, &partial) || !strings.Contains(err.Error(), "could not read nodes/live (Forbidden)") {
		t.Fatalf("exit %d, %v; want 1 and what was not read", ExitCode(err), err)
	}
	if !strings.Contains(out, `"complete": false`) || !strings.Contains(out, `"code": "WithinGracePeriod"`) {
		t.Errorf("the partial report is still printed, and says so:\n%s", out)
	}
	if _, _, err := execute(t, fakes(t, cluster(), forbidNodes), "why", "pod/batch-0", "-n", "shop", "--allow-partial"); err != nil {
		t.Errorf("--allow-partial: %v", err)
	}
	out, _, err = execute(t, fakes(t, cluster(), nil), "why", "pod/batch-0", "-n", "shop", "-o", "json")
	if err != nil || !strings.Contains(out, `"complete": true`) {
		t.Errorf("everything read: %v\n%s", err, out)
	}
}

// A run lists every type once, however many namespaces are terminating: their
// contents come from the run's own scan, and read the same as a scan of the
// namespace alone would.
func TestOneScanPerRun(t *testing.T) {
	objs := cluster()
	for _, ns := range []string{"old2", "old3"} {
		objs = append(objs, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, UID: k8stypes.UID("uid-" + ns), DeletionTimestamp: ago(10 * time.Minute), DeletionGracePeriodSeconds: new(int64)},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
		for i, name := range []string{"held-0", "held-1", "calm-0"} {
			p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID(ns + name)},
				Spec:       corev1.PodSpec{NodeName: "live", Containers: []corev1.Container{{Name: "app"}}}}
			if i < 2 {
				p.DeletionTimestamp, p.Finalizers = ago(9*time.Minute), []string{"example.com/hold"}
			}
			objs = append(objs, p)
		}
	}
	var lists map[string]int
	counting := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			lists[a.GetResource().Resource]++
			return false, nil, nil
		})
	}
	namespaceItem := func(args ...string) report.Item {
		lists = map[string]int{}
		out, _, err := execute(t, fakes(t, objs, counting), append(args, "-o", "json")...)
		if ExitCode(err) != ExitStuck {
			t.Fatalf("%v: exit %d (%v)", args, ExitCode(err), err)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		for _, it := range r.Items {
			if it.Object.Kind == "Namespace" && it.Object.Name == "old2" {
				return it
			}
		}
		t.Fatalf("%v: no namespace/old2 in %s", args, out)
		return report.Item{}
	}
	alone := namespaceItem("why", "ns/old2")
	all := namespaceItem("why", "-A")
	for resource, n := range lists {
		if n != 1 {
			t.Errorf("why -A listed %s %d times, want once", resource, n)
		}
	}
	// Read alone, without conditions to stand in, the namespace is scanned
	// in full and says why; the run's scan listed every type anyway.
	if r := alone.ContentsRead; r == nil || r.Index || !strings.Contains(r.Why, "has not written its") {
		t.Errorf("read alone: %+v", r)
	}
	if r := all.ContentsRead; r == nil || r.Index || r.Why != "" || r.Types != alone.ContentsRead.Types {
		t.Errorf("read from the run's scan: %+v", r)
	}
	alone.ContentsRead, all.ContentsRead = nil, nil
	a, _ := json.Marshal(alone)
	b, _ := json.Marshal(all)
	if string(a) != string(b) {
		t.Errorf("the namespace read from the run's scan differs from its own scan:\n%s\n%s", b, a)
	}
	if !strings.Contains(string(a), "example.com/hold") {
		t.Errorf("the leftovers' finalizer is not in the namespace's diagnosis: %s", a)
	}
}

// Many terminating namespaces are read with one list, not a GET each.
func TestManyTerminatingNamespacesAreListedOnce(t *testing.T) {
	objs := cluster()
	for i := range 10 {
		objs = append(objs, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("preview-", i), UID: k8stypes.UID(fmt.Sprint("uid-preview-", i)), DeletionTimestamp: ago(10 * time.Minute), DeletionGracePeriodSeconds: new(int64)},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	}
	var typed *kubefake.Clientset
	clients := fakes(t, objs, func(c *kubefake.Clientset, _ *kube.Clients) { typed = c })
	if _, _, err := execute(t, clients, "list", "-A", "-o", "json"); ExitCode(err) == ExitError {
		t.Fatal(err)
	}
	gets, lists := 0, 0
	for _, a := range typed.Actions() {
		if a.GetResource().Resource != "namespaces" {
			continue
		}
		if get, ok := a.(k8stesting.GetAction); ok && strings.HasPrefix(get.GetName(), "preview-") {
			gets++
		}
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if gets != 0 || lists != 1 {
		t.Errorf("namespaces: %d GETs of the terminating ones and %d lists, want 0 and 1", gets, lists)
	}
}

// The habits of kubectl users: comma-separated types, --no-headers,
// version -o json|yaml, "nothing found" on stderr.
func TestKubectlHabits(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "list", "pods,ns", "-A", "-o", "name")
	if ExitCode(err) != ExitStuck || !strings.Contains(out, "pod/web-0\n") || !strings.Contains(out, "namespace/old\n") {
		t.Errorf("list pods,ns: exit %d, %q", ExitCode(err), out)
	}
	out, _, _ = execute(t, fakes(t, cluster(), nil), "list", "-A", "--no-headers")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || strings.Contains(out, "NAMESPACE") || strings.Contains(out, "objects,") {
		t.Errorf("--no-headers: %q", out)
	}
	out, _, _ = execute(t, fakes(t, cluster(), nil), "list", "-A", "-o", "name", "--sort-by", ".object.name")
	if out != "pod/batch-0\npod/cache-0\nnamespace/old\npod/web-0\n" {
		t.Errorf("--sort-by .object.name: %q", out)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "list", "-A", "--sort-by", "{.object"); ExitCode(err) != ExitError || !strings.Contains(err.Error(), "invalid --sort-by") {
		t.Errorf("--sort-by {.object: %v", err)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "list", "pods,", "-A"); ExitCode(err) != ExitError || !strings.Contains(err.Error(), `empty resource type in "pods,"`) {
		t.Errorf("list pods,: %v", err)
	}
	for _, format := range []string{"json", "yaml"} {
		out, _, err := execute(t, fakes(t, cluster(), nil), "version", "-o", format)
		var info versionInfo
		if err == nil {
			err = yaml.Unmarshal([]byte(out), &info) // JSON is YAML
		}
		if err != nil || info.Version == "" || info.GoVersion == "" {
			t.Errorf("version -o %s: %v %q", format, err, out)
		}
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "version", "-o", "xml"); ExitCode(err) != ExitError {
		t.Errorf("version -o xml: %v", err)
	}
}

// TAB completes types, TYPE/NAME, names after a type, namespaces, contexts,
// output formats and --kind, as kubectl does; cobra's completion command is
// hidden (kubectl completes plugins through kubectl_complete-terminating).
func TestCompletion(t *testing.T) {
	complete := func(args ...string) []string {
		t.Helper()
		out, _, err := execute(t, fakes(t, cluster(), nil), append([]string{"__complete"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var values []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
				values = append(values, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return values
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"why", "po"}, []string{"pods"}},
		{[]string{"why", ""}, []string{"leases.coordination.k8s.io", "namespaces", "nodes", "pods"}},
		{[]string{"why", "-n", "shop", "pod/"}, []string{"pod/batch-0", "pod/cache-0", "pod/ok-0", "pod/web-0"}},
		{[]string{"wait", "-n", "shop", "pods", "w"}, []string{"web-0"}},
		{[]string{"why", "ns/o"}, []string{"ns/old"}},
		{[]string{"list", "-n", ""}, []string{"default", "old", "quiet", "shop"}},
		{[]string{"list", "--kind", "pods,na"}, []string{"pods,namespaces"}},
		{[]string{"list", "-o", "j"}, []string{"json", "jsonpath=", "jsonpath-as-json="}},
		{[]string{"list", "--group-by", ""}, []string{"cause", "finalizer", "namespace"}},
	} {
		if got := complete(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := complete(""); slices.Contains(got, "completion") || !slices.Contains(got, "why") {
		t.Errorf("commands: %q", got)
	}
}

// explain prints a code's catalogue entry from the binary, as plain text
// (golden) whose steps are graded as why grades them; every cause links its
// entry (JSON and -o wide).
func TestExplain(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "explain", "NodeUnreachable")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "explain-NodeUnreachable.golden", out)
	if text, _, _ := strings.Cut(out, "\nMore: "); strings.ContainsAny(text, "*`#") || strings.Contains(text, "Detected:") {
		t.Errorf("Markdown left:\n%s", out)
	}
	whyJSON, _, _ := execute(t, fakes(t, cluster(), nil), "why", "pod/web-0", "-n", "shop", "-o", "json")
	var r report.Report
	if err := json.Unmarshal([]byte(whyJSON), &r); err != nil || r.Items[0].Causes[0].Code != "NodeUnreachable" {
		t.Fatalf("%v: %s", err, whyJSON)
	}
	var whyGrades, explainGrades []string
	for _, s := range r.Items[0].Causes[0].Remediation {
		whyGrades = append(whyGrades, string(s.RiskLevel))
	}
	for _, m := range regexp.MustCompile(`(?m)^ +risk: (\w+)`).FindAllStringSubmatch(out, -1) {
		explainGrades = append(explainGrades, m[1])
	}
	// The entry's first remediation is the pod's; the steps for another
	// object that names the node follow it.
	if len(explainGrades) < len(whyGrades) || !slices.Equal(whyGrades, explainGrades[:len(whyGrades)]) {
		t.Errorf("why grades its steps %q, explain %q", whyGrades, explainGrades)
	}
	out, _, err = execute(t, fakes(t, cluster(), nil), "explain")
	if err != nil || !strings.HasPrefix(out, "CODE ") || !strings.Contains(out, "\nFinalizerPending ") || strings.Count(out, "\n") != len(catalog.Codes())+1 {
		t.Errorf("explain: %v\n%s", err, out)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "explain", "NoSuchCode"); ExitCode(err) != ExitError || !strings.Contains(err.Error(), `unknown cause code "NoSuchCode"`) {
		t.Errorf("explain NoSuchCode: %v", err)
	}
	// Typed as a person does: any case; a near miss is suggested.
	if out, _, err := execute(t, fakes(t, cluster(), nil), "explain", "nodeunreachable"); err != nil || !strings.HasPrefix(out, "NodeUnreachable: node stopped reporting\n\n") {
		t.Errorf("explain nodeunreachable: %v\n%s", err, out)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "explain", "NodeUnreachble"); ExitCode(err) != ExitError || !strings.Contains(err.Error(), "did you mean NodeUnreachable?") {
		t.Errorf("explain NodeUnreachble: %v", err)
	}
	if _, _, err := execute(t, fakes(t, cluster(), nil), "explain", "grace"); err == nil || !strings.Contains(err.Error(), "did you mean GracePeriodOverrun, NegativeGracePeriod, WithinGracePeriod?") {
		t.Errorf("explain grace: %v", err)
	}
	wide, _, _ := execute(t, fakes(t, cluster(), nil), "why", "pod/web-0", "-n", "shop", "-o", "wide")
	if !strings.Contains(wide, "docs: https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/causes.md#nodeunreachable") {
		t.Errorf("-o wide lacks the docs link:\n%s", wide)
	}
}

// --field-selector goes to the server with the named types, and is checked first.
func TestFieldSelector(t *testing.T) {
	var fieldSelectors []string
	capture := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			fieldSelectors = append(fieldSelectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
			return false, nil, nil
		})
	}
	if _, _, err := execute(t, fakes(t, cluster(), capture), "list", "pods", "-n", "shop", "--field-selector", "spec.nodeName=dead"); ExitCode(err) == ExitError {
		t.Fatal(err)
	}
	if !slices.Equal(fieldSelectors, []string{"spec.nodeName=dead"}) {
		t.Errorf("field selectors sent: %q", fieldSelectors)
	}
	for args, want := range map[string]string{
		"list -A --field-selector spec.nodeName=dead": "--field-selector needs the types it applies to",
		"list pods --field-selector spec.nodeName":    `invalid --field-selector "spec.nodeName"`,
	} {
		if _, _, err := execute(t, fakes(t, cluster(), nil), strings.Fields(args)...); ExitCode(err) != ExitError || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestMain runs the tests at the default width whatever the shell exports:
// the goldens are the screens off a terminal, 80 columns; and with the
// garbage collector paced as the binary paces it (the memory bounds).
func TestMain(m *testing.M) {
	os.Unsetenv("COLUMNS")
	TuneGarbageCollector()
	os.Exit(m.Run())
}

// Off a terminal, prose is wrapped to $COLUMNS when it is a width, else 80.
func TestWidthOffATerminal(t *testing.T) {
	for columns, want := range map[string]int{"": 80, "100": 100, "wide": 80, "-3": 80, "0": 80} {
		t.Setenv("COLUMNS", columns)
		o := &Options{IOStreams: genericiooptions.IOStreams{Out: new(bytes.Buffer)}}
		if got := o.width(); got != want {
			t.Errorf("COLUMNS=%q: width %d, want %d", columns, got, want)
		}
	}
}

// Issue 39: a first word that is no command is answered with the command
// likely meant: the verb forgotten before an object (flags kept), or a
// misspelt verb; each one error line, exit 1. No word shows the help.
func TestMistakesAnswered(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pod/web-0", "-n", "shop"}, `unknown command "pod/web-0": did you mean "kubectl terminating why pod/web-0 --namespace=shop"? (an object comes after a verb: why, list, wait, fix)`},
		{[]string{"ns/shop"}, `unknown command "ns/shop": did you mean "kubectl terminating why ns/shop"?`},
		{[]string{"wyh", "pod/web-0"}, `unknown command "wyh": did you mean why? (kubectl terminating --help lists the commands)`},
		{[]string{"lst"}, `unknown command "lst": did you mean list?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (kubectl terminating --help lists the commands)`},
	} {
		out, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || !strings.HasPrefix(Explain(err), tc.want) || strings.Contains(Explain(err), "\n") || out != "" {
			t.Errorf("%q: exit %d, error %q, stdout %q; want exit 1 and %q", tc.args, ExitCode(err), Explain(err), out, tc.want)
		}
	}
	out, _, err := execute(t, fakes(t, cluster(), nil))
	if err != nil || !strings.Contains(out, "Explain why pods, namespaces and other objects stay Terminating") {
		t.Errorf("no word: %v\n%s", err, out)
	}
}

// Issue 39: a mistyped type is answered with the types it is near, as
// explain answers a mistyped code.
func TestMistypedTypeIsAnswered(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"why", "pdo/web-0", "-n", "shop"}, `the server doesn't have a resource type "pdo"; did you mean pods?`},
		{[]string{"list", "--kind", "nodse"}, `the server doesn't have a resource type "nodse"; did you mean nodes?`},
		{[]string{"why", "frobs/x"}, `the server doesn't have a resource type "frobs"`},
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || Explain(err) != tc.want {
			t.Errorf("%q: exit %d, error %q; want exit 1 and %q", tc.args, ExitCode(err), Explain(err), tc.want)
		}
	}
}
