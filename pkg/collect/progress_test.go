package collect

import (
	"sync"
	"testing"
)

// The progress says every phase under way, in the order they began, a
// scan with its counts; a phase that ends leaves it; none says diagnosing.
func TestProgressSaysWhatIsUnderWay(t *testing.T) {
	c := &Collector{Progress: &Progress{}}
	if got := c.Progress.String(); got != "diagnosing" {
		t.Errorf("before any read: %q", got)
	}
	scan := c.track("namespace shop\x1b[2J", 2)
	var wg sync.WaitGroup
	for _, n := range []int{500, 20} {
		wg.Add(1)
		go func() { defer wg.Done(); scan.page(n); scan.typeDone() }()
	}
	wg.Wait()
	events := c.track("events", 0)
	if got, want := c.Progress.String(), `reading namespace shop\x1b[2J: 2/2 types listed, 520 objects seen; events`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	scan.finish()
	if got := c.Progress.String(); got != "reading events" {
		t.Errorf("after the scan: %q", got)
	}
	events.finish()
	if got := c.Progress.String(); got != "diagnosing" {
		t.Errorf("after every read: %q", got)
	}
}

func TestNoProgressWithoutAListener(t *testing.T) {
	tr := (&Collector{}).track("the cluster", 1)
	tr.page(3)
	tr.typeDone()
	tr.finish()
	var nilTracker *tracker
	nilTracker.page(1) // listEach may run without a tracker
	nilTracker.typeDone()
}
