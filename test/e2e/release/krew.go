// Package release checks the krew manifest the way krew's own
// validate-krew-manifest does (its module is not available here), against
// the archives goreleaser built, and regenerates it from them.
package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// Manifest is krew's Plugin (apiVersion krew.googlecontainertools.github.com/v1alpha2).
type Manifest struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       Spec              `json:"spec"`
}

// Spec is the plugin's spec.
type Spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage,omitempty"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description,omitempty"`
	Caveats          string     `json:"caveats,omitempty"`
	Platforms        []Platform `json:"platforms"`
}

// Platform is one downloadable archive.
type Platform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Bin      string                `json:"bin"`
}

var (
	safeName  = regexp.MustCompile(`^[\w-]+$`)
	validSHA  = regexp.MustCompile(`^[a-f0-9]{64}$`)
	platforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "arm"}, {"linux", "386"},
		{"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"}, {"windows", "386"}}
)

// Load reads a manifest.
func Load(file string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(file)
	if err != nil {
		return m, err
	}
	return m, yaml.UnmarshalStrict(data, &m)
}

// Validate applies krew's rules (internal/index/validation): the plugin name
// (krew-index stores the manifest as plugins/NAME.yaml and takes the name from
// the file name), apiVersion and kind, a one-line short description, a semver
// version with a leading v, and platforms with a uri, a sha256, a bin and a
// selector on os/arch only; no two platforms may match the same os/arch.
func Validate(name string, m Manifest) error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(m.APIVersion == "krew.googlecontainertools.github.com/v1alpha2", "apiVersion %q is not krew's v1alpha2", m.APIVersion)
	check(m.Kind == "Plugin", "kind %q is not Plugin", m.Kind)
	check(safeName.MatchString(name), "plugin name %q is not allowed", name)
	check(m.Metadata.Name == name, "plugin should be named %q, not %q", name, m.Metadata.Name)
	check(m.Spec.ShortDescription != "" && !strings.ContainsAny(m.Spec.ShortDescription, "\r\n"), "shortDescription must be one non-empty line")
	_, err := semver.Parse(strings.TrimPrefix(m.Spec.Version, "v"))
	check(strings.HasPrefix(m.Spec.Version, "v") && err == nil, "version %q is not semver with a leading v", m.Spec.Version)
	check(len(m.Spec.Platforms) > 0, "no platform")
	for i, p := range m.Spec.Platforms {
		check(p.URI != "", "platform %d: uri has to be set", i)
		check(validSHA.MatchString(p.Sha256), "platform %d: sha256 %q is not 64 hex digits", i, p.Sha256)
		check(p.Bin != "", "platform %d: bin has to be set", i)
		check(p.Selector != nil && (len(p.Selector.MatchLabels) > 0 || len(p.Selector.MatchExpressions) > 0), "platform %d: empty selector", i)
		if p.Selector != nil {
			for k := range p.Selector.MatchLabels {
				check(k == "os" || k == "arch", "platform %d: selector key %q not supported", i, k)
			}
			for _, e := range p.Selector.MatchExpressions {
				check(e.Key == "os" || e.Key == "arch", "platform %d: selector key %q not supported", i, e.Key)
			}
		}
	}
	for _, osArch := range platforms {
		n := 0
		for _, p := range m.Spec.Platforms {
			if matches(p, osArch[0], osArch[1]) {
				n++
			}
		}
		check(n <= 1, "%d platforms match %s/%s: selectors overlap", n, osArch[0], osArch[1])
	}
	return errors.Join(errs...)
}

func matches(p Platform, goos, goarch string) bool {
	if p.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Selector)
	return err == nil && sel.Matches(labels.Set{"os": goos, "arch": goarch})
}

// Checksums reads goreleaser's checksums.txt in dist.
func Checksums(dist string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[name] = sum
		}
	}
	return sums, sc.Err()
}

// CheckArchives verifies each platform against the archive of the same name
// in dist: its sha256 (when strict), the bin inside it, and the LICENSE.
func CheckArchives(m Manifest, dist string, strict bool) error {
	var errs []error
	for _, p := range m.Spec.Platforms {
		name := path.Base(p.URI)
		file := filepath.Join(dist, name)
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: no such archive in %s", name, dist))
			continue
		}
		sum := sha256.Sum256(data)
		if strict && hex.EncodeToString(sum[:]) != p.Sha256 {
			errs = append(errs, fmt.Errorf("%s: sha256 %s in the manifest, %x in the archive", name, p.Sha256, sum))
		}
		files, err := ArchiveTimes(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if _, ok := files[p.Bin]; !ok {
			errs = append(errs, fmt.Errorf("%s: bin %q is not in the archive", name, p.Bin))
		}
		for _, f := range []string{"LICENSE", "kubectl_complete-terminating"} {
			if _, ok := files[f]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s is not in the archive", name, f))
			}
		}
	}
	return errors.Join(errs...)
}

// ArchiveTimes lists an archive's entries with their modification times.
func ArchiveTimes(file string) (map[string]time.Time, error) {
	files := map[string]time.Time{}
	if strings.HasSuffix(file, ".zip") {
		z, err := zip.OpenReader(file)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		for _, f := range z.File {
			files[f.Name] = f.Modified
		}
		return files, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		files[h.Name] = h.ModTime
	}
}

// Generate fills the version, uris and sha256 sums of a manifest from the
// archives in dist; uriPrefix is where the release's archives are downloaded from.
func Generate(m Manifest, version, uriPrefix, dist string) (Manifest, error) {
	sums, err := Checksums(dist)
	if err != nil {
		return m, err
	}
	m.Spec.Version = version
	out := make([]Platform, 0, len(m.Spec.Platforms))
	for _, p := range m.Spec.Platforms {
		name := path.Base(p.URI)
		sum, ok := sums[name]
		if !ok {
			return m, fmt.Errorf("%s is not in %s/checksums.txt", name, dist)
		}
		p.URI = strings.TrimSuffix(uriPrefix, "/") + "/" + version + "/" + name
		p.Sha256 = sum
		out = append(out, p)
	}
	m.Spec.Platforms = out
	return m, nil
}

// ArchiveName is the archive goreleaser's name_template gives a platform.
func ArchiveName(goos, goarch string) string {
	ext := "tar.gz"
	if goos == "windows" {
		ext = "zip"
	}
	return fmt.Sprintf("kubectl-terminating_%s_%s.%s", goos, goarch, ext)
}

// Only keeps the platforms of m that select goos/goarch: what a snapshot
// built for one machine can be checked against.
func Only(m Manifest, goos, goarch string) Manifest {
	var kept []Platform
	for _, p := range m.Spec.Platforms {
		if p.Selector != nil && p.Selector.MatchLabels["os"] == goos && p.Selector.MatchLabels["arch"] == goarch {
			kept = append(kept, p)
		}
	}
	m.Spec.Platforms = kept
	return m
}
