package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Snapshot files from strangers, replayed by the built binary as a user
// would: the committed hostile files (pkg/cmd/testdata/hostile: loops,
// self-nesting, exponential and wide graphs, ten million empty targets,
// damaged indexes, a target without an object named with escape sequences),
// a gzip bomb, a sparse file over the size limit, a FIFO with no writer and
// /dev/zero. Each exits 1 with one escaped error line, in under 10 s and
// under 300 MiB of memory.
func TestHostileSnapshotFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../pkg/cmd/testdata/hostile/*")
	if err != nil || len(files) < 8 {
		t.Fatalf("%d hostile files (%v), want the 8 pkg/cmd's TestHostileSnapshotsAreRefused writes", len(files), err)
	}
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.json.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(make([]byte, 200<<20))
	zw.Close()
	large := filepath.Join(dir, "large.json")
	fifo := filepath.Join(dir, "fifo")
	if err := os.WriteFile(bomb, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(large, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(large, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	files = append(files, bomb, large, fifo, "/dev/zero")
	for _, file := range files {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, plugin, "why", "--snapshot", file)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		cancel()
		res := resultOf(t, err, &out, &errOut, file)
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		t.Logf("%s: exit %d in %s, max RSS %d MiB: %s", filepath.Base(file), res.code, took.Round(time.Millisecond), rss>>20, strings.TrimSpace(res.stderr))
		if res.code != 1 || res.stdout != "" || strings.Count(res.stderr, "\n") != 1 || !strings.HasPrefix(res.stderr, "error: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one error line", file, res.code, res.stdout, res.stderr)
		}
		if strings.ContainsAny(strings.TrimSuffix(res.stderr, "\n"), "\n\r\a\x1b\u202e") {
			t.Errorf("%s: the error line is not escaped: %q", file, res.stderr)
		}
		if took > 10*time.Second || rss > 300<<20 {
			t.Errorf("%s: took %s and %d MiB, want under 10 s and 300 MiB", file, took, rss>>20)
		}
	}
}
