package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
)

// A replay of a saved run prints what the live run printed, byte for byte,
// in every format, without clients: the replay's clients fail if called.
func TestSnapshotReplaysTheSavedRun(t *testing.T) {
	noCluster := func() (*kube.Clients, error) {
		t.Error("a replay asked for clients")
		return nil, os.ErrPermission
	}
	for _, args := range [][]string{
		{"why", "po/web-0", "-n", "shop"},
		{"why", "ns/old"},
		{"why", "-A"},
		{"list", "-A"},
		{"list", "pods", "-n", "shop", "--stuck-only"},
	} {
		for _, name := range []string{"run.json", "run.json.gz"} {
			file := filepath.Join(t.TempDir(), name)
			for _, format := range []string{"", "wide", "json", "yaml"} {
				live := append(append([]string{}, args...), "-o", format, "--save-snapshot", file)
				out, errOut, err := execute(t, fakes(t, cluster(), nil), live...)
				replay := append(append([]string{}, args...), "-o", format, "--snapshot", file)
				rout, rerrOut, rerr := execute(t, noCluster, replay...)
				if rout != out || ExitCode(rerr) != ExitCode(err) {
					t.Errorf("%v: replay differs: exit %d, live %d\n--- live\n%s\n--- replay\n%s\n%s", live, ExitCode(rerr), ExitCode(err), out, rout, rerrOut)
				}
				if out == "" {
					t.Errorf("%v: nothing printed: %s", live, errOut)
				}
				// Without arguments, the replay takes the saved run's.
				if bare, _, _ := execute(t, noCluster, "why", "--snapshot", file, "-o", format); args[0] == "why" && bare != out {
					t.Errorf("%v: a replay without arguments differs:\n%s", live, bare)
				}
			}
		}
	}
}

func TestSnapshotRefusesAnotherSelection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	if _, _, err := execute(t, fakes(t, cluster(), nil), "why", "po/web-0", "-n", "shop", "--save-snapshot", file); ExitCode(err) != ExitStuck {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"why", "po/cache-0", "-n", "shop"},
		{"why", "po/web-0", "-n", "other"},
		{"why", "-A"},
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), append(args, "--snapshot", file)...)
		if ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), "kubectl terminating why po/web-0 -n shop") {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"why", "--snapshot", file, "--save-snapshot", file},
		{"list", "-w", "--snapshot", file},
		{"why", "--snapshot", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if _, _, err := execute(t, fakes(t, cluster(), nil), args...); ExitCode(err) != ExitError {
			t.Errorf("%v: exit %d (%v)", args, ExitCode(err), err)
		}
	}
}

// The lab's gallery, saved by hack/fixtures.sh (make fixtures): each snapshot
// replayed without a cluster gives the table its live run printed and the
// JSON report recorded beside it. A rule change that alters a verdict shows
// here; `make golden` rewrites both from the replays after an intended change.
func TestSnapshotFixtures(t *testing.T) {
	snapshots, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json.gz"))
	if len(snapshots) < 6 {
		t.Fatalf("%d snapshot fixtures in testdata/snapshots, want the 6 hack/fixtures.sh writes", len(snapshots))
	}
	for _, file := range snapshots {
		base := strings.TrimSuffix(file, ".json.gz")
		saved, err := snapfile.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		command := saved.Selection.Command
		table, _, err := execute(t, nil, command, "--snapshot", file)
		if code := ExitCode(err); code != ExitStuck {
			t.Errorf("%s: exit %d (%v), want %d: the gallery is stuck", file, code, err, ExitStuck)
		}
		js, _, _ := execute(t, nil, command, "--snapshot", file, "-o", "json")
		for ext, got := range map[string]string{".txt": table, ".report.json": js} {
			if *update {
				if err := os.WriteFile(base+ext, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(base + ext)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s: the replay differs from %s:\n%s", file, base+ext, got)
			}
		}
	}
}
