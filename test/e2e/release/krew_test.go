package release

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// PluginName is the krew name; krew-index keeps the manifest as plugins/terminating.yaml.
const PluginName = "terminating"

// TestKrewManifest checks plugins.yaml and a manifest generated from the
// snapshot goreleaser just built (`make release-check` sets DIST_DIR).
func TestKrewManifest(t *testing.T) {
	dist, manifest := os.Getenv("DIST_DIR"), os.Getenv("MANIFEST")
	if dist == "" || manifest == "" {
		t.Fatal("DIST_DIR and MANIFEST must name goreleaser's dist folder and plugins.yaml (run `make release-check`)")
	}
	committed, err := Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(PluginName, committed); err != nil {
		t.Errorf("plugins.yaml breaks krew's rules:\n%v", err)
	}
	for _, p := range committed.Spec.Platforms {
		labels := p.Selector.MatchLabels
		if want := ArchiveName(labels["os"], labels["arch"]); path.Base(p.URI) != want {
			t.Errorf("%s/%s: uri %s, goreleaser names its archive %s", labels["os"], labels["arch"], p.URI, want)
		}
	}
	// make test builds the snapshot for this machine only (make release-check
	// RELEASE_PLATFORMS=all builds all of them, as make release does).
	if os.Getenv("RELEASE_PLATFORMS") == "host" {
		committed = Only(committed, runtime.GOOS, runtime.GOARCH)
		if len(committed.Spec.Platforms) != 1 {
			t.Fatalf("plugins.yaml has no platform for this machine (%s/%s)", runtime.GOOS, runtime.GOARCH)
		}
	}
	// Its archives are the ones goreleaser builds, with the binary and the LICENSE
	// (the sha256 sums are those of the release it names, not of this snapshot).
	if err := CheckArchives(committed, dist, false); err != nil {
		t.Errorf("plugins.yaml does not fit the archives goreleaser builds:\n%v", err)
	}

	generated, err := Generate(committed, "v0.0.0-snapshot", "https://example.invalid/releases/download", dist)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(PluginName, generated); err != nil {
		t.Errorf("the manifest generated from the snapshot breaks krew's rules:\n%v", err)
	}
	if err := CheckArchives(generated, dist, true); err != nil {
		t.Errorf("the manifest generated from the snapshot does not match its archives:\n%v", err)
	}
	data, _ := yaml.Marshal(generated)
	if err := os.WriteFile(filepath.Join(dist, PluginName+".yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The validator must reject what krew rejects, or the test above proves nothing.
func TestValidateRejectsBrokenManifests(t *testing.T) {
	good := func() Manifest {
		m, err := Load("../../../plugins.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := Validate(PluginName, good()); err != nil {
		t.Fatalf("plugins.yaml itself: %v", err)
	}
	cases := map[string]func(*Manifest){
		"wrong name":          func(m *Manifest) { m.Metadata.Name = "plugins" },
		"version without v":   func(m *Manifest) { m.Spec.Version = "0.1.0" },
		"not semver":          func(m *Manifest) { m.Spec.Version = "v1" },
		"short sha":           func(m *Manifest) { m.Spec.Platforms[0].Sha256 = "abc" },
		"no bin":              func(m *Manifest) { m.Spec.Platforms[0].Bin = "" },
		"overlapping":         func(m *Manifest) { m.Spec.Platforms = append(m.Spec.Platforms, m.Spec.Platforms[0]) },
		"selector key":        func(m *Manifest) { m.Spec.Platforms[0].Selector.MatchLabels["distro"] = "debian" },
		"two-line short desc": func(m *Manifest) { m.Spec.ShortDescription = "a\nb" },
		"kind":                func(m *Manifest) { m.Kind = "Plugins" },
	}
	for name, breakIt := range cases {
		m := good()
		breakIt(&m)
		if Validate(PluginName, m) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Archives are reproducible: every entry carries the commit's time, so the
// sha256 sums of a release can be rebuilt from its tag.
func TestArchivesAreReproducible(t *testing.T) {
	dist := os.Getenv("DIST_DIR")
	if dist == "" {
		t.Fatal("DIST_DIR must name goreleaser's dist folder (run `make release-check`)")
	}
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	commit := time.Unix(secs, 0)
	sums, err := Checksums(dist)
	if err != nil {
		t.Fatal(err)
	}
	for name := range sums {
		files, err := ArchiveTimes(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		for f, mtime := range files {
			if !mtime.Equal(commit) {
				t.Errorf("%s: %s dated %s, not the commit's %s", name, f, mtime.UTC(), commit.UTC())
			}
		}
	}
}
