package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The version-sensitive scenarios on the oldest and newest releases of the
// matrix (v1.36 runs them in TestNamespaceWaitingForItsPods), each judged as
// its own release's namespace controller behaves (docs/versions.md):
//   - a namespace whose only leftover is a pod inside its grace period is
//     progressing on every release (exit 0): on v1.31, with no ordered
//     namespace deletion, the controller reports the pod in its
//     NamespaceContentRemaining condition, which was a false STUCK;
//   - with a ConfigMap beside it whose finalizer no controller removes, v1.31
//     deletes every type at once, so the ConfigMap holds the namespace now
//     (stuck, exit 2), while v1.37 deletes the pods first: the ConfigMap is not
//     deleted yet, and the report forecasts it (exit 0);
//   - the pod's claim, held by pvc-protection while the pod in grace uses it,
//     is progressing on both.
//
// v1.31 serves no resource.k8s.io (DRA off): the runs stay complete.
func TestNamespaceWithPodsInGraceAcrossReleases(t *testing.T) {
	for _, tc := range []struct {
		minor, wording string
		heldExit       int
	}{
		{"v1.31", "deletes every type at once", 2},
		{"v1.37", "deletes the pods first", 0},
	} {
		t.Run(tc.minor, func(t *testing.T) {
			t.Parallel()
			v := versionLab(t, tc.minor)
			ctx := context.Background()
			build := func(ns string, held, claim bool) {
				t.Helper()
				if err := v.Env.Namespace(ctx, ns); err != nil {
					t.Fatal(err)
				}
				p := scenario.PodSpec(ns, "db-0", v.LiveNode)
				grace := int64(600)
				p.Spec.TerminationGracePeriodSeconds = &grace
				p.Annotations = map[string]string{lab.KillDelayAnnotation: "3600s"} // shuts down slowly, inside its grace period
				if claim {                                                          // the pod's claim, kept by the PVC protection controller while the pod uses it
					pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
					if _, err := v.Env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
				}
				if err := v.Env.RunningPod(ctx, p); err != nil {
					t.Fatal(err)
				}
				if held {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "export", Finalizers: []string{"gone.e2e.example.com/export"}}}
					if _, err := v.Env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := v.Env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := v.Env.WaitPod(ctx, ns, "db-0", "deleted by the namespace controller", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }); err != nil {
					t.Fatal(err)
				}
			}
			why := func(ns string) (item, string, result) {
				t.Helper()
				r, res := diagnoseIn(t, v.Kubeconfig, "why", "ns/"+ns)
				if r.Complete == nil || !*r.Complete || len(r.Skipped) > 0 {
					t.Errorf("%s: a partial report (complete %v, skipped %+v)", ns, r.Complete, r.Skipped)
				}
				if r.Server == nil || !strings.HasPrefix(r.Server.GitVersion, tc.minor+".") {
					t.Errorf("%s: report.server %+v, want %s", ns, r.Server, tc.minor)
				}
				return only(t, r), ns, res
			}

			start := time.Now()
			build("grace-only", false, false)
			build("grace-held", true, false)
			build("grace-claim", false, true)
			settle(t, start.Add(10*time.Second)) // the controller deletes the ConfigMap a few seconds after the namespace

			it, ns, res := why("grace-only")
			if res.code != 0 || it.Stuck || !slices.Equal(codesOf(it), []string{"WithinGracePeriod"}) || !strings.Contains(it.Causes[0].Summary, tc.wording) {
				t.Errorf("%s: exit %d, stuck %t, causes %v, summary %q; want 0, progressing, WithinGracePeriod saying %q", ns, res.code, it.Stuck, codesOf(it), it.Causes[0].Summary, tc.wording)
			}

			// Its claim, held by pvc-protection while the pod in grace uses it
			// (deleted at once on v1.31, not yet on v1.37): progressing too, the
			// pod nested, no "bring the controller back".
			it, ns, res = why("grace-claim")
			if res.code != 0 || it.Stuck {
				t.Errorf("%s: exit %d, stuck %t, causes %v; want 0, progressing", ns, res.code, it.Stuck, codesOf(it))
			}
			for _, c := range it.Causes {
				if c.Severity != "info" {
					t.Errorf("%s: %s %s %q, want information only", ns, c.Code, c.Severity, c.Summary)
				}
			}
			if tc.minor == "v1.31" && !slices.ContainsFunc(it.Causes, func(c cause) bool {
				return len(c.BlockedBy) == 1 && codesOf(c.BlockedBy[0])[0] == "PVCInUse" && strings.HasPrefix(c.BlockedBy[0].Causes[0].Summary, "progressing: the 1 pod that uses the claim is being deleted")
			}) {
				t.Errorf("%s: the held claim is not judged by its pod: %+v", ns, it.Causes)
			}

			it, ns, res = why("grace-held")
			// The ConfigMap's finalizer first, the pod in grace beside it (on
			// v1.31 the controller's own conditions too).
			if res.code != tc.heldExit || it.Stuck != (tc.heldExit == 2) || codesOf(it)[0] != "FinalizerPending" || !slices.Contains(codesOf(it), "WithinGracePeriod") {
				t.Errorf("%s: exit %d, stuck %t, causes %v; want %d, FinalizerPending first, WithinGracePeriod", ns, res.code, it.Stuck, codesOf(it), tc.heldExit)
			}
			if top := it.Causes[0]; tc.heldExit == 0 && (top.Severity != "info" || !strings.HasPrefix(top.Summary, "forecast:")) {
				t.Errorf("%s: top cause %s %q, want the forecast", ns, top.Severity, top.Summary)
			}
		})
	}
}

// A ValidatingAdmissionPolicy refusing the kubelet's final DELETE (its
// admissionregistration.k8s.io/v1 API is served from 1.30) is judged the
// same on the oldest and newest releases: its validation evaluated against
// the DELETE, a certain refusal.
func TestFinalDeleteRefusedByAnAdmissionPolicyAcrossReleases(t *testing.T) {
	for _, minor := range matrixVersions {
		t.Run(minor, func(t *testing.T) {
			t.Parallel()
			v := versionLab(t, minor)
			ns := "guarded-policy"
			if err := v.Env.Namespace(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			policyRefusesTheFinalDelete(t, v.Env, v.LiveNode, v.Kubeconfig, ns)
		})
	}
}

// A DRA claim its driver cannot unprepare, on the newest release (v1.37
// serves resource.k8s.io/v1, read in the version discovery prefers); v1.31
// serves no resource.k8s.io (DRA off by default): there the namespace and
// policy scenarios above show the runs stay complete.
func TestPodWhoseResourceClaimCannotBeUnpreparedOnV137(t *testing.T) {
	t.Parallel()
	v := versionLab(t, "v1.37")
	if err := v.Env.Namespace(context.Background(), "dra"); err != nil {
		t.Fatal(err)
	}
	claimNotUnprepared(t, v.Env, v.LiveNode, v.Kubeconfig, "dra")
}
