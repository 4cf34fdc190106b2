package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// make demo, the README's first command (hack/demo.sh), run beside the
// suite's lab with its own directory and plugin: a diagnosis as recorded
// before anything is built, the shipped snapshot replayed by the plugin,
// then the live gallery diagnosed; its lab stopped after.
// The lab's binaries are the suite's (build.sh finds them up to date).
func TestDemo(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_DIR="+dir, "DEMO_PLUGIN="+filepath.Join(dir, "kubectl-terminating"), "LAB_BIN="+labBins, "NO_COLOR=1", "COLUMNS=")
	t.Cleanup(func() {
		down := exec.Command(filepath.Join(dir, "tools", "lab"), "down", "-dir", filepath.Join(dir, "run"))
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("lab down: %v\n%s", err, out)
		}
	})
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, text)
	}
	// First a diagnosis as recorded, before anything is built; then the
	// plugin's replay; then the live lab.
	recorded, replayed, built := strings.Cut(text, "building bin/kubectl-terminating... ")
	replayed, live, found := strings.Cut(replayed, "Now the same gallery live:")
	if !built || !found || !strings.Contains(recorded, "$ kubectl terminating why pod/web-0 -n shop\npod/web-0 -n shop  CRITICAL") || !strings.Contains(recorded, "critical NodeUnreachable") {
		t.Errorf("no diagnosis before the build:\n%s", recorded)
	}
	for _, want := range []string{"replaying a snapshot taken", "$ kubectl terminating list -A --snapshot", "NodeUnreachable"} {
		if !strings.Contains(replayed, want) {
			t.Errorf("the replay lacks %q:\n%s", want, replayed)
		}
	}
	for _, want := range []string{"lab binaries up to date", "$ kubectl terminating why pod/web-0 -n shop --kubeconfig", "critical NodeUnreachable", "FinalizerPending",
		"$ kubectl terminating preflight ns/shop --kubeconfig", "namespace/shop  CRITICAL  not being deleted  its deletion WOULD STICK", "The lab is still running"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live part lacks %q:\n%s", want, live)
		}
	}
}
