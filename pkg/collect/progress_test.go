package collect

import (
	"sync"
	"testing"
	"time"
)

func TestProgressOfALongScan(t *testing.T) {
	progressDelay, progressEvery = 0, time.Millisecond
	defer func() { progressDelay, progressEvery = time.Second, 250*time.Millisecond }()
	var mu sync.Mutex
	var got []ScanProgress
	c := &Collector{Progress: func(p ScanProgress) { mu.Lock(); got = append(got, p); mu.Unlock() }}
	tr := c.track("namespace shop", 2)
	tr.page(500)
	tr.page(20)
	tr.typeDone()
	tr.typeDone()
	time.Sleep(20 * time.Millisecond) // let the reporter run at least once more
	tr.finish()
	mu.Lock()
	defer mu.Unlock()
	last := got[len(got)-1]
	if len(got) < 2 || last != (ScanProgress{Phase: "namespace shop", Types: 2, TotalTypes: 2, Objects: 520, Done: true}) {
		t.Errorf("reports %+v", got)
	}
}

func TestNoProgressForAShortScanOrWithoutAListener(t *testing.T) {
	var got []ScanProgress
	c := &Collector{Progress: func(p ScanProgress) { got = append(got, p) }}
	tr := c.track("the cluster", 1) // the default one-second delay: finished long before
	tr.page(3)
	tr.finish()
	(&Collector{}).track("the cluster", 1).finish()
	var nilTracker *tracker
	nilTracker.page(1) // listEach may run without a tracker
	if len(got) != 0 {
		t.Errorf("a short scan reported %+v", got)
	}
}
