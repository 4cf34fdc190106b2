package collect

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
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
	c := &Collector{Clients: &kube.Clients{Typed: fake, Metadata: md}}
	c.startEarly(ctx, found())
	time.Sleep(100 * time.Millisecond) // what it would have started, had it started anything
	if got := listed(fake, md); len(got) != 0 || c.earlyStarted.Load() != 0 {
		t.Fatalf("an object held by nothing started %d early reads: %v", c.earlyStarted.Load(), got)
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
