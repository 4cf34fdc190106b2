package collect

import (
	"context"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// Once the APIServices are listed, a scan of the whole cluster asks for
// data not older than that list of every type the kube-apiserver serves
// itself, not of an aggregated API's; a type whose server refuses that
// resource version is listed again with a consistent read, its objects
// found once. A scan of one namespace, or before the APIServices are
// listed, asks for consistent reads.
func TestScanAsksForDataNotOlderThanTheAPIServices(t *testing.T) {
	ctx := context.Background()
	mapping := func(gv schema.GroupVersion, resource, kind string, scope meta.RESTScope) *meta.RESTMapping {
		return &meta.RESTMapping{Resource: gv.WithResource(resource), GroupVersionKind: gv.WithKind(kind), Scope: scope}
	}
	core, metrics, widgets := schema.GroupVersion{Version: "v1"}, schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}, schema.GroupVersion{Group: "example.com", Version: "v1"}
	mappings := []*meta.RESTMapping{
		mapping(apiServices.GroupVersion(), "apiservices", "APIService", meta.RESTScopeRoot),
		mapping(core, "configmaps", "ConfigMap", meta.RESTScopeNamespace),
		mapping(metrics, "pods", "PodMetrics", meta.RESTScopeNamespace),
		mapping(widgets, "widgets", "Widget", meta.RESTScopeNamespace),
	}
	apiService := func(name, group, version string, service bool) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"group": group, "version": version}}}
		if service {
			u.Object["spec"].(map[string]any)["service"] = map[string]any{"namespace": "kube-system", "name": "metrics-server"}
		}
		return u
	}
	held := func(gv schema.GroupVersion, kind, name string) runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), DeletionTimestamp: &metav1.Time{}}}
	}
	newCollector := func(release <-chan struct{}) (*Collector, *listRecorder, *metadatafake.FakeMetadataClient, *dynamicfake.FakeDynamicClient) {
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"})
		dyn.PrependReactor("list", "apiservices", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIServiceList"},
				Items: []unstructured.Unstructured{apiService("v1.", "", "v1", false), apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", true), apiService("v1.example.com", "example.com", "v1", false)}}
			l.SetResourceVersion("4711")
			return true, l, nil
		})
		md := metadatafake.NewSimpleMetadataClient(metaScheme(t), held(core, "ConfigMap", "cm"), held(widgets, "Widget", "w"))
		// The fake metadata client's actions do not keep the list options.
		rec := &listRecorder{refuse: "widgets"} // as an apiserver whose watch cache lags
		return &Collector{Clients: &kube.Clients{Typed: kubefake.NewClientset(), Metadata: recordingMetadata{md, rec}, Dynamic: dyn}}, rec, md, dyn
	}
	names := func(found []Found) []string {
		var out []string
		for _, f := range found {
			out = append(out, f.Object.GetName())
		}
		return out
	}

	released := make(chan struct{})
	close(released)
	c, rec, _, _ := newCollector(released)
	c.readFreshness(ctx) // the scan starts it; here it has returned before the scan lists the rest
	found, err := c.Scan(ctx, Scope{AllNamespaces: true}, mappings)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.asked(), []string{"configmaps@4711NotOlderThan", "pods@", "widgets@", "widgets@4711NotOlderThan"}; !slices.Equal(got, want) {
		t.Errorf("the scan asked %v, want %v", got, want)
	}
	if got := names(found); !slices.Equal(got, []string{"cm", "w"}) {
		t.Errorf("found %v, want cm and w once each", got)
	}

	consistent := []string{"configmaps@", "pods@", "widgets@"}
	// The lists started before the APIServices list returned: it returns
	// once they have been asked.
	release := make(chan struct{})
	c, rec, md, _ := newCollector(release)
	var asking sync.WaitGroup
	asking.Add(len(consistent))
	md.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		asking.Done()
		return false, nil, nil
	})
	go func() { asking.Wait(); close(release) }()
	if _, err := c.Scan(ctx, Scope{AllNamespaces: true}, mappings); err != nil {
		t.Fatal(err)
	}
	if got := rec.asked(); !slices.Equal(got, consistent) {
		t.Errorf("before the APIServices list returned, the scan asked %v, want %v", got, consistent)
	}

	for _, scope := range []Scope{{Namespace: "shop"}, {AllNamespaces: true, LabelSelector: "app=web"}} {
		c, rec, _, dyn := newCollector(released)
		if _, err := c.Scan(ctx, scope, mappings[1:]); err != nil {
			t.Fatal(err)
		}
		if got := rec.asked(); !slices.Equal(got, consistent) {
			t.Errorf("a scan of %+v asked %v, want %v", scope, got, consistent)
		}
		if len(dyn.Actions()) > 0 {
			t.Errorf("a scan of %+v listed the APIServices", scope)
		}
	}
}

// listRecorder records the options of each metadata list, as
// "resource@resourceVersion+match", and refuses a resource version on one
// resource, as a server that cannot serve it in time.
type listRecorder struct {
	refuse string
	mu     sync.Mutex
	lists  []string
}

func (r *listRecorder) list(resource string, opts metav1.ListOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, resource+"@"+opts.ResourceVersion+string(opts.ResourceVersionMatch))
	if resource == r.refuse && opts.ResourceVersion != "" {
		err := apierrors.NewTimeoutError("Too large resource version", 1)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		return err
	}
	return nil
}

func (r *listRecorder) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.lists))
}

type recordingMetadata struct {
	metadata.Interface
	rec *listRecorder
}

func (m recordingMetadata) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return recordingGetter{m.Interface.Resource(gvr), recordingResource{m.Interface.Resource(gvr), gvr.Resource, m.rec}}
}

type recordingGetter struct {
	metadata.Getter
	recordingResource
}

func (g recordingGetter) Namespace(ns string) metadata.ResourceInterface {
	return recordingResource{g.Getter.Namespace(ns), g.resource, g.rec}
}

func (g recordingGetter) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return g.recordingResource.List(ctx, opts)
}

type recordingResource struct {
	metadata.ResourceInterface
	resource string
	rec      *listRecorder
}

func (r recordingResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if err := r.rec.list(r.resource, opts); err != nil {
		return nil, err
	}
	return r.ResourceInterface.List(ctx, opts)
}
