package collect

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// kindOf is the v1 kind of a built-in resource, as the typed clients'
// scheme knows it.
func kindOf(t *testing.T, gr schema.GroupResource) schema.GroupVersionKind {
	t.Helper()
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version != "v1" || gvk.Group != gr.Group {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gr.Resource {
			return gvk
		}
	}
	t.Fatalf("no v1 kind for %s", gr)
	return schema.GroupVersionKind{}
}

// metaScheme is a scheme for a fake metadata client that holds objects.
func metaScheme(t *testing.T) *runtime.Scheme {
	s := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Each list a scan may take metadata from gives, of each object it holds,
// the metadata the scan's own list would have: name, namespace, UID,
// labels, owners, finalizers, deletion. It is read once per run, under its
// type's name, whoever asks first.
func TestScanListsGiveEachObjectsMetadata(t *testing.T) {
	ctx := context.Background()
	for gr, l := range scanLists {
		t.Run(gr.String(), func(t *testing.T) {
			yes := true
			// (The fakes list every namespace's objects whatever the type's scope.)
			want := metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", Labels: map[string]string{"app": "web"},
				Finalizers: []string{"acme.io/cleanup"}, DeletionTimestamp: &metav1.Time{Time: time.Date(2026, 11, 22, 11, 55, 0, 0, time.UTC)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner", Controller: &yes}}}
			var typed, md, dyn []runtime.Object
			switch l.(type) {
			case typeList[metav1.PartialObjectMetadata]: // the CRDs' names
				md = append(md, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}, ObjectMeta: want})
			case typeList[unstructured.Unstructured]: // the APIServices
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"}, ObjectMeta: want})
				if err != nil {
					t.Fatal(err)
				}
				dyn = append(dyn, &unstructured.Unstructured{Object: m})
			default:
				obj, err := scheme.Scheme.New(kindOf(t, gr))
				if err != nil {
					t.Fatal(err)
				}
				want.DeepCopyInto(obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta))
				typed = append(typed, obj)
			}
			fake := kubefake.NewClientset(typed...)
			mdClient := metadatafake.NewSimpleMetadataClient(metaScheme(t), md...)
			dynClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"}, dyn...)
			c := &Collector{Clients: &kube.Clients{Typed: fake, Metadata: mdClient, Dynamic: dynClient}}
			got, err := l.metadata(c, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d objects, want 1", len(got))
			}
			g := got[0].ObjectMeta
			if g.Name != want.Name || g.Namespace != want.Namespace || g.UID != want.UID || g.Labels["app"] != "web" ||
				!slices.Equal(g.Finalizers, want.Finalizers) || !g.DeletionTimestamp.Equal(want.DeletionTimestamp) || len(g.OwnerReferences) != 1 || g.OwnerReferences[0].UID != "uid-owner" {
				t.Errorf("metadata %+v, want %+v", g, want)
			}
			if _, ok := c.reads.Load(gr.String()); !ok {
				t.Errorf("not read under %q", gr.String())
			}
			if _, err := l.metadata(c, ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(fake.Actions()) + len(mdClient.Actions()) + len(dynClient.Actions()); n != 1 {
				t.Errorf("%d requests for two asks, want 1", n)
			}
		})
	}
}

// metadataLists are the resources the metadata client was asked to list.
func metadataLists(md *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range md.Actions() {
		if a.GetVerb() == "list" {
			out = append(out, a.GetResource().Resource)
		}
	}
	return out
}

// A scan of the whole cluster takes a type's metadata from a source's list
// of it that has started (a target found earlier needed it), and lists the
// CRDs' names once with the controllers' source, whoever asks first. A scan
// with a selector, or before any source started the list, lists the type
// itself, as it does when the source's list failed.
func TestScanTakesWhatASourceListed(t *testing.T) {
	ctx := context.Background()
	deployments := &meta.RESTMapping{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), GroupVersionKind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Scope: meta.RESTScopeNamespace}
	crds := &meta.RESTMapping{Resource: crdResource, GroupVersionKind: crdResource.GroupVersion().WithKind("CustomResourceDefinition"), Scope: meta.RESTScopeRoot}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", DeletionTimestamp: &metav1.Time{}}}
	newCollector := func() (*Collector, *kubefake.Clientset, *metadatafake.FakeMetadataClient) {
		fake := kubefake.NewClientset(web)
		md := metadatafake.NewSimpleMetadataClient(metaScheme(t), &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", DeletionTimestamp: &metav1.Time{}}})
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"})
		return &Collector{Clients: &kube.Clients{Typed: fake, Metadata: md, Dynamic: dyn}}, fake, md
	}
	names := func(found []Found) []string {
		var out []string
		for _, f := range found {
			out = append(out, f.Ref().Resource+"/"+f.Object.GetName())
		}
		return out
	}
	all := Scope{AllNamespaces: true}

	c, _, md := newCollector()
	if _, err := deploymentList.read(c, ctx); err != nil { // as an early read does
		t.Fatal(err)
	}
	found, err := c.Scan(ctx, all, []*meta.RESTMapping{deployments, crds})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(found); !slices.Equal(got, []string{"deployments.apps/web"}) {
		t.Errorf("found %v, want the deployment the source listed", got)
	}
	if _, err := c.crdNames(ctx); err != nil {
		t.Fatal(err)
	}
	if got := metadataLists(md); !slices.Equal(got, []string{"customresourcedefinitions"}) {
		t.Errorf("the scan and the source listed %v with the metadata client, want the CRDs once", got)
	}

	forbidden := apierrors.NewForbidden(appsv1.Resource("deployments"), "", errors.New("no"))
	for _, tc := range []struct {
		name  string
		scope Scope
		start bool
		fail  error
		want  []string // the scan's metadata lists
	}{
		{"no source started the list", all, false, nil, []string{"deployments"}},
		{"a label selector", Scope{AllNamespaces: true, LabelSelector: "app=web"}, true, nil, []string{"deployments"}},
		{"one namespace", Scope{Namespace: "shop"}, true, nil, []string{"deployments"}},
		{"the source's list failed", all, true, errors.New("boom"), []string{"deployments"}},
		{"the source's list was refused (asked again, it would be again)", all, true, forbidden, nil},
	} {
		c, fake, md := newCollector()
		if tc.fail != nil {
			fake.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.fail
			})
		}
		if tc.start {
			_, _ = deploymentList.read(c, ctx)
		}
		if _, err := c.Scan(ctx, tc.scope, []*meta.RESTMapping{deployments}); err != nil && !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
		if got := metadataLists(md); !slices.Equal(got, tc.want) {
			t.Errorf("%s: the scan listed %v with the metadata client, want %v", tc.name, got, tc.want)
		}
	}
}

// The types a source may list in full go last in a scan that may share
// them, in their order; the others keep theirs.
func TestScanOrderLeavesSourcesListsLast(t *testing.T) {
	m := func(group, resource string) *meta.RESTMapping {
		return &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}}
	}
	mappings := []*meta.RESTMapping{m("apps", "deployments"), m("", "configmaps"), m("rbac.authorization.k8s.io", "roles"), m("apiextensions.k8s.io", "customresourcedefinitions"), m("", "pods")}
	var got []string
	for _, x := range scanOrder(mappings, Scope{AllNamespaces: true}) {
		got = append(got, x.Resource.Resource)
	}
	if want := []string{"configmaps", "customresourcedefinitions", "pods", "deployments", "roles"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := scanOrder(mappings, Scope{Namespace: "shop"}); !slices.Equal(got, mappings) {
		t.Error("a scan of one namespace, which shares nothing, was reordered")
	}
}

// A scan of the whole cluster reads the namespaces whole, in one list: the
// terminating ones found there are not read again for their spec and
// conditions. When that list fails, the scan lists their metadata and the
// namespaces are read as before (a GET each, for a few).
func TestScanReadsNamespacesWholeOnce(t *testing.T) {
	ctx := context.Background()
	namespaces := &meta.RESTMapping{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Scope: meta.RESTScopeRoot}
	shop := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "uid-shop", DeletionTimestamp: &metav1.Time{Time: time.Now()}},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	for _, fail := range []bool{false, true} {
		fake := kubefake.NewClientset(shop)
		if fail {
			fake.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("boom") })
		}
		md := metadatafake.NewSimpleMetadataClient(metaScheme(t), &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: shop.ObjectMeta})
		c := &Collector{Clients: &kube.Clients{Typed: fake, Metadata: md, Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"})}}
		found, err := c.Scan(ctx, Scope{AllNamespaces: true}, []*meta.RESTMapping{namespaces})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[0].Object.GetName() != "shop" {
			t.Fatalf("fail=%v: found %v, want namespace shop", fail, found)
		}
		got, errs := c.namespaces(ctx, []string{"shop", "gone"})
		if got["shop"] == nil || got["shop"].Status.Phase != corev1.NamespaceTerminating || !apierrors.IsNotFound(errs["gone"]) {
			t.Errorf("fail=%v: read %v, %v; want shop whole and gone not found", fail, got, errs)
		}
		var asked []string
		for _, a := range append(fake.Actions(), md.Actions()...) {
			if a.GetResource().Resource == "namespaces" {
				asked = append(asked, a.GetVerb())
			}
		}
		want := []string{"list"}
		if fail { // the typed list failed: the scan's metadata list, then a GET each
			want = []string{"list", "list", "get", "get"}
		}
		if !sameSet(asked, want) {
			t.Errorf("fail=%v: namespaces read by %v, want %v", fail, asked, want)
		}
	}
}
