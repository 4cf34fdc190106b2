package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// matrixVersions are the other Kubernetes releases the lab can run
// (docs/lab.md, "The version matrix"): build.sh puts each one's
// kube-apiserver and kube-controller-manager in LAB_BIN_DIR/<minor>.
var matrixVersions = []string{"v1.31", "v1.37"}

// versionedLab is a lab whose control plane is another Kubernetes release;
// etcd and kwok are the main lab's.
type versionedLab struct {
	Minor      string // "v1.31"
	Lab        *lab.Lab
	Kubeconfig string
	Env        *scenario.Env
	// LiveNode is a node whose kubelet kwok plays, Ready.
	LiveNode string
	// Took is how long the lab took to come up, its live node Ready.
	Took time.Duration
}

// The version labs started so far, by minor; a failed start is remembered so
// that the tests of that version fail at once with its error.
var versionLabs = struct {
	sync.Mutex
	labs map[string]*versionedLab
	errs map[string]error
}{labs: map[string]*versionedLab{}, errs: map[string]error{}}

// versionLab returns the running lab of a version of the matrix ("v1.31"),
// starting it on first use; the tests of that version share it, and TestMain
// stops it at the end (stopVersionLabs).
func versionLab(t *testing.T, minor string) *versionedLab {
	t.Helper()
	versionLabs.Lock()
	defer versionLabs.Unlock()
	if v := versionLabs.labs[minor]; v != nil {
		return v
	}
	if err := versionLabs.errs[minor]; err != nil {
		t.Fatalf("lab %s: %v", minor, err)
	}
	v, err := startVersionLab(minor)
	if err != nil {
		versionLabs.errs[minor] = err
		t.Fatalf("lab %s: %v", minor, err)
	}
	versionLabs.labs[minor] = v
	return v
}

func startVersionLab(minor string) (*versionedLab, error) {
	known := false
	for _, m := range matrixVersions {
		known = known || m == minor
	}
	if !known {
		return nil, fmt.Errorf("not in the version matrix %v", matrixVersions)
	}
	kubeBins := filepath.Join(labBins, minor)
	if _, err := os.Stat(filepath.Join(kubeBins, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("%v: run `make lab-bin` (make e2e does)", err)
	}
	dir, err := os.MkdirTemp("", "kubectl-terminating-lab-"+minor+"-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	start := time.Now()
	l, err := lab.Start(ctx, lab.Options{BinDir: labBins, KubeBinDir: kubeBins, Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("starting: %w (logs in %s)", err, dir)
	}
	v := &versionedLab{Minor: minor, Lab: l, Kubeconfig: l.Kubeconfig, LiveNode: liveNode}
	if v.Env, err = scenario.NewEnv(l.Kubeconfig); err == nil {
		err = v.Env.LiveNode(ctx, v.LiveNode)
	}
	if err != nil {
		l.Stop()
		return nil, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	v.Took = time.Since(start)
	fmt.Printf("e2e: lab %s up at %s in %s\n", minor, l.Server, v.Took.Round(time.Millisecond))
	return v, nil
}

// stopVersionLabs stops the version labs started (TestMain, at the end and on
// an interrupt). With check, each must also pass the main lab's checks: the
// plugin only read (audit log) and the control plane called only loopback or
// the lab's test hosts; a lab that fails them keeps its logs.
func stopVersionLabs(check bool) error {
	versionLabs.Lock()
	defer versionLabs.Unlock()
	minors := make([]string, 0, len(versionLabs.labs))
	for m := range versionLabs.labs {
		minors = append(minors, m)
	}
	sort.Strings(minors)
	var errs []error
	for _, m := range minors {
		v := versionLabs.labs[m]
		v.Lab.Stop()
		delete(versionLabs.labs, m)
		if !check {
			fmt.Fprintf(os.Stderr, "e2e: lab %s logs kept in %s\n", m, v.Lab.Dir)
			continue
		}
		err := checkReadOnly(v.Lab.AuditLog, true)
		if err == nil {
			err = checkNetworkRule(v.Lab.Dir)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w (logs kept in %s)", m, err, v.Lab.Dir))
			continue
		}
		_ = os.RemoveAll(v.Lab.Dir)
	}
	return errors.Join(errs...)
}

// Each version of the matrix comes up, serves its own release on /version,
// and runs a pod on its live kwok node.
func TestVersionMatrixLabsServe(t *testing.T) {
	for _, minor := range matrixVersions {
		t.Run(minor, func(t *testing.T) {
			v := versionLab(t, minor)
			ctx := context.Background()
			info, err := v.Env.Client.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(minor, "v1."); info.Major != "1" || info.Minor != want || !strings.HasPrefix(info.GitVersion, minor+".") {
				t.Errorf("/version: major %q minor %q gitVersion %q, want 1, %s, %s.x", info.Major, info.Minor, info.GitVersion, want, minor)
			}
			ns := "matrix-serve"
			if err := v.Env.Namespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
			if err := v.Env.RunningPod(ctx, scenario.PodSpec(ns, "web", v.LiveNode)); err != nil {
				t.Fatal(err)
			}
			t.Logf("lab %s: %s, up in %s, pod %s/web Running on %s", minor, info.GitVersion, v.Took.Round(time.Millisecond), ns, v.LiveNode)
		})
	}
}
