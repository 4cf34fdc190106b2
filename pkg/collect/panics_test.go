package collect

import (
	"strings"
	"testing"
)

// A panic in one of the collector's goroutines reaches the goroutine that
// waits for them (where the command recovers it), instead of ending the
// process with status 2.
func TestPanicInAGoroutineReachesTheWaiter(t *testing.T) {
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "boom at 3") || !strings.Contains(s, "in a goroutine of the collector") {
			t.Errorf("recovered %v, want the goroutine's panic", r)
		}
	}()
	bounded(2, 5, func(i int) {
		if i == 3 {
			panic("boom at 3")
		}
	})
	t.Error("bounded returned without raising the panic")
}
