package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
)

var updateHostile = flag.Bool("update-hostile", false, "rewrite testdata/hostile from hostileFiles")

// hostileDir holds snapshot files made to break a replay; the e2e suite
// replays the same files with the built binary, measuring time and memory.
const hostileDir = "testdata/hostile"

// hostileName is a target name that would move the cursor, ring, reverse the
// line and forge a second error line if printed raw.
const hostileName = "web\x1b[2J\a\u202e-0\nerror: forged"

// snapshotDoc is a snapshot file's JSON with the given targets and roots.
func snapshotDoc(targets []map[string]any, roots []int) []byte {
	doc := map[string]any{
		"apiVersion": snapfile.APIVersion, "kind": snapfile.Kind, "pluginVersion": "v0.0.0-hostile",
		"selection": map[string]any{"command": "why", "allNamespaces": true},
		"now":       "2026-11-23T00:00:00Z", "targets": targets, "roots": roots,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

func hostileTarget(kind, name string, nested map[string]any) map[string]any {
	t := map[string]any{
		"ref": map[string]any{"apiVersion": "v1", "kind": kind, "resource": strings.ToLower(kind) + "s", "name": name, "uid": "uid-" + name},
		"object": map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{
			"name": name, "uid": "uid-" + name, "deletionTimestamp": "2026-11-22T00:00:00Z", "finalizers": []string{"foregroundDeletion"}}},
	}
	for k, v := range nested {
		t[k] = v
	}
	return t
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// gunzipped is b decompressed when it is gzip: compressors differ between Go
// versions, what they compress does not.
func gunzipped(b []byte) []byte {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return b
	}
	return out
}

// hostileFiles are the committed hostile snapshots, each with a fragment of
// the one-line error it must give.
func hostileFiles() map[string]struct {
	data []byte
	want string
} {
	chain := func(n, fanout int) []map[string]any {
		var ts []map[string]any
		for i := range n {
			var deps []int
			if i+1 < n {
				for range fanout {
					deps = append(deps, i+1)
				}
			}
			ts = append(ts, hostileTarget("ConfigMap", fmt.Sprintf("cm-%d", i), map[string]any{"dependents": deps}))
		}
		return ts
	}
	// A million and a half empty targets: 4.5 MB of JSON, 4 KB gzip-compressed.
	var empty bytes.Buffer
	empty.WriteString(`{"apiVersion":"` + snapfile.APIVersion + `","kind":"Snapshot","targets":[{}`)
	empty.WriteString(strings.Repeat(",{}", 1_500_000-1))
	empty.WriteString(`],"roots":[]}`)
	// One 4 MB finalizer name, 4 KB gzip-compressed (issue 35: one of 60
	// MB took 3.8 GB and 20 s to replay); one of 30 KB, under the longest
	// string, which no apiserver keeps.
	finalizer := func(name string, size int) map[string]any {
		t := hostileTarget("ConfigMap", name, nil)
		t["object"].(map[string]any)["metadata"].(map[string]any)["finalizers"] = []string{"example.com/" + strings.Repeat("f", size)}
		return t
	}
	// A list of half a million numbers (the roots): 1 MB.
	manyRoots := make([]int, 500_000)
	noObject := hostileTarget("ConfigMap", hostileName, nil)
	delete(noObject, "object")
	return map[string]struct {
		data []byte
		want string
	}{
		"self-nesting.json": {snapshotDoc([]map[string]any{
			hostileTarget("Namespace", "shop", map[string]any{"contents": map[string]any{"held": map[string]any{"example.com/hold": []int{0}}}}),
		}, []int{0}), "nests itself"},
		"loop.json": {snapshotDoc([]map[string]any{
			hostileTarget("ConfigMap", "a", map[string]any{"dependents": []int{1}}),
			hostileTarget("ConfigMap", "b", map[string]any{"dependents": []int{0}}),
		}, []int{0}), "nests itself"},
		"no-object.json":        {snapshotDoc([]map[string]any{noObject}, []int{0}), "has no object"},
		"out-of-range.json":     {snapshotDoc([]map[string]any{hostileTarget("ConfigMap", "a", map[string]any{"dependents": []int{7}})}, []int{0}), "target 7 of 1"},
		"exponential.json":      {snapshotDoc(chain(30, 2), []int{0}), "deeper than 8 levels"},
		"wide-fanout.json":      {snapshotDoc(chain(8, 60), []int{0}), "unfold into more than"},
		"empty-targets.json.gz": {gzipped(empty.Bytes()), "JSON objects"},
		"not-json.json":         {[]byte("{\"apiVersion\": \x1b]0;owned\a"), "not a snapshot"},
		"long-string.json.gz":   {gzipped(snapshotDoc([]map[string]any{finalizer("long", 4<<20)}, []int{0})), "a string of 4194316 bytes"},
		"bad-finalizer.json":    {snapshotDoc([]map[string]any{finalizer("bad", 30<<10)}, []int{0}), "a finalizer that is not a qualified name (30732 bytes"},
		"long-list.json.gz":     {gzipped(snapshotDoc([]map[string]any{hostileTarget("ConfigMap", "a", nil)}, manyRoots)), "a list of more than"},
	}
}

// Files from strangers: each hostile file is refused with one line naming
// what is wrong, exit 1 (never 2, which runbooks read as "stuck"), within a
// memory ceiling; nothing asks for a cluster.
func TestHostileSnapshotsAreRefused(t *testing.T) {
	files := hostileFiles()
	if *updateHostile {
		os.RemoveAll(hostileDir)
		if err := os.MkdirAll(hostileDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, f := range files {
			if err := os.WriteFile(filepath.Join(hostileDir, name), f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := map[string]string{}
	for name, f := range files {
		path := filepath.Join(hostileDir, name)
		if committed, err := os.ReadFile(path); err != nil || !bytes.Equal(gunzipped(committed), gunzipped(f.data)) {
			t.Errorf("%s differs from what hostileFiles makes: run go test ./pkg/cmd -run TestHostileSnapshots -update-hostile (%v)", path, err)
		}
		cases[path] = f.want
	}
	dir := t.TempDir()
	large := filepath.Join(dir, "large.json") // sparse: takes no disk
	if err := os.WriteFile(large, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(large, snapfile.DefaultMaxBytes+1); err != nil {
		t.Fatal(err)
	}
	cases[large] = "larger than"
	bomb := filepath.Join(dir, "bomb.json.gz") // 100 MiB of zeros in 100 KiB
	if err := os.WriteFile(bomb, gzipped(make([]byte, 100<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases[bomb] = "decompresses to more than"
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases[fifo] = "not a regular file"
	cases["/dev/zero"] = "not a regular file"
	cases[dir] = "not a regular file"

	noCluster := func() (*kube.Clients, error) {
		t.Error("a replay asked for clients")
		return nil, os.ErrPermission
	}
	for path, want := range cases {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, _, err := execute(t, noCluster, "why", "--snapshot", path)
		runtime.ReadMemStats(&after)
		line := Explain(err)
		if ExitCode(err) != ExitError || out != "" || !strings.Contains(line, want) {
			t.Errorf("%s: exit %d, stdout %q, error %q; want exit 1 and an error saying %q", path, ExitCode(err), out, line, want)
		}
		if strings.ContainsAny(line, "\n\r\a\x1b\u202e") {
			t.Errorf("%s: the error is not one escaped line: %q", path, line)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 300<<20 {
			t.Errorf("%s: the refusal allocated %d MiB, want under 300", path, alloc>>20)
		}
	}
}

// A larger limit lets a larger file in; a limit of zero or less is refused.
func TestSnapshotMaxSize(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	if _, _, err := execute(t, fakes(t, cluster(), nil), "why", "-A", "--save-snapshot", file); ExitCode(err) != ExitStuck {
		t.Fatal(err)
	}
	if _, _, err := execute(t, nil, "why", "--snapshot", file, "--snapshot-max-size", "1Ki"); err == nil || !strings.Contains(err.Error(), "--snapshot-max-size raises it") {
		t.Errorf("a 1Ki limit: %v", err)
	}
	if _, _, err := execute(t, nil, "why", "--snapshot", file, "--snapshot-max-size", "1Gi"); ExitCode(err) != ExitStuck {
		t.Errorf("a 1Gi limit: %v", err)
	}
	if _, _, err := execute(t, nil, "why", "--snapshot", file, "--snapshot-max-size", "0"); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("a zero limit: %v", err)
	}
}

// Issue 35: the largest file the default limits accept, of the text that
// costs a replay most per byte (every target quoting a condition message as
// long as a string may be), replays as a table, wide and JSON within 300 MiB
// of allocations. The figures are logged (go test -v); time is not
// asserted. Not yet bounded, and measured by hand (see the closing note of
// issue 35): -o yaml of that file (about 1.1 GiB), and a file of targets
// each with 200 long finalizers (a cause per finalizer quotes them all).
func TestLargestAcceptedSnapshotReplaysBounded(t *testing.T) {
	var targets []map[string]any
	var roots []int
	doc := snapshotDoc(nil, nil)
	for {
		tg := hostileTarget("ConfigMap", fmt.Sprintf("cm-%d", len(targets)), nil)
		tg["object"].(map[string]any)["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "False", "reason": "Failed", "message": strings.Repeat("m ", (snapfile.MaxString-1024)/2)}}}
		next := snapshotDoc(append(targets, tg), append(roots, len(targets)))
		if len(next) > snapfile.DefaultMaxBytes {
			break
		}
		targets, roots, doc = append(targets, tg), append(roots, len(targets)), next
	}
	file := filepath.Join(t.TempDir(), "messages.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"", "wide", "json"} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, _, err := execute(t, nil, "why", "--snapshot", file, "-o", format)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d targets, %d bytes, -o %q: exit %d, %d MiB allocated, %v", len(targets), len(doc), format, ExitCode(err), alloc>>20, took)
		if code := ExitCode(err); code != ExitStuck {
			t.Errorf("-o %q: exit %d (%v): the file is accepted and its targets stuck", format, code, err)
		}
		if alloc > 300<<20 {
			t.Errorf("-o %q: %d MiB allocated, want under 300", format, alloc>>20)
		}
	}
}
