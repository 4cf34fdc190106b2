package diagnose

import (
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
	computed := 0
	ask := func() int {
		type key struct{ name string }
		return derive(s, key{"a"}, func() int { computed++; return computed })
	}
	ask()
	ask()
	if computed != 2 {
		t.Fatalf("outside a judgement: computed %d times for 2 asks, want 2", computed)
	}
	s.Targets = []*observed.Target{{}, {}, {}}
	computed = 0
	type other struct{ name string } // the same fields, another key type: another value
	mixed := false
	reportOf(s, func(*observed.Snapshot, *observed.Target) report.Item {
		ask()
		mixed = mixed || derive(s, other{"a"}, func() int { return -1 }) != -1
		return report.Item{}
	})
	if mixed {
		t.Fatal("a key of another type met this one's value")
	}
	if computed != 1 {
		t.Fatalf("while judging 3 targets: computed %d times, want 1", computed)
	}
	if _, kept := judging.Load(s); kept {
		t.Fatal("the values derived from a judged snapshot are kept after it")
	}
}
