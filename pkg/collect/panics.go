package collect

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// carried takes a panic out of the collector's goroutines to the goroutine
// that waits for them. A panic in a goroutine ends the process with Go's
// status 2, which runbooks read as "stuck"; raised again in the waiting
// goroutine, it reaches the command's recovery, which reports an internal
// error and exits 1.
type carried struct {
	mu    sync.Mutex
	value any
	stack []byte
}

// catch, deferred first thing in a goroutine, keeps the first panic.
func (c *carried) catch() {
	if r := recover(); r != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.value == nil {
			c.value, c.stack = r, debug.Stack()
		}
	}
}

// raise panics again, in the waiting goroutine, with what a goroutine panicked with.
func (c *carried) raise() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.value != nil {
		panic(fmt.Sprintf("%v (in a goroutine of the collector)\n%s", c.value, c.stack))
	}
}
