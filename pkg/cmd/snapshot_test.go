package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapfile"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/version"
)

// replayMark matches the mark a replay's -o json or yaml report carries
// (its last field in JSON, in its sorted place in YAML).
var replayMark = map[string]*regexp.Regexp{
	"json": regexp.MustCompile(`,\n    "replay": \{\n(        .*\n)+    \}`),
	"yaml": regexp.MustCompile(`(?m)^replay:\n(  .*\n)+`),
}

// unmarked is a replay's output without its replay mark, which a report in
// JSON or YAML must have; false if it has none.
func unmarked(format, out string) (string, bool) {
	mark, ok := replayMark[format]
	if !ok {
		return out, true // a table: the banner is on stderr
	}
	return mark.ReplaceAllString(out, ""), mark.MatchString(out)
}

// A replay of a saved run prints what the live run printed, byte for byte,
// in every format (JSON and YAML marked as a replay), without clients: the
// replay's clients fail if called.
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
				rout, marked := unmarked(format, rout)
				if rout != out || !marked || ExitCode(rerr) != ExitCode(err) {
					t.Errorf("%v: replay differs: exit %d, live %d\n--- live\n%s\n--- replay\n%s\n%s", live, ExitCode(rerr), ExitCode(err), out, rout, rerrOut)
				}
				if out == "" {
					t.Errorf("%v: nothing printed: %s", live, errOut)
				}
				// Without arguments, the replay takes the saved run's.
				if bare, _, _ := execute(t, noCluster, "why", "--snapshot", file, "-o", format); args[0] == "why" && must(unmarked(format, bare)) != out {
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

// A snapshot holds what the rules read and nothing else: a secret planted in
// every field a user could put one in never reaches the file, and the
// replay still prints the live report.
func TestSnapshotHoldsNoSecrets(t *testing.T) {
	const secret = "s3cr3t-planted"
	objs := cluster()
	for _, o := range objs {
		m := o.(metav1.Object)
		m.SetLabels(map[string]string{"token": secret})
		m.SetAnnotations(map[string]string{"password": secret, "kubectl.kubernetes.io/last-applied-configuration": secret})
		pod, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec:    &corev1.ExecAction{Command: []string{"check", secret}},
			HTTPGet: &corev1.HTTPGetAction{Path: "/?key=" + secret, HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: secret}}}}}
		c := &pod.Spec.Containers[0]
		c.Image = "registry.example.com/app:v1"
		c.Command, c.Args = []string{"app", "--password=" + secret}, []string{secret}
		c.Env = []corev1.EnvVar{{Name: "PASSWORD", Value: secret}}
		c.EnvFrom = []corev1.EnvFromSource{{Prefix: secret, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe, probe, probe
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain", secret}}}}
		pod.Spec.InitContainers = []corev1.Container{*c.DeepCopy()}
		pod.Spec.InitContainers[0].Name = "init"
		pod.Spec.Volumes = []corev1.Volume{
			{Name: "flex", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/flex", Options: map[string]string{"password": secret}}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.example.com", VolumeAttributes: map[string]string{"key": secret}}}},
			{Name: "git", VolumeSource: corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://user:" + secret + "@git.example.com/repo"}}},
		}
		pod.Spec.Hostname = secret
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: "sidecar",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: secret}}})
		pod.Status.Message = secret
	}
	file := filepath.Join(t.TempDir(), "run.json")
	live, _, err := execute(t, fakes(t, objs, nil), "why", "-A", "-o", "json", "--save-snapshot", file)
	if ExitCode(err) != ExitStuck {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), secret); n > 0 {
		t.Errorf("the snapshot holds the planted secret %d times", n)
	}
	for _, written := range []string{"example.com/flex", "csi.example.com"} {
		if !strings.Contains(string(data), written) {
			t.Errorf("the snapshot lost %s, which the rules read", written)
		}
	}
	replay, _, err := execute(t, nil, "why", "--snapshot", file, "-o", "json")
	if replay, marked := unmarked("json", replay); ExitCode(err) != ExitStuck || replay != live || !marked {
		t.Errorf("the replay differs from the live report (exit %d)", ExitCode(err))
	}
}

func must(s string, ok bool) string {
	if !ok {
		return "(not marked as a replay)\n" + s
	}
	return s
}

// A replay says so: on stderr, when the snapshot was taken, of which
// context, by which plugin version; the JSON report carries the same.
func TestReplaySaysSo(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: prod-eu, context: {cluster: c, user: u}}, {name: other, context: {cluster: c, user: u}}]
current-context: prod-eu
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags   []string
		context string
	}{{nil, "prod-eu"}, {[]string{"--context", "other"}, "other"}} {
		file := filepath.Join(dir, "run.json.gz")
		live := append([]string{"why", "po/web-0", "-n", "shop", "--kubeconfig", kubeconfig, "--save-snapshot", file}, tc.flags...)
		if _, errOut, err := execute(t, fakes(t, cluster(), nil), live...); ExitCode(err) != ExitStuck || errOut != "" {
			t.Fatalf("%v: %v %q", live, err, errOut)
		}
		later := func(o *Options) { o.now = func() time.Time { return now.Add(3 * time.Hour) } }
		out, errOut, err := executeWith(t, nil, later, "why", "--snapshot", file, "-o", "json")
		want := `replaying a snapshot taken 2026-11-22T12:00:00Z (3h ago), context "` + tc.context + `", plugin ` + version.String() + ": not the cluster now\n"
		if ExitCode(err) != ExitStuck || errOut != want {
			t.Errorf("%v: exit %d, stderr %q, want %q", live, ExitCode(err), errOut, want)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Replay == nil {
			t.Fatalf("%v: %v, replay %v", live, err, r.Replay)
		}
		if rp := r.Replay; !rp.TakenAt.Time.Equal(now) || rp.Context != tc.context || rp.PluginVersion != version.String() {
			t.Errorf("%v: replay %+v", live, *r.Replay)
		}
	}
	// A live run is no replay.
	if out, _, _ := execute(t, fakes(t, cluster(), nil), "why", "po/web-0", "-n", "shop", "-o", "json"); strings.Contains(out, `"replay"`) {
		t.Errorf("a live report is marked as a replay:\n%s", out)
	}
}

// A stranger's snapshot labels itself: its context and plugin version are
// cut to a bound when read and escaped in the banner.
func TestReplayBannerOfAStrangersFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	if _, _, err := execute(t, fakes(t, cluster(), nil), "why", "po/web-0", "-n", "shop", "--save-snapshot", file); ExitCode(err) != ExitStuck {
		t.Fatal(err)
	}
	saved, err := snapfile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	saved.Context = "\x1b]0;owned\a\x1b[2J" + strings.Repeat("é", 15_000) // 30 KB: under MaxString, far over the banner's bound
	saved.PluginVersion = "v9\u202e\nerror: forged"
	if err := snapfile.Save(file, saved); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := execute(t, nil, "why", "--snapshot", file, "-o", "json")
	if ExitCode(err) != ExitStuck || strings.Count(errOut, "\n") != 1 || strings.ContainsAny(strings.TrimSuffix(errOut, "\n"), "\x1b\a\n\u202e") || len(errOut) > 1000 {
		t.Errorf("exit %d, banner of %d bytes: %q", ExitCode(err), len(errOut), errOut)
	}
	if !strings.Contains(errOut, `, context "\x1b]0;owned\a\x1b[2Jééé`) || !strings.Contains(errOut, `, plugin v9\u202e\nerror: forged: not the cluster now`) {
		t.Errorf("banner %q", errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Replay == nil || len(r.Replay.Context) > 300 || !utf8.ValidString(r.Replay.Context) {
		t.Errorf("%v: replay %+v", err, r.Replay)
	}
}
