package collect

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
)

// A list with no resourceVersion is a consistent read: the apiserver serves
// what etcd holds at that moment, since Kubernetes 1.31 from its watch cache
// once the cache has caught up, which still costs a round trip to etcd per
// list for etcd's current revision. A scan of the whole cluster lists every
// type, a thousand where operators install hundreds of CRDs.
//
// The scan lists the APIServices first, a consistent read; the lists it
// starts after that one has returned ask for data not older than it
// (resourceVersionMatch=NotOlderThan, the guarantee client-go's informers
// rely on), which the watch cache serves with no round trip to etcd. What the
// scan reads is then still from after it began, as before. Only the types
// the kube-apiserver serves itself are listed so: an aggregated API server
// (an APIService with a service) keeps resource versions of its own.

// freshness is what the scan's later lists ask for.
type freshness struct {
	// resourceVersion is the APIServices list's.
	resourceVersion string
	// aggregated are the group versions an APIService with a service serves.
	aggregated map[schema.GroupVersion]bool
}

// startFreshness lists the APIServices in the background at the start of a
// scan of the whole cluster (whose types they are among, so the scan takes
// their metadata from that list: no request is added), and keeps what the
// later lists ask for when that list has returned.
func (c *Collector) startFreshness(ctx context.Context, scope Scope, mappings []*meta.RESTMapping) {
	if !scope.sharesLists() || !slices.ContainsFunc(mappings, func(m *meta.RESTMapping) bool { return m.Resource == apiServices }) {
		return
	}
	apiServiceTypeList.begin(c)
	go func() {
		defer new(parallel.Carry).Catch() // the APIServices' source raises it again when it asks
		c.readFreshness(ctx)
	}()
}

// readFreshness lists the APIServices (once a run) and keeps what the
// scan's later lists ask for.
func (c *Collector) readFreshness(ctx context.Context) {
	items, err := c.apiServiceList(ctx)
	rv, _ := c.apiServicesRV.Load().(string)
	if err != nil || rv == "" {
		return
	}
	f := &freshness{resourceVersion: rv, aggregated: map[schema.GroupVersion]bool{}}
	for i := range items {
		if a := apiServiceOf(&items[i]); a.Service != "" {
			f.aggregated[schema.GroupVersion{Group: a.Group, Version: a.Version}] = true
		}
	}
	c.fresh.Store(f)
}

// notOlderThan sets opts to ask for data not older than the APIServices
// list, when that list has returned and gv is the kube-apiserver's own.
func (c *Collector) notOlderThan(opts *metav1.ListOptions, gv schema.GroupVersion) bool {
	f := c.fresh.Load()
	if f == nil || f.aggregated[gv] {
		return false
	}
	opts.ResourceVersion, opts.ResourceVersionMatch = f.resourceVersion, metav1.ResourceVersionMatchNotOlderThan
	return true
}

// refusedFreshness: the server did not serve a list at that resource
// version (its watch cache could not catch up in time, or it does not know
// the parameter); a consistent read is asked instead.
func refusedFreshness(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) || apierrors.IsBadRequest(err)
}

// apiServicePages lists the APIServices and keeps the list's resource
// version for the scan's later lists.
func apiServicePages(c *Collector) pager.ListPageFunc {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		l, err := c.Clients.Dynamic.Resource(apiServices).List(ctx, o)
		if err != nil {
			return nil, err
		}
		if o.Continue == "" {
			c.apiServicesRV.Store(l.GetResourceVersion())
		}
		return l, nil
	}
}
