package cmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// why ns/NAME lists only the types the namespace controller's current
// conditions name as left (and pods), with the verdict of a full scan; it
// scans every type when they are stale (a type holds more than they count)
// or --full-scan asks, and says which way it read.
func TestNamespaceConditionsIndexTheScan(t *testing.T) {
	cond := func(typ corev1.NamespaceConditionType, status corev1.ConditionStatus, msg string) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: typ, Status: status, Reason: "R", Message: msg, LastTransitionTime: *ago(9 * time.Minute)}
	}
	withCount := func(n int) []runtime.Object {
		objs := cluster()
		objs = append(objs, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "idx", UID: "uid-idx", DeletionTimestamp: ago(10 * time.Minute), DeletionGracePeriodSeconds: new(int64)},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
				cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "All resources successfully discovered"),
				cond(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionFalse, "All legacy kube types successfully parsed"),
				cond(corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "All content successfully deleted, may be waiting on finalization"),
				cond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, fmt.Sprintf("Some resources are remaining: configmaps. has %d resource instances", n)),
				cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "Some content in the namespace has finalizers remaining: example.com/archive in 2 resource instances"),
			}}})
		for _, name := range []string{"ledger-0", "ledger-1"} {
			objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "idx", UID: k8stypes.UID("uid-" + name), DeletionTimestamp: ago(9 * time.Minute),
					Finalizers: []string{"example.com/archive"}}})
		}
		return objs
	}
	core := *apiResources[0]
	core.APIResources = append(append([]metav1.APIResource(nil), core.APIResources...),
		metav1.APIResource{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "delete"}},
		metav1.APIResource{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: []string{"get", "list", "delete"}})
	resources := append([]*metav1.APIResourceList{&core}, apiResources[1:]...)
	var lists map[string]int
	counting := func(typed *kubefake.Clientset, c *kube.Clients) {
		typed.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources
		c.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "idx" {
				lists[a.GetResource().Resource]++
			}
			return false, nil, nil
		})
	}
	namespace := func(objs []runtime.Object, args ...string) report.Item {
		t.Helper()
		lists = map[string]int{}
		out, _, err := execute(t, fakes(t, objs, counting), append(append([]string{"why", "ns/idx"}, args...), "-o", "json")...)
		if ExitCode(err) != ExitStuck {
			t.Fatalf("%v: exit %d (%v)", args, ExitCode(err), err)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Items[0]
	}
	codes := func(it report.Item) string {
		var out []string
		for _, c := range it.Causes {
			out = append(out, c.Code+" "+c.Summary)
		}
		return strings.Join(out, "\n")
	}

	indexed := namespace(withCount(2))
	if r := indexed.ContentsRead; r == nil || !r.Index || r.Types != 2 || lists["secrets"] != 0 || lists["configmaps"] != 1 || lists["pods"] != 1 {
		t.Errorf("read %+v, lists %v; want configmaps and pods only", indexed.ContentsRead, lists)
	}
	full := namespace(withCount(2), "--full-scan")
	if r := full.ContentsRead; r == nil || r.Index || r.Why != "--full-scan" || lists["secrets"] != 1 {
		t.Errorf("--full-scan: read %+v, lists %v", full.ContentsRead, lists)
	}
	if codes(indexed) != codes(full) || !strings.Contains(codes(indexed), "example.com/archive") {
		t.Errorf("the index's verdict differs from the full scan's:\n%s\n---\n%s", codes(indexed), codes(full))
	}
	// Conditions that count fewer objects than there are are stale: the
	// named types are listed, then every type.
	stale := namespace(withCount(1))
	if r := stale.ContentsRead; r == nil || r.Index || !strings.Contains(r.Why, "configmaps holds 2 objects, more than the 1 its conditions count") || lists["secrets"] != 1 {
		t.Errorf("stale conditions: read %+v, lists %v", stale.ContentsRead, lists)
	}

	// A pod left: the controller counts nothing else until it is gone (its
	// conditions say all content is removed meanwhile): every type is listed.
	withPod := append(withCount(2), &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "idx", UID: "uid-idx-web-0", DeletionTimestamp: ago(time.Minute), Finalizers: []string{"example.com/drain"}},
		Spec:       corev1.PodSpec{NodeName: "live", Containers: []corev1.Container{{Name: "app"}}}})
	if r := namespace(withPod).ContentsRead; r == nil || r.Index || !strings.Contains(r.Why, "pods remain") || lists["secrets"] != 1 {
		t.Errorf("a pod left: read %+v, lists %v", r, lists)
	}

	// The table says it too.
	out, _, _ := execute(t, fakes(t, withCount(2), counting), "why", "ns/idx")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "read: the types the namespace controller's conditions name as left, and pods: 2 types (--full-scan lists every type)") {
		t.Errorf("the table does not say how it read:\n%s", out)
	}
}
