package collect

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/pager"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
)

// Early reads. The sources run after the scan, stage by stage. A source
// whose lists do not depend on which targets there are (every webhook
// configuration, every workload and RBAC grant) starts them as soon as the
// scan finds a target that needs them (source.early), and takes what they
// read when it runs: the lists overlap the scan instead of following it.
// Nothing is read that the source would not read: a read runs once per
// collector, by whoever asks first (readOnce), and only once a target needs
// it.

// onceRead is one read of a run. A panic in it is raised again in each
// caller: in the source, which the collector's workers carry to the
// command's recovery.
type onceRead struct {
	once  sync.Once
	value any
	err   error
	carry parallel.Carry
}

// readOnce is read's answer, once per collector and key: the first caller
// reads, the others wait for its answer.
func readOnce[T any](c *Collector, key string, read func() (T, error)) (T, error) {
	v, _ := c.reads.LoadOrStore(key, &onceRead{})
	r := v.(*onceRead)
	r.once.Do(func() {
		defer r.carry.Catch()
		r.value, r.err = read()
	})
	r.carry.Raise()
	value, _ := r.value.(T)
	return value, r.err
}

// listOnce lists every object list pages through (listAll), once per
// collector and key.
func listOnce[T any](c *Collector, ctx context.Context, key string, list pager.ListPageFunc) ([]T, error) {
	return readOnce(c, key, func() ([]T, error) { return listAll[T](ctx, metav1.ListOptions{}, list) })
}

// startEarly starts the early reads the object found needs (as its rules
// say of it as listed), each once per run. Once all have started, it asks
// nothing more: the rules are walked for the first objects found alone.
func (c *Collector) startEarly(ctx context.Context, f Found) {
	if c.earlyStarted.Load() == int32(len(earlySources())) {
		return
	}
	needs := needsOfFound(f)
	for _, src := range earlySources() {
		if !needs.Has(src.earlyOn) {
			continue
		}
		once, _ := c.early.LoadOrStore(src.name, &sync.Once{})
		once.(*sync.Once).Do(func() {
			c.earlyStarted.Add(1)
			go func() {
				defer new(parallel.Carry).Catch() // the source raises it again when it asks (listOnce)
				src.early(c, ctx)
			}()
		})
	}
}

// earlySources are the registered sources with early reads.
var earlySources = sync.OnceValue(func() []source {
	var out []source
	for _, s := range sources {
		if s.early != nil {
			out = append(out, s)
		}
	}
	return out
})

// startEarlyEvents reads, once the scan has listed the namespaces, the
// events of the few being deleted (batchThreshold at most): the events
// source reads a terminating namespace's events as one list, for its held
// objects, which are many targets. Of more namespaces, it decides after the
// scan, and may read every event at once.
func (c *Collector) startEarlyEvents(ctx context.Context, namespaces []Found) {
	var deleted []string
	for _, f := range namespaces {
		if f.Terminating() {
			deleted = append(deleted, f.Object.GetName())
		}
	}
	if len(deleted) > batchThreshold {
		return
	}
	for _, ns := range deleted {
		go func() {
			defer new(parallel.Carry).Catch() // the source raises it again when it asks (readOnce)
			_, _ = c.namespaceEvents(ctx, ns)
		}()
	}
}
