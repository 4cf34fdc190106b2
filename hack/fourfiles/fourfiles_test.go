// Package fourfiles keeps docs/architecture.md's "Adding a cause" true: a
// data source and a cause that uses it are four files besides their tests.
package fourfiles

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The four files a contributor writes for a throwaway source (a ConfigMap's
// data) and the cause it explains (an object held while a flag says hold),
// as docs/architecture.md says: the catalogue entry, the declaration, the
// reader, the rule.
var handWritten = map[string]string{
	"pkg/observed/throwaway.go": `package observed

// ThrowawayFlags is the data of the ConfigMap kube-system/throwaway-flags.
var ThrowawayFlags = Declare[map[string]string]("throwawayFlags")
`,
	"pkg/collect/throwaway.go": `package collect

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "throwaway flags", after: nesting, read: (*Collector).readThrowawayFlags,
		permissions: []Permission{{Read: "` + "`get`" + ` configmaps/throwaway-flags in kube-system", UsedFor: "the throwaway flags", Without: "not judged"}}})
}

func (c *Collector) readThrowawayFlags(ctx context.Context, s *observed.Snapshot) {
	targets := c.needing(s, diagnose.ThrowawayEvidence)
	if len(targets) == 0 {
		return
	}
	cm, err := c.Clients.Typed.CoreV1().ConfigMaps("kube-system").Get(ctx, "throwaway-flags", metav1.GetOptions{})
	if err != nil {
		for _, t := range targets {
			c.skipTarget(t, skipOf("get configmaps/throwaway-flags", err))
		}
		return
	}
	observed.ThrowawayFlags.Set(s, cm.Data)
}
`,
	"pkg/diagnose/throwaway.go": `package diagnose

import (
	"slices"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// ThrowawayEvidence: the throwaway flags.
var ThrowawayEvidence = newEvidence()

func init() {
	registerRule(rule{name: "throwaway", applies: func(t *observed.Target) bool { return slices.Contains(t.Object.GetFinalizers(), "throwaway.example.com/hold") },
		needs: func(*observed.Target) Evidence { return ThrowawayEvidence }, explain: throwawayCauses})
}

func throwawayCauses(x subject) []report.Cause {
	flags, read := observed.ThrowawayFlags.Get(x.s)
	if !read || flags["hold"] != "true" {
		return nil
	}
	return []report.Cause{cause(catalog.ThrowawayHold, report.Critical, 0.9, "the throwaway flag says hold",
		[]report.Fact{report.Noted("configmap kube-system/throwaway-flags: hold=true")},
		step(catalog.ThrowawayHold, "read-flags", "kubectl get configmap throwaway-flags -n kube-system"))}
}
`,
}

// entry is the catalogue entry, added to pkg/catalog/causes.yaml before anchor.
const (
	anchor = "      - code: DiagnosisIncomplete\n"
	entry  = `      - code: ThrowawayHold
        title: throwaway hold
        depth: 50
        parts:
          - label: Signal
            text: the throwaway flag says hold.
          - label: Remediation
            steps:
              - id: read-flags
                action: Read the flags
                level: none
                risk: |-
                  none: read-only
          - label: Detected
            text: never shipped.
`
)

// The throwaway's own tests. The rule's, in pkg/diagnose, gives every step
// the catalogue declares (the package's report check wants each given once).
const ruleTest = `package diagnose

import (
	"slices"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func TestThrowawayRule(t *testing.T) {
	ns := terminatingNamespace(time.Hour)
	ns.Finalizers = []string{"throwaway.example.com/hold"}
	s := snap(ns)
	observed.ThrowawayFlags.Set(s, map[string]string{"hold": "true"})
	if it := Diagnose(s).Items[0]; !slices.Contains(codes(it), "ThrowawayHold") {
		t.Fatalf("causes %v", codes(it))
	}
}
`

// The pipeline's, in pkg/collect: the rule asks for the evidence, the
// reader reads it, and the report carries the cause.
const throwawayTest = `package collect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func TestThrowaway(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("shop")
	u.SetName("w")
	u.SetFinalizers([]string{"throwaway.example.com/hold"})
	deleted := metav1.NewTime(time.Now().Add(-time.Hour))
	u.SetDeletionTimestamp(&deleted)
	s := observed.New(time.Now())
	s.Targets = []*observed.Target{{Ref: observed.ObjectRef{APIVersion: "example.com/v1", Kind: "Widget", Resource: "widgets.example.com", Namespace: "shop", Name: "w"}, Object: u}}
	fake := kubefake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "throwaway-flags"}, Data: map[string]string{"hold": "true"}})
	for _, src := range sources {
		if src.name == "throwaway flags" {
			src.read(&Collector{Clients: &kube.Clients{Typed: fake}}, context.Background(), s)
		}
	}
	it := diagnose.Diagnose(s).Items[0]
	if len(it.Causes) == 0 || it.Causes[0].Code != "ThrowawayHold" {
		t.Fatalf("causes %+v", it.Causes)
	}
}
`

// A data source and a cause that uses it, added in a copy of the repository
// as docs/architecture.md says, build and pass every unit test there with
// four files written by hand besides tests: make generate writes the rest
// (the code constant, the compiled catalogue, docs/causes.md, docs/rbac.md). A registry that wants
// another edit (a table of rules, a field of Snapshot, a constant block)
// leaves the throwaway unregistered or unbuilt, and this test fails.
func TestAddingASourceAndACauseTouchesFourFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the repository (about two minutes)")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	copyTracked(t, root, dir)
	before := hashes(t, dir)

	for path, text := range handWritten {
		write(t, dir, path, text)
	}
	catalogue := filepath.Join(dir, "pkg/catalog/causes.yaml")
	data, err := os.ReadFile(catalogue)
	if err != nil || !bytes.Contains(data, []byte(anchor)) {
		t.Fatalf("pkg/catalog/causes.yaml has no %q to add the entry before (%v)", anchor, err)
	}
	if err := os.WriteFile(catalogue, bytes.Replace(data, []byte(anchor), []byte(entry+anchor), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "pkg/collect/throwaway_test.go", throwawayTest)
	write(t, dir, "pkg/diagnose/throwaway_test.go", ruleTest)

	run(t, dir, "make", "generate")
	run(t, dir, "go", "test", "-count=1", "./pkg/catalog", "-run", "TestShippedCodesKeepTheirNames", "-update")
	run(t, dir, "go", "vet", "./...")
	run(t, dir, "go", "test", "-count=1", "./...")

	after := hashes(t, dir)
	var touched []string
	for path, sum := range after {
		if before[path] != sum {
			touched = append(touched, path)
		}
	}
	slices.Sort(touched)
	generated := []string{"docs/causes.md", "docs/rbac.md", "pkg/catalog/codes.go", "pkg/catalog/data.go"}
	var byHand, gen, tests []string
	for _, path := range touched {
		switch {
		case strings.HasSuffix(path, "_test.go") || strings.Contains(path, "/testdata/"):
			tests = append(tests, path)
		case slices.Contains(generated, path):
			gen = append(gen, path)
		default:
			byHand = append(byHand, path)
		}
	}
	want := append(slices.Collect(maps.Keys(handWritten)), "pkg/catalog/causes.yaml")
	slices.Sort(want)
	if !slices.Equal(byHand, want) {
		t.Errorf("files touched by hand: %v, want the four %v", byHand, want)
	}
	if !slices.Equal(gen, generated) {
		t.Errorf("files make generate rewrote: %v, want %v", gen, generated)
	}
	t.Logf("by hand: %v; generated: %v; tests: %v", byHand, gen, tests)
}

// repoRoot is the repository's root: two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(wd))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// copyTracked copies the files git knows of (tracked, or new and not
// ignored), but for the e2e module and this package, into dir.
func copyTracked(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if strings.HasPrefix(path, "test/") || strings.HasPrefix(path, "hack/fourfiles/") {
			continue // the e2e module, and this test (which would run again in the copy)
		}
		data, err := os.ReadFile(filepath.Join(root, path))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, path, string(data))
	}
}

func write(t *testing.T, dir, path, text string) {
	t.Helper()
	full := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hashes maps each file under dir to the hash of its content.
func hashes(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = sha256.Sum256(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	// Built as the Makefile builds (static, path-trimmed), whatever this test
	// runs under (make unit runs it with the race detector's cgo): in a flavour
	// of its own, every dependency was compiled again, past the test's bound.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
