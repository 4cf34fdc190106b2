package cmd

import (
	"os"
	"runtime/debug"
)

// gcPercent and gcMemoryLimit pace the garbage collector for a run of a
// second or two: the heap may grow to nine times what is live between
// collections (at Go's default of twice, the collector's marking was a sixth
// of list -A's CPU over thousands of held objects; at five times, a run over
// 3,000 held objects collected once more in about half its runs, at the
// end, and those took 25-60 ms more CPU: marking thousands of objects'
// maps while the rules read them), up to a soft limit past
// which it collects as often as needed, so that the largest snapshot a
// replay accepts stays within its memory bound (300 MiB peak RSS,
// TestLargestAcceptedSnapshotReplaysBounded runs under these settings).
const (
	gcPercent     = 800
	gcMemoryLimit = 192 << 20
)

// TuneGarbageCollector applies gcPercent and gcMemoryLimit, each unless the
// environment sets it (GOGC, GOMEMLIMIT).
func TuneGarbageCollector() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}
