package collect

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// listed are the resources the fake clients were asked to list, in order.
func listed(fake *kubefake.Clientset, md *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range append(fake.Actions(), md.Actions()...) {
		if a.GetVerb() == "list" {
			out = append(out, a.GetResource().Resource)
		}
	}
	return out
}

// A scan that finds an object held by a third-party finalizer starts the
// lists the controllers' source will judge (workloads, RBAC) and, as such an
// object's finalizer-removal UPDATE goes through admission, the admission
// lists, before the scan ends; the sources then take what was read, and
// nothing is listed twice. An object that needs neither starts nothing.
func TestEarlyReadsStartWhenTheScanFindsWhatNeedsThem(t *testing.T) {
	found := func(finalizers ...string) Found {
		return Found{GVR: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"}, Object: deletedWidget(finalizers...)}
	}
	ctx := context.Background()

	fake, md := kubefake.NewClientset(), metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	c := &Collector{Clients: &kube.Clients{Typed: fake, Metadata: md, Discovery: memory.NewMemCacheClient(fake.Discovery())}}
	c.startEarly(ctx, found())
	time.Sleep(100 * time.Millisecond) // what it would have started, had it started anything
	if got := listed(fake, md); len(got) != 0 || c.earlyStarted.Load() != 1 || versionReads(fake) != 1 {
		t.Fatalf("an object held by nothing started %d early reads (want the server version's alone, read %d times): %v", c.earlyStarted.Load(), versionReads(fake), got)
	}

	c.startEarly(ctx, found("acme.io/cleanup"))
	c.startEarly(ctx, found("acme.io/cleanup")) // the next objects found: started already
	want := []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings", "deployments", "statefulsets", "daemonsets", "customresourcedefinitions",
		"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"}
	deadline := time.Now().Add(10 * time.Second)
	for len(listed(fake, md)) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := listed(fake, md); !sameSet(got, want) {
		t.Fatalf("early lists %v, want %v", got, want)
	}
	var wg sync.WaitGroup // the sources, after the scan, concurrently
	wg.Add(2)
	go func() { defer wg.Done(); c.controllerLists(ctx); c.readGrants(ctx) }()
	go func() { defer wg.Done(); c.admissionLists(ctx) }()
	wg.Wait()
	if got := listed(fake, md); !sameSet(got, want) {
		t.Errorf("after the sources: %v, want each of %v once", got, want)
	}
	s := observed.New(time.Now())
	s.Targets = []*observed.Target{{}}
	c.readServerVersion(ctx, s)
	if s.Server == nil || versionReads(fake) != 1 {
		t.Errorf("the server version's source read /version %d times in all, and gave %+v: want it read once, early", versionReads(fake), s.Server)
	}
}

// versionReads counts the reads of /version the fake was asked.
func versionReads(fake *kubefake.Clientset) int {
	n := 0
	for _, a := range fake.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "version" {
			n++
		}
	}
	return n
}

// sameSet: a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A panic in an early read does not end the process from its goroutine: the
// source that asks for the list raises it again, where the collector's
// workers carry it to the command's recovery.
func TestAnEarlyReadsPanicIsRaisedInTheSource(t *testing.T) {
	u := deletedWidget("acme.io/cleanup")
	c := &Collector{Clients: &kube.Clients{Typed: kubefake.NewClientset()}} // no metadata client: listing the CRDs' names panics
	c.startEarly(context.Background(), Found{GVR: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"}, Object: u})
	time.Sleep(200 * time.Millisecond) // the early reads' goroutine panicked meanwhile, and the test is still here
	defer func() {
		if r := recover(); r == nil {
			t.Error("the source's list did not panic")
		}
	}()
	_, _ = c.crdNames(context.Background())
}

// A scan that finds a namespace being deleted (whose spec, not in its
// metadata, is taken to hold the namespace controller's finalizer) starts
// what its rules read of the whole cluster: the APIServices and the
// controller managers' Leases; once the namespaces are listed, the events of
// the few being deleted. The sources take what was read: nothing is asked
// twice. Of more terminating namespaces than batchThreshold, the events are
// left to the source, which may list every event at once.
func TestATerminatingNamespaceStartsItsEarlyReads(t *testing.T) {
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deletedNamespace := func(name string) Found {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
		u.SetName(name)
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
		return Found{GVR: namespaces, Object: u}
	}
	asked := func(fake *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) []string {
		var out []string
		for _, a := range append(fake.Actions(), dyn.Actions()...) {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
		}
		return out
	}
	ctx := context.Background()
	fake := kubefake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"})
	c := &Collector{Clients: &kube.Clients{Typed: fake, Dynamic: dyn, Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())}}
	shop := deletedNamespace("shop")
	c.startEarly(ctx, shop)
	c.startEarlyEvents(ctx, []Found{shop})
	want := []string{"list apiservices ", "get leases kube-system", "get leases kube-system", "list events shop"}
	deadline := time.Now().Add(10 * time.Second)
	for len(asked(fake, dyn)) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := asked(fake, dyn); !sameSet(got, want) {
		t.Fatalf("early reads %v, want %v", got, want)
	}
	if _, err := c.apiServiceList(ctx); err != nil {
		t.Fatal(err)
	}
	c.controllerManagerLeases(ctx)
	if _, err := c.namespaceEvents(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if got := asked(fake, dyn); !sameSet(got, want) {
		t.Errorf("after the sources: %v, want each of %v once", got, want)
	}

	fake = kubefake.NewClientset()
	c = &Collector{Clients: &kube.Clients{Typed: fake}}
	var many []Found
	for i := range batchThreshold + 1 {
		many = append(many, deletedNamespace(fmt.Sprintf("ns-%d", i)))
	}
	c.startEarlyEvents(ctx, many)
	time.Sleep(100 * time.Millisecond) // what it would have started, had it started anything
	if got := fake.Actions(); len(got) != 0 {
		t.Errorf("%d terminating namespaces: %d early event reads, want none", len(many), len(got))
	}
}
