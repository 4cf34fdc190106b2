package diagnose

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// TestDeriveOnlyWhileJudging: a value derived from a snapshot is computed
// once while it is judged, and each time outside (the collector asks what
// a target needs while it still changes the snapshot); nothing is kept
// after the judgement.
func TestDeriveOnlyWhileJudging(t *testing.T) {
	s := observed.New(time.Now())
	var computed atomic.Int32 // the targets are judged at once
	ask := func() int {
		type key struct{ name string }
		return derive(s, key{"a"}, func() int { return int(computed.Add(1)) })
	}
	ask()
	ask()
	if n := computed.Load(); n != 2 {
		t.Fatalf("outside a judgement: computed %d times for 2 asks, want 2", n)
	}
	// More targets than CPUs, so that judgements ask at once.
	s.Targets = make([]*observed.Target, 4*runtime.GOMAXPROCS(0)+3)
	computed.Store(0)
	type other struct{ name string } // the same fields, another key type: another value
	var mixed atomic.Bool
	reportOf(s, func(*observed.Snapshot, *observed.Target) report.Item {
		ask()
		if derive(s, other{"a"}, func() int { return -1 }) != -1 {
			mixed.Store(true)
		}
		return report.Item{}
	})
	if mixed.Load() {
		t.Fatal("a key of another type met this one's value")
	}
	if n := computed.Load(); n != 1 {
		t.Fatalf("while judging %d targets: computed %d times, want 1", len(s.Targets), n)
	}
	if _, kept := judging.Load(s); kept {
		t.Fatal("the values derived from a judged snapshot are kept after it")
	}
}
