package cmd

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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

// A cluster-wide run finds an owner's dependents in its own scan (issue
// 24): a Deployment deleted in the foreground waits on its ReplicaSet, which
// waits on its pods, each held by a finalizer, beside a ConfigMap the
// Deployment owns. why -A lists every type's metadata once and reads each pod
// once (a source reading a type whole lists it once more at most), and
// the owners' items are those of `why deploy/web -n shop` and `why
// rs/web-rs -n shop`, which scan the namespace for dependents themselves.
func TestOneScanFindsDependents(t *testing.T) {
	yes := true
	fg := []string{metav1.FinalizerDeleteDependents}
	grace := int64(30)
	owner := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: k8stypes.UID(uid), Controller: &yes, BlockOwnerDeletion: &yes}}
	}
	objs := append(cluster(),
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-deploy-web", DeletionTimestamp: ago(8 * time.Minute), DeletionGracePeriodSeconds: new(int64), Finalizers: fg}},
		&appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-rs", Namespace: "shop", UID: "uid-rs-web", DeletionTimestamp: ago(8 * time.Minute), DeletionGracePeriodSeconds: new(int64), Finalizers: fg,
				OwnerReferences: owner("Deployment", "web", "uid-deploy-web")}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "shop", UID: "uid-cm-web", OwnerReferences: owner("Deployment", "web", "uid-deploy-web")}},
		// An object of another namespace naming the owner's UID is no dependent.
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "elsewhere", UID: "uid-cm-stray", OwnerReferences: owner("Deployment", "web", "uid-deploy-web")}},
		// A ReplicaSet whose owner is going nowhere, and its pod.
		&appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "api-rs", Namespace: "shop", UID: "uid-rs-api", OwnerReferences: owner("Deployment", "api", "uid-deploy-api")}},
	)
	for _, name := range []string{"web-rs-b", "web-rs-a", "api-rs-a"} {
		rs, uid := "web-rs", "uid-rs-web"
		var deleted *metav1.Time
		var finalizers []string
		if strings.HasPrefix(name, "web") {
			deleted, finalizers = ago(7*time.Minute), []string{"example.com/hold"}
		} else {
			rs, uid = "api-rs", "uid-rs-api"
		}
		objs = append(objs, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: k8stypes.UID("uid-" + name), DeletionTimestamp: deleted, DeletionGracePeriodSeconds: &grace,
				Finalizers: finalizers, OwnerReferences: owner("ReplicaSet", rs, uid)},
			Spec:   corev1.PodSpec{NodeName: "live", Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded}})
	}
	core := *apiResources[0]
	core.APIResources = append(append([]metav1.APIResource(nil), core.APIResources...),
		metav1.APIResource{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"}, Verbs: []string{"get", "list", "delete"}})
	resources := append([]*metav1.APIResourceList{&core}, apiResources[1:]...)
	resources = append(resources,
		&metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", ShortNames: []string{"deploy"}, Verbs: []string{"get", "list", "delete"}},
			{Name: "replicasets", SingularName: "replicaset", Namespaced: true, Kind: "ReplicaSet", ShortNames: []string{"rs"}, Verbs: []string{"get", "list", "delete"}}}})

	// lists and wholeLists count each type's lists by the metadata and the
	// typed client.
	var lists, wholeLists, podGets map[string]int
	var countMu sync.Mutex
	counting := func(typed *kubefake.Clientset, c *kube.Clients) {
		typed.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources
		counter := func(counts *map[string]int) k8stesting.ReactionFunc {
			return func(a k8stesting.Action) (bool, runtime.Object, error) {
				countMu.Lock() // called by two clients, each serialising only its own reactors
				defer countMu.Unlock()
				(*counts)[a.GetResource().Resource]++
				return false, nil, nil
			}
		}
		// The scan lists with the metadata client, but for the types it
		// shares with a source that reads them whole (collect/shared.go):
		// the namespaces always, the deployments when a target asked for
		// them before the scan came to them. Each is one list either way.
		c.Metadata.(*metadatafake.FakeMetadataClient).PrependReactor("list", "*", counter(&lists))
		typed.PrependReactor("list", "*", counter(&wholeLists))
		typed.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			podGets[a.(k8stesting.GetAction).GetName()]++
			return false, nil, nil
		})
	}
	items := func(args ...string) map[string]report.Item {
		t.Helper()
		lists, wholeLists, podGets = map[string]int{}, map[string]int{}, map[string]int{}
		out, _, err := execute(t, fakes(t, objs, counting), append(args, "-o", "json")...)
		if ExitCode(err) != ExitStuck {
			t.Fatalf("%v: exit %d (%v)", args, ExitCode(err), err)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		byName := map[string]report.Item{}
		for _, it := range r.Items {
			byName[strings.ToLower(it.Object.Kind)+"/"+it.Object.Name] = it
		}
		return byName
	}
	deployment := items("why", "deploy/web", "-n", "shop")["deployment/web"]
	if n := lists["configmaps"]; n != 1 {
		t.Errorf("why deploy/web -n shop listed configmaps %d times for its dependents, want once", n)
	}
	replicaSet := items("why", "rs/web-rs", "-n", "shop")["replicaset/web-rs"]
	all := items("why", "-A")
	for _, resource := range []string{"pods", "namespaces", "nodes", "leases", "configmaps", "deployments", "replicasets"} {
		// The scan takes a type from a source's whole list when that list
		// has started before the scan comes to the type, which is a race:
		// the deployments are listed by the scan and then by the workloads'
		// source, or once by the source for both.
		metadata, whole := lists[resource], wholeLists[resource]
		if metadata > 1 || whole > 1 || metadata+whole == 0 {
			t.Errorf("why -A listed %s's metadata %d times and whole %d times, want each at most once, and one of them", resource, metadata, whole)
		}
	}
	for name, n := range podGets {
		if n > 1 {
			t.Errorf("why -A read pod %s %d times, want at most once", name, n)
		}
	}
	for _, c := range []struct {
		name string
		own  report.Item
	}{{"deployment/web", deployment}, {"replicaset/web-rs", replicaSet}} {
		a, _ := json.Marshal(c.own)
		b, _ := json.Marshal(all[c.name])
		if string(a) != string(b) {
			t.Errorf("%s from the run's scan differs from its own scan:\n%s\n%s", c.name, b, a)
		}
	}
	got, _ := json.Marshal(deployment)
	for _, want := range []string{"ForegroundDeletionBlocked", "dependent configmap/web-config -n shop", "dependent replicaset.apps/web-rs -n shop",
		"dependent pod/web-rs-a -n shop", "dependent pod/web-rs-b -n shop", "example.com/hold"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the deployment's diagnosis lacks %q: %s", want, got)
		}
	}
	for _, unwanted := range []string{"stray", "api-rs"} {
		if strings.Contains(string(got), unwanted) {
			t.Errorf("the deployment's diagnosis names %q, no dependent of it: %s", unwanted, got)
		}
	}
}
