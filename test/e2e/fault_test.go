package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Faults of the control plane itself, on a lab of their own: the apiserver
// restarting under a wait, and etcd no longer answering.
func TestControlPlaneFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own, env2 := ownLab(t)

	t.Run("apiserver restart during wait", func(t *testing.T) {
		if err := env2.Namespace(ctx, "restart"); err != nil {
			t.Fatal(err)
		}
		if err := env2.ConfigMapWithFinalizer(ctx, "restart", "held", "e2e.example.com/hold"); err != nil {
			t.Fatal(err)
		}
		waiting := start(t, "--kubeconfig", own.Kubeconfig, "--request-timeout", "5s", "wait", "configmap/held", "-n", "restart", "--timeout", "3m")
		time.Sleep(2 * time.Second) // watching by now
		if err := own.Restart(ctx, "kube-apiserver", 3*time.Second); err != nil {
			t.Fatal(err)
		}
		// The owner of the finalizer comes back and finishes its work.
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := env2.Client.CoreV1().ConfigMaps("restart").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		res := waiting()
		t.Logf("wait: exit %d; stderr %s", res.code, res.stderr)
		if res.code != 0 || res.stdout != "configmap/held deleted\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and the object deleted", res.code, res.stdout, res.stderr)
		}
		if n := strings.Count(res.stderr, "retrying until the timeout"); n != 1 {
			t.Errorf("the outage said %d times, want once: %q", n, res.stderr)
		}
	})

	t.Run("etcd stopped", func(t *testing.T) {
		// An object wait will wait on, made while etcd still answers.
		if err := env2.Namespace(ctx, "frozen"); err != nil {
			t.Fatal(err)
		}
		if err := env2.ConfigMapWithFinalizer(ctx, "frozen", "held", "e2e.example.com/hold"); err != nil {
			t.Fatal(err)
		}
		if err := own.Signal("etcd", syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := own.Signal("etcd", syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}()
		// Every read hangs: the run ends at its own deadline with exit 1 and
		// says what it could not read, never "nothing stuck".
		for _, args := range [][]string{{"list", "-A"}, {"why", "-A", "--stuck-only", "-o", "json"}} {
			began := time.Now()
			res := runWith(t, append([]string{"--kubeconfig", own.Kubeconfig, "--timeout", "10s"}, args...)...)
			took := time.Since(began)
			t.Logf("%v: exit %d after %s; stderr %s", args, res.code, took.Round(time.Second), res.stderr)
			if res.code != 1 || took > 40*time.Second {
				t.Errorf("%v: exit %d after %s, want 1 within the 10s deadline and its margin; stderr %q", args, res.code, took.Round(time.Second), res.stderr)
			}
			if strings.Contains(res.stdout+res.stderr, "No terminating objects found") && !strings.Contains(res.stderr, "could not") {
				t.Errorf("%v: an outage reported as all clear: stdout %q stderr %q", args, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stderr, "error:") {
				t.Errorf("%v: stderr %q, want one error line naming what could not be read", args, res.stderr)
			}
		}
		// Fail fast with the cause: reads stall, the apiserver's /readyz says
		// why, within seconds, however long --timeout (2m by default) is.
		// wait's diagnosis at its deadline is bounded too (it ran 98 s).
		// Bounds are generous (a loaded two-core machine): the point is
		// seconds, not minutes.
		for _, tc := range []struct {
			args  []string
			bound time.Duration
		}{
			{[]string{"list", "-A"}, 25 * time.Second},
			{[]string{"wait", "configmap/held", "-n", "frozen", "--timeout", "5s"}, 25 * time.Second},
		} {
			began := time.Now()
			res := runWith(t, append([]string{"--kubeconfig", own.Kubeconfig}, tc.args...)...)
			took := time.Since(began)
			t.Logf("%v: exit %d after %s; stderr %s", tc.args, res.code, took.Round(time.Millisecond), res.stderr)
			if res.code != 1 || took > tc.bound || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, "[-]etcd failed") {
				t.Errorf("%v: exit %d after %s, stderr %q; want exit 1 within %s, one error line quoting /readyz's [-]etcd failed", tc.args, res.code, took.Round(time.Second), res.stderr, tc.bound)
			}
		}
		// A named object cannot be read at all: an error, within the bound.
		began := time.Now()
		res := runWith(t, "--kubeconfig", own.Kubeconfig, "--request-timeout", "5s", "--timeout", "10s", "why", "ns/restart")
		if res.code != 1 || time.Since(began) > 40*time.Second {
			t.Errorf("why ns/restart: exit %d after %s, stderr %q", res.code, time.Since(began).Round(time.Second), res.stderr)
		}
	})
}

// start runs the plugin in the background; the function it returns waits
// for it to end.
func start(t *testing.T, args ...string) func() result {
	t.Helper()
	cmd := exec.Command(plugin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "NO_COLOR=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(5*time.Minute, func() { _ = cmd.Process.Kill() })
	return func() result {
		t.Helper()
		defer timer.Stop()
		return resultOf(t, cmd.Wait(), &out, &errOut, args)
	}
}

// ownLab starts a lab of the test's own, for faults and cluster-wide
// blockers that would disturb the shared one; it stops with the test.
func ownLab(t *testing.T) (*lab.Lab, *scenario.Env) {
	t.Helper()
	return ownLabWith(t, lab.Options{})
}

// ownLabWith is ownLab with options (BinDir and Dir are the test's).
func ownLabWith(t *testing.T, o lab.Options) (*lab.Lab, *scenario.Env) {
	t.Helper()
	o.BinDir, o.Dir = labBins, t.TempDir()
	own, err := lab.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Stop)
	env, err := scenario.NewEnv(own.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return own, env
}

// kube-controller-manager gone, on a lab of its own that runs it with leader
// election, as a real control plane does: while it leads, nothing blames it;
// once it is killed its Lease lapses, and what its controllers would remove
// (a namespace's kubernetes finalizer, a claim's pvc-protection) is put
// down to it, with the Lease as evidence. cloud-controller-manager's half is
// judged by its Lease the same way: a LoadBalancer Service's cleanup
// finalizer is not blamed on it while the Lease is renewed, and is once not.
func TestControllerManagerGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own, env2 := ownLabWith(t, lab.Options{LeaderElect: true})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	leases := env2.Client.CoordinationV1().Leases("kube-system")
	must(scenario.Until(ctx, time.Minute, "kube-controller-manager's leader lease", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil, nil
	}))
	for _, ns := range []string{"running", "orphaned", "claims"} { // while the service account controller runs
		must(env2.Namespace(ctx, ns))
	}

	// cloud-controller-manager, whose service controller removes a
	// LoadBalancer Service's cleanup finalizer, is emulated by its Lease
	// alone, as k8s.io/cloud-provider's leader election writes it (the lab
	// runs no cloud): renewed now, it leads and is not blamed.
	ccm := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "cloud-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-2_5d0c7a9e"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	ccm, err := leases.Create(ctx, ccm, metav1.CreateOptions{})
	must(err)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	_, err = env2.Client.CoreV1().Services("claims").Create(ctx, svc, metav1.CreateOptions{})
	must(err)
	must(env2.Client.CoreV1().Services("claims").Delete(ctx, "web", metav1.DeleteOptions{}))
	r, _ := diagnoseIn(t, own.Kubeconfig, "why", "svc/web", "-n", "claims")
	if codes := codesOf(only(t, r)); len(codes) == 0 || slices.Contains(codes, "ControllerManagerNotLeading") {
		t.Errorf("cloud-controller-manager leads, yet it is blamed (or nothing is said): %v", codes)
	}
	// Its last replica stopped ten minutes ago: the Lease was not renewed since.
	ccm.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-10 * time.Minute)}
	_, err = leases.Update(ctx, ccm, metav1.UpdateOptions{})
	must(err)

	// It leads: the namespace controller acts, and the plugin says nothing of it.
	must(env2.ConfigMapWithFinalizer(ctx, "running", "held", "e2e.example.com/hold"))
	must(env2.Client.CoreV1().Namespaces().Delete(ctx, "running", metav1.DeleteOptions{}))
	must(scenario.Until(ctx, time.Minute, "the namespace controller's conditions", func(ctx context.Context) (bool, error) {
		ns, err := env2.Client.CoreV1().Namespaces().Get(ctx, "running", metav1.GetOptions{})
		return err == nil && len(ns.Status.Conditions) > 0, nil
	}))
	r, _ = diagnoseIn(t, own.Kubeconfig, "why", "ns/running")
	if codes := codesOf(only(t, r)); slices.Contains(codes, "ControllerManagerNotLeading") {
		t.Errorf("kube-controller-manager leads, yet it is blamed: %v", codes)
	}

	// Killed: nothing renews its Lease; what its controllers hold is stuck.
	must(own.Signal("kube-controller-manager", syscall.SIGKILL))
	time.Sleep(2 * time.Second) // a renewal under way lands
	lease, err := leases.Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	must(err)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "claims"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	_, err = env2.Client.CoreV1().PersistentVolumeClaims("claims").Create(ctx, claim, metav1.CreateOptions{})
	must(err)
	must(env2.Client.CoreV1().PersistentVolumeClaims("claims").Delete(ctx, "data", metav1.DeleteOptions{}))
	must(env2.Client.CoreV1().Namespaces().Delete(ctx, "orphaned", metav1.DeleteOptions{}))
	// The plugin takes a holder as gone a minute past the Lease's duration.
	time.Sleep(time.Until(lease.Spec.RenewTime.Add(4*time.Second + time.Minute + 2*time.Second)))

	for _, tc := range []struct {
		args      []string
		lease     *coordinationv1.Lease
		finalizer string
	}{
		{[]string{"why", "ns/orphaned"}, lease, "kubernetes"},
		{[]string{"why", "pvc/data", "-n", "claims"}, lease, "kubernetes.io/pvc-protection"},
		{[]string{"why", "svc/web", "-n", "claims"}, ccm, "service.kubernetes.io/load-balancer-cleanup"},
	} {
		name, holder := tc.lease.Name, *tc.lease.Spec.HolderIdentity
		r, res := diagnoseIn(t, own.Kubeconfig, tc.args...)
		it := only(t, r)
		if res.code != 2 || len(it.Causes) == 0 || it.Causes[0].Code != "ControllerManagerNotLeading" {
			t.Errorf("%v: exit %d, causes %v; want exit 2, ControllerManagerNotLeading first", tc.args, res.code, codesOf(it))
			continue
		}
		top := it.Causes[0]
		if !strings.HasPrefix(top.Summary, name+" is not running") || !strings.Contains(top.Summary, fmt.Sprintf("(last held by %q), so nothing removes %s", holder, tc.finalizer)) {
			t.Errorf("%v: summary %q", tc.args, top.Summary)
		}
		if f := top.Facts[0]; f.Field != "spec.renewTime" || f.Object == nil || f.Object.Kind != "Lease" || f.Object.Namespace != "kube-system" ||
			f.Object.Name != name || f.Value != tc.lease.Spec.RenewTime.UTC().Format(time.RFC3339) {
			t.Errorf("%v: the lease's fact %+v", tc.args, f)
		}
	}
	res := runWith(t, "--kubeconfig", own.Kubeconfig, "why", "ns/orphaned")
	if !strings.Contains(res.prose(), "kube-controller-manager is not running") || !strings.Contains(res.prose(), "kubectl get lease kube-controller-manager -n kube-system -o yaml") {
		t.Errorf("the screen:\n%s", res.stdout)
	}
}
