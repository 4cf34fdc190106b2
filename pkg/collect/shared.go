package collect

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"
)

// One list per type. A scan lists every type's metadata; a source that
// judges a type's objects (the workloads, the RBAC grants, the admission
// configurations, the APIServices, the terminating namespaces) reads that
// type again, in full. A scan of the whole cluster, unfiltered, takes a
// type's metadata from the source's list when that list has started by the
// time the scan comes to the type (a target found earlier needed it:
// early.go), and leaves those types to its end, so that it usually has. The
// CRDs' names and the namespaces are always shared (typeList.always).

// typeList is the list of one type, cluster-wide, read once per run
// (readOnce, under the type's name) by whoever asks first.
type typeList[T any] struct {
	resource schema.GroupResource
	pages    func(c *Collector) pager.ListPageFunc
	// always: the scan takes the type from this list whether or not a
	// source asked for it first: the CRDs' names are the scan's own request;
	// the namespaces, few and small, are read whole, so that the terminating
	// ones, whose conditions and spec are read after the scan, are read once.
	always bool
}

func (l typeList[T]) read(c *Collector, ctx context.Context) ([]T, error) {
	return listOnce[T](c, ctx, l.resource.String(), l.pages(c))
}

func (l typeList[T]) groupResource() schema.GroupResource { return l.resource }

func (l typeList[T]) alwaysShared() bool { return l.always }

// metadata is what the scan reads of each object, from the list.
func (l typeList[T]) metadata(c *Collector, ctx context.Context) ([]metav1.PartialObjectMetadata, error) {
	items, err := l.read(c, ctx)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.PartialObjectMetadata, len(items))
	for i := range items {
		if u, ok := any(&items[i]).(*unstructured.Unstructured); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out[i]); err != nil {
				return nil, err
			}
			continue
		}
		// A typed object's embedded ObjectMeta (TestScanListsGiveEachObjectsMetadata).
		o, ok := objectMeta(&items[i])
		if !ok {
			return nil, fmt.Errorf("%T has no ObjectMeta", items[i])
		}
		out[i].ObjectMeta = *o
	}
	return out, nil
}

// objectMeta is a typed object's embedded ObjectMeta.
func objectMeta(obj any) (*metav1.ObjectMeta, bool) {
	m, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, false
	}
	o, ok := m.GetObjectMeta().(*metav1.ObjectMeta)
	return o, ok
}

// scanList is a typeList as the scan sees it.
type scanList interface {
	groupResource() schema.GroupResource
	alwaysShared() bool
	metadata(c *Collector, ctx context.Context) ([]metav1.PartialObjectMetadata, error)
}

// The lists the sources read, whatever the targets.
var (
	deploymentList = typeList[appsv1.Deployment]{resource: schema.GroupResource{Group: "apps", Resource: "deployments"},
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.AppsV1().Deployments("").List) }}
	statefulSetList = typeList[appsv1.StatefulSet]{resource: schema.GroupResource{Group: "apps", Resource: "statefulsets"},
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.AppsV1().StatefulSets("").List) }}
	daemonSetList = typeList[appsv1.DaemonSet]{resource: schema.GroupResource{Group: "apps", Resource: "daemonsets"},
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.AppsV1().DaemonSets("").List) }}
	apiServiceTypeList = typeList[unstructured.Unstructured]{resource: apiServices.GroupResource(),
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Dynamic.Resource(apiServices).List) }}
	namespaceList = typeList[corev1.Namespace]{resource: corev1.Resource("namespaces"), always: true,
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.CoreV1().Namespaces().List) }}
	crdNameList = typeList[metav1.PartialObjectMetadata]{resource: crdResource.GroupResource(), always: true,
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Metadata.Resource(crdResource).List) }}

	clusterRoleList = typeList[rbacv1.ClusterRole]{resource: rbacv1.Resource("clusterroles"),
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.RbacV1().ClusterRoles().List) }}
	clusterRoleBindingList = typeList[rbacv1.ClusterRoleBinding]{resource: rbacv1.Resource("clusterrolebindings"),
		pages: func(c *Collector) pager.ListPageFunc {
			return pages(c.Clients.Typed.RbacV1().ClusterRoleBindings().List)
		}}
	roleList = typeList[rbacv1.Role]{resource: rbacv1.Resource("roles"),
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.RbacV1().Roles("").List) }}
	roleBindingList = typeList[rbacv1.RoleBinding]{resource: rbacv1.Resource("rolebindings"),
		pages: func(c *Collector) pager.ListPageFunc { return pages(c.Clients.Typed.RbacV1().RoleBindings("").List) }}

	validatingWebhookList = typeList[admissionregistrationv1.ValidatingWebhookConfiguration]{resource: admissionregistrationv1.Resource("validatingwebhookconfigurations"),
		pages: func(c *Collector) pager.ListPageFunc {
			return pages(c.Clients.Typed.AdmissionregistrationV1().ValidatingWebhookConfigurations().List)
		}}
	mutatingWebhookList = typeList[admissionregistrationv1.MutatingWebhookConfiguration]{resource: admissionregistrationv1.Resource("mutatingwebhookconfigurations"),
		pages: func(c *Collector) pager.ListPageFunc {
			return pages(c.Clients.Typed.AdmissionregistrationV1().MutatingWebhookConfigurations().List)
		}}
	admissionPolicyList = typeList[admissionregistrationv1.ValidatingAdmissionPolicy]{resource: admissionregistrationv1.Resource("validatingadmissionpolicies"),
		pages: func(c *Collector) pager.ListPageFunc {
			return pages(c.Clients.Typed.AdmissionregistrationV1().ValidatingAdmissionPolicies().List)
		}}
	admissionBindingList = typeList[admissionregistrationv1.ValidatingAdmissionPolicyBinding]{resource: admissionregistrationv1.Resource("validatingadmissionpolicybindings"),
		pages: func(c *Collector) pager.ListPageFunc {
			return pages(c.Clients.Typed.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List)
		}}
)

// listedNamespaces are every namespace, when the run's scan read them whole
// (or is reading them) and that list did not fail.
func (c *Collector) listedNamespaces(ctx context.Context) ([]corev1.Namespace, bool) {
	if _, started := c.reads.Load(namespaceList.resource.String()); !started {
		return nil, false
	}
	all, err := namespaceList.read(c, ctx)
	return all, err == nil
}

// scanLists are the lists a scan may take a type's metadata from.
var scanLists = func() map[schema.GroupResource]scanList {
	out := map[schema.GroupResource]scanList{}
	for _, l := range []scanList{deploymentList, statefulSetList, daemonSetList, crdNameList, namespaceList, apiServiceTypeList,
		clusterRoleList, clusterRoleBindingList, roleList, roleBindingList,
		validatingWebhookList, mutatingWebhookList, admissionPolicyList, admissionBindingList} {
		out[l.groupResource()] = l
	}
	return out
}()

// sharesLists: a scan in scope sees what a source's list holds (every
// namespace, unfiltered).
func (s Scope) sharesLists() bool { return s.AllNamespaces && !s.filtered() }

// sharedList is the list the scan takes m's metadata from, if any.
func (c *Collector) sharedList(m *meta.RESTMapping, scope Scope) scanList {
	if !scope.sharesLists() {
		return nil
	}
	l, ok := scanLists[m.Resource.GroupResource()]
	if !ok {
		return nil
	}
	if _, started := c.reads.Load(l.groupResource().String()); !started && !l.alwaysShared() {
		return nil
	}
	return l
}

// scanOrder puts the types a source may list in full last in a scan that
// may share them, keeping the order otherwise (a stable sort): by the time
// the scan comes to them, the targets found may have started their lists.
func scanOrder(mappings []*meta.RESTMapping, scope Scope) []*meta.RESTMapping {
	if !scope.sharesLists() {
		return mappings
	}
	last := func(m *meta.RESTMapping) int {
		if l, ok := scanLists[m.Resource.GroupResource()]; ok && !l.alwaysShared() {
			return 1
		}
		return 0
	}
	return slices.SortedStableFunc(slices.Values(mappings), func(a, b *meta.RESTMapping) int { return cmp.Compare(last(a), last(b)) })
}
