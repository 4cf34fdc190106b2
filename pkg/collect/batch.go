package collect

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/pager"
)

// batchThreshold: above this many objects of one kind to read, one
// paginated list costs fewer requests than a GET of each.
const batchThreshold = 8

// pick is the named objects of all, by name.
func pick[T any](all []T, names []string, nameOf func(*T) string) map[string]*T {
	wanted := make(map[string]bool, len(names))
	for _, n := range names {
		wanted[n] = true
	}
	found := map[string]*T{}
	for i := range all {
		if n := nameOf(&all[i]); wanted[n] {
			found[n] = &all[i]
		}
	}
	return found
}

// getOrList reads the named objects of one kind: a GET each, in parallel, for
// a few; one paginated list for many. Names that do not exist are absent
// from found; errs holds the other failures by name (a failed list fails
// every name).
func getOrList[T any](ctx context.Context, c *Collector, names []string,
	get func(context.Context, string, metav1.GetOptions) (*T, error),
	list pager.ListPageFunc,
	nameOf func(*T) string) (found map[string]*T, errs map[string]error) {
	found, errs = map[string]*T{}, map[string]error{}
	if len(names) > batchThreshold {
		all, err := listAll[T](ctx, metav1.ListOptions{}, list)
		if err != nil {
			for _, n := range names {
				errs[n] = err
			}
			return found, errs
		}
		return pick(all, names, nameOf), errs
	}
	var mu sync.Mutex
	c.parallel(len(names), func(i int) {
		obj, err := get(ctx, names[i], metav1.GetOptions{})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs[names[i]] = err
		default:
			found[names[i]] = obj
		}
	})
	return found, errs
}
