package collect

import (
	"sync"
	"sync/atomic"
	"time"
)

// ScanProgress is reported while a scan runs: which scan (Phase: "the
// cluster", "namespace shop", ...), types listed out of the total, and objects
// seen so far. Done marks the last report of a scan.
type ScanProgress struct {
	Phase             string
	Types, TotalTypes int
	Objects           int64
	Done              bool
}

// Variables, not constants, so that a test can make every scan "long".
var (
	// progressDelay: scans shorter than this report nothing.
	progressDelay = time.Second
	// progressEvery is how often a long scan reports.
	progressEvery = 250 * time.Millisecond
)

// tracker counts a scan's progress and reports it, from one goroutine, to
// the collector's Progress (when set) once the scan takes longer than a second.
type tracker struct {
	types, objects atomic.Int64
	total          int
	stop           chan struct{}
	wg             sync.WaitGroup
}

func (c *Collector) track(phase string, total int) *tracker {
	t := &tracker{total: total, stop: make(chan struct{})}
	if c.Progress == nil {
		return t
	}
	report := func(done bool) {
		c.Progress(ScanProgress{Phase: phase, Types: int(t.types.Load()), TotalTypes: total, Objects: t.objects.Load(), Done: done})
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		delay := time.NewTimer(progressDelay)
		defer delay.Stop()
		select {
		case <-t.stop:
			return
		case <-delay.C:
		}
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			report(false)
			select {
			case <-t.stop:
				report(true)
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// page counts the objects of one page; typeDone one type fully listed.
func (t *tracker) page(n int) {
	if t != nil {
		t.objects.Add(int64(n))
	}
}

func (t *tracker) typeDone() {
	if t != nil {
		t.types.Add(1)
	}
}

// finish stops the reports, with a last one if any was made.
func (t *tracker) finish() {
	close(t.stop)
	t.wg.Wait()
}
