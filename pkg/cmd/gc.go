package cmd

import (
	"os"
	"runtime/debug"
)

// gcPercent and gcMemoryLimit pace the garbage collector for a run of a
// second or two: the heap may grow to seventeen times what is live between
// collections, and to 64 MB at least (the runtime's 4 MB minimum, scaled by
// gcPercent), up to a soft limit past which it collects as often as needed,
// so that the largest snapshot a replay accepts stays within its memory
// bound (300 MiB peak RSS, TestLargestAcceptedSnapshotReplaysBounded runs
// under these settings). At Go's default of twice, the collector's marking
// was a sixth of list -A's CPU over thousands of held objects; at five
// times, such a run collected once more in about half its runs, near its
// end, and those took 25-60 ms more CPU; at nine, it always did, once,
// between the scan and the judgement (some 10 ms of its wall time), while
// what it allocates in all (about 40 MB over 3,000 held objects) fits under
// 64 MB.
const (
	gcPercent     = 1600
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
