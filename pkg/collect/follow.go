package collect

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
)

// Change is one thing Follow saw happen to an object it follows, or a read
// of it failing.
type Change struct {
	// Found is the object: its latest state, or its last known one when Gone.
	Found Found
	// Gone: deleted, or replaced by another object of the same name.
	Gone bool
	// Err is a list or watch that failed. A transient failure (the apiserver
	// restarting or overloaded) is retried with backoff (Retrying); after any
	// other, the objects of that resource and namespace are no longer followed.
	Err      error
	Retrying bool
}

// Sleep waits d, or less if ctx ends (then it returns ctx.Err()).
type Sleep func(ctx context.Context, d time.Duration) error

// followGroup is the objects of one resource in one namespace, followed by
// one list and one watch.
type followGroup struct {
	gvr       schema.GroupVersionResource
	namespace string
	pending   map[string]Found // by name
}

// Follow watches the objects until each is gone or ctx ends, and sends what
// happens to them on out. Objects of one resource in one namespace share a
// list and a watch: the list gives the resourceVersion to watch from and shows
// what went while nothing watched; when the watch ends (the apiserver
// restarting, its own timeout, a resourceVersion too old) the group is listed
// again. Follow returns when every group is done.
//
// Why not client-go's tools/watch: NewRetryWatcher gives up on an expired
// resourceVersion (410) instead of listing again, and UntilWithSync's
// informer relists and backs off inside its reflector, where a failure is
// logged, not reported: wait must say once per outage that it is retrying,
// give up at once on Forbidden, tell a replaced object (a new UID) from the
// same one, and run its unit tests on a fake clock. The loop below does these
// four things and nothing else.
func (c *Collector) Follow(ctx context.Context, found []Found, sleep Sleep, out chan<- Change) {
	groups := map[[2]string]*followGroup{}
	var order []*followGroup
	for _, f := range found {
		key := [2]string{QualifiedResource(f.GVR), f.Object.GetNamespace()}
		g := groups[key]
		if g == nil {
			g = &followGroup{gvr: f.GVR, namespace: f.Object.GetNamespace(), pending: map[string]Found{}}
			groups[key] = g
			order = append(order, g)
		}
		g.pending[f.Object.GetName()] = f
	}
	done := make(chan struct{})
	p := parallel.Carry{Who: collectorWork}
	for _, g := range order {
		go func() {
			defer func() { done <- struct{}{} }()
			defer p.Catch()
			c.followGroup(ctx, g, sleep, out)
		}()
	}
	for range order {
		<-done
	}
	p.Raise()
}

func (c *Collector) followGroup(ctx context.Context, g *followGroup, sleep Sleep, out chan<- Change) {
	send := func(ch Change) bool {
		select {
		case out <- ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	retry := kube.Backoff{}
	for len(g.pending) > 0 && ctx.Err() == nil {
		started := c.Now()
		err := c.listAndWatch(ctx, g, send)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !kube.Transient(err):
			send(Change{Err: err})
			return
		case err != nil:
			if !send(Change{Err: err, Retrying: true}) || sleep(ctx, retry.Next()) != nil {
				return
			}
		case c.Now().Sub(started) < time.Second:
			// A watch the server ends at once: do not list in a tight loop.
			if sleep(ctx, retry.Next()) != nil {
				return
			}
		default:
			retry = kube.Backoff{}
		}
	}
}

// listAndWatch lists the group, reports what went, and watches the rest until
// the watch ends or nothing is left. A nil error means "list again".
func (c *Collector) listAndWatch(ctx context.Context, g *followGroup, send func(Change) bool) error {
	var ri dynamic.ResourceInterface = c.Clients.Dynamic.Resource(g.gvr)
	if g.namespace != "" {
		ri = c.Clients.Dynamic.Resource(g.gvr).Namespace(g.namespace)
	}
	opts := metav1.ListOptions{}
	if len(g.pending) == 1 {
		for name := range g.pending {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
	}
	// The pages of one list share its resourceVersion, which the watch
	// starts from.
	p := pager.New(pages(ri.List))
	p.PageSize = pageSize
	list, _, err := p.List(ctx, opts)
	if err != nil {
		return err
	}
	there := map[string]*unstructured.Unstructured{}
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		if u, ok := o.(*unstructured.Unstructured); ok {
			there[u.GetName()] = u
		}
		return nil
	}); err != nil {
		return err
	}
	listed, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	for name := range g.pending {
		if !g.update(name, there[name], false, send) {
			return nil
		}
	}
	if len(g.pending) == 0 {
		return nil
	}
	opts.ResourceVersion = listed.GetResourceVersion()
	opts.AllowWatchBookmarks = true
	w, err := ri.Watch(ctx, opts)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return nil // too old a resourceVersion: list again
			}
			return err
		case watch.Added, watch.Modified, watch.Deleted:
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || g.pending[obj.GetName()].Object == nil {
				continue
			}
			if !g.update(obj.GetName(), obj, ev.Type == watch.Deleted, send) || len(g.pending) == 0 {
				return nil
			}
		}
	}
	return nil
}

// update records what became of the pending object called name: gone when
// obj is nil (not listed), deleted, or another object (a new UID); otherwise
// obj is its new state. It returns false when nobody receives any more.
func (g *followGroup) update(name string, obj *unstructured.Unstructured, deleted bool, send func(Change) bool) bool {
	f := g.pending[name]
	if obj == nil || deleted || obj.GetUID() != f.Object.GetUID() {
		delete(g.pending, name)
		return send(Change{Found: f, Gone: true})
	}
	f.Object = obj
	g.pending[name] = f
	return send(Change{Found: f})
}
