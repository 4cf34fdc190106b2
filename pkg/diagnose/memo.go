package diagnose

import (
	"sync"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A list -A of thousands of objects held by one operator's finalizer asks
// the same questions of each: who removes the finalizer, is it alive, what
// command finds it. While a snapshot is being judged (reportOf), what the
// judgements derive from the snapshot alone is kept for the others, and an
// object's managedFields are parsed once for the rules that read them. The
// snapshot does not change while it is judged, and nothing is kept after:
// outside reportOf (the collector asking what a target needs, while it
// still reads), derive computes each time.

// judging maps each snapshot being judged to what its judgements derived.
var judging sync.Map // *observed.Snapshot -> *sync.Map

// whileJudging keeps what is derived from s until the returned func is called.
func whileJudging(s *observed.Snapshot) (done func()) {
	if _, loaded := judging.LoadOrStore(s, &sync.Map{}); loaded {
		return func() {} // judged twice at once: the first judgement keeps it
	}
	return func() { judging.Delete(s) }
}

// derive is compute's value for key, computed once per snapshot being
// judged (judgements asking at once wait for the one computing). Keys of
// different types never meet (each use has its own key type); compute must
// read nothing but the snapshot and the key, and its value must not be
// changed by those who receive it.
func derive[K comparable, V any](s *observed.Snapshot, key K, compute func() V) V {
	m, ok := judging.Load(s)
	if !ok {
		return compute()
	}
	values := m.(*sync.Map)
	v, ok := values.Load(key)
	if !ok {
		v, _ = values.LoadOrStore(key, sync.OnceValue(compute))
	}
	return v.(func() V)()
}
