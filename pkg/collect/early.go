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
// Nothing is read that the source would not read: a list runs once per
// collector, by whoever asks first (listOnce), and only once a target needs
// it.

// onceList is one list of a run. A panic in it is raised again in each
// caller: in the source, which the collector's workers carry to the
// command's recovery.
type onceList struct {
	once  sync.Once
	items any
	err   error
	carry parallel.Carry
}

// listOnce lists every object list pages through (listAll), once per
// collector and key: the first caller lists, the others wait for its answer.
func listOnce[T any](c *Collector, ctx context.Context, key string, list pager.ListPageFunc) ([]T, error) {
	v, _ := c.lists.LoadOrStore(key, &onceList{})
	l := v.(*onceList)
	l.once.Do(func() {
		defer l.carry.Catch()
		l.items, l.err = listAll[T](ctx, metav1.ListOptions{}, list)
	})
	l.carry.Raise()
	items, _ := l.items.([]T)
	return items, l.err
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
