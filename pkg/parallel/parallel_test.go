package parallel

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every index runs once, never more than limit at once; a panic in one is
// raised again in the caller once the others are done.
func TestRun(t *testing.T) {
	const n, limit = 200, 3
	var mu sync.Mutex
	ran := make([]int, n)
	var inFlight, most atomic.Int64
	Run("the test", limit, n, func(i int) {
		now := inFlight.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		time.Sleep(100 * time.Microsecond)
		inFlight.Add(-1)
		mu.Lock()
		ran[i]++
		mu.Unlock()
	})
	for i, k := range ran {
		if k != 1 {
			t.Fatalf("index %d ran %d times", i, k)
		}
	}
	if m := most.Load(); m > limit || m < 2 {
		t.Errorf("at most %d at once, want 2 to %d", m, limit)
	}

	var done atomic.Int64
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "boom (in a goroutine of the test)") {
			t.Errorf("raised %v", r)
		}
		if done.Load() != n-1 {
			t.Errorf("%d of the others done when the panic was raised, want %d", done.Load(), n-1)
		}
	}()
	Run("the test", limit, n, func(i int) {
		if i == 0 {
			panic("boom")
		}
		done.Add(1)
	})
	t.Error("no panic raised")
}
