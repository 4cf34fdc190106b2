package cmd

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
)

// FuzzReplay replays whatever a stranger's snapshot file may hold through
// load, diagnosis and every output format, as `why --snapshot` and `list
// --snapshot` do: no input may panic, exit with anything but 0, 1 or 2,
// print more than one line of error, or allocate more than a ceiling. The
// seeds are the gallery's snapshots and the hostile files; make test fuzzes
// for a bounded time (make fuzz).
func FuzzReplay(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json.gz"))
	hostile, _ := filepath.Glob(filepath.Join(hostileDir, "*.json"))
	for _, path := range append(seeds, hostile...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(gunzipped(data))
	}
	// Size amplification (issue 35): a string just over the limit, and one
	// just under it quoted by the rules (a condition's message).
	over := hostileTarget("ConfigMap", "over", nil)
	over["object"].(map[string]any)["metadata"].(map[string]any)["annotations"] = map[string]any{"a": strings.Repeat("x", snapfile.MaxString+1)}
	under := hostileTarget("ConfigMap", "under", nil)
	under["object"].(map[string]any)["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "message": strings.Repeat("m ", snapfile.MaxString/2-64)}}}
	f.Add(snapshotDoc([]map[string]any{over}, []int{0}))
	f.Add(snapshotDoc([]map[string]any{under, under, under}, []int{0, 1, 2}))
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "snapshot.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, args := range [][]string{
			{"why", "--snapshot", file},
			{"why", "--snapshot", file, "-o", "wide"},
			{"why", "--snapshot", file, "-o", "json"},
			{"why", "--snapshot", file, "-o", "yaml"},
			{"list", "--snapshot", file, "--group-by", "cause"},
		} {
			_, _, err := execute(t, nil, args...)
			switch code := ExitCode(err); code {
			case ExitOK, ExitStuck:
			case ExitError:
				if line := Explain(err); strings.ContainsAny(line, "\n\r\x1b") {
					t.Errorf("%v: the error is not one escaped line: %q", args, line)
				}
			default:
				t.Errorf("%v: exit %d", args, code)
			}
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 300<<20 {
			t.Errorf("a %d-byte snapshot allocated %d MiB, want under 300", len(data), alloc>>20)
		}
	})
}
