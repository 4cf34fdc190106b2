// Package parallel runs work on several goroutines and brings a panic in
// any of them back to the goroutine that waits: a panic in a goroutine ends
// the process with Go's status 2, which runbooks read as "stuck"; raised
// again in the waiting goroutine, it reaches the command's recovery, which
// reports an internal error and exits 1.
package parallel

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Run runs fn(0) .. fn(n-1), at most limit at once, and raises the first
// panic of any of them again once all are done; who names the work in it.
// A few workers take the indices in turn: a goroutine each (three thousand
// held objects judged) grew three thousand stacks from their first size, a
// twentieth of list -A's CPU.
func Run(who string, limit, n int, fn func(i int)) {
	c := Carry{Who: who}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(limit, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Catch()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
	c.Raise()
}

// Carry takes a panic out of goroutines a caller starts itself.
type Carry struct {
	// Who names the work, in the panic raised again.
	Who   string
	mu    sync.Mutex
	value any
	stack []byte
}

// Catch, deferred first thing in a goroutine, keeps the first panic.
func (c *Carry) Catch() {
	if r := recover(); r != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.value == nil {
			c.value, c.stack = r, debug.Stack()
		}
	}
}

// Raise panics again, in the waiting goroutine, with what a goroutine panicked with.
func (c *Carry) Raise() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.value != nil {
		panic(fmt.Sprintf("%v (in a goroutine of %s)\n%s", c.value, c.Who, c.stack))
	}
}
