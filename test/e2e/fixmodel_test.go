package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Issue 35, item 3, on the lab: the write path's model (pkg/fix's
// TestWritePathModel) with the real apiserver, the real rules and the built
// plugin. Each run sets up one write of each verb (a dead node's
// out-of-service taint, an orphaned webhook configuration's deletion, the
// finalizer of a custom resource whose controller is gone), reviews the plan
// as a runbook does, then applies it by its digest through an interposer
// that changes the cluster at random points of the run: before it, at the
// Nth read, at the Nth write, at the Nth list of Deployments (where the
// controller appears). The invariant, checked at every write the apiserver
// applies: the object is the one planned, at the version planned (or left
// by fix's own write), and the controller whose absence justified a
// finalizer's removal has not appeared. With no mutation, all three writes
// are applied. Fixed seed; each run is a subtest, in parallel.
func TestFixWritePathModelOnTheLab(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 1))
	for run := range modelLabRuns {
		var schedule []modelMutation
		if run > 0 { // the first run changes nothing: every step must be applied
			// Each kind of point at least once in a few runs; the rest drawn.
			schedule = append(schedule, drawMutation(rng, modelPointKinds[(run-1)%len(modelPointKinds)]))
			if second := drawMutation(rng, modelPointKinds[rng.IntN(len(modelPointKinds))]); rng.IntN(2) == 0 && second.change != schedule[0].change {
				schedule = append(schedule, second)
			}
		}
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			t.Parallel()
			modelRunOnTheLab(t, run, schedule)
		})
	}
}

// modelLabRuns is how many interleavings the lab tries (each takes about a
// minute of setup, all in parallel).
const modelLabRuns = 6

type modelMutation struct{ point, change string }

// modelChanges are what other clients do: each object recreated under its
// name or changed (a label, a new webhook), and the widget's controller
// appearing (a ready Deployment).
var modelChanges = []string{"recreate node", "touch node", "recreate hook", "touch hook", "recreate widget", "touch widget", "controller appears"} // the last changes no written object

// modelPointKinds are where a change is made: before the run (the time to
// --confirm), just before the Nth write is forwarded (after fix's fresh
// read: only the apiserver's preconditions stand between), at the Nth read,
// at the Nth list of Deployments (where a diagnosis sees a controller).
var modelPointKinds = []string{"write", "deployments", "read", "before"}

func drawMutation(rng *rand.Rand, kind string) modelMutation {
	switch kind {
	case "deployments":
		return modelMutation{fmt.Sprintf("deployments %d", 1+rng.IntN(2)), "controller appears"}
	case "before":
		return modelMutation{"before", modelChanges[rng.IntN(len(modelChanges))]}
	}
	// controller appears changes no object fix writes: a diagnosis sees it
	// only when it lists Deployments, so it is made there or before.
	change := modelChanges[rng.IntN(len(modelChanges)-1)]
	if kind == "read" {
		return modelMutation{fmt.Sprintf("read %d", 1+rng.IntN(80)), change}
	}
	return modelMutation{fmt.Sprintf("write %d", 1+rng.IntN(3)), change}
}

// planJSON is what the model reads of fix's -o json: the plan's writes.
type planJSON struct {
	Plan struct {
		Digest  string
		Targets []struct {
			Steps []struct {
				Step struct {
					Apply *struct {
						Verb            string
						Object          objectRef
						ResourceVersion string
					}
				}
			}
		}
	}
}

// identity is an object's uid and resourceVersion, or "gone".
type identity struct{ uid, version string }

func modelRunOnTheLab(t *testing.T, runIndex int, schedule []modelMutation) {
	ctx := context.Background()
	ns := fmt.Sprintf("fixmodel-%d", runIndex)
	// The widget's operator, named so that no other workload of the lab
	// (another run's, another test's) looks like it: the rules match its
	// word anywhere in a workload's name, namespace or app labels.
	operator := fmt.Sprintf("mdlop%c", 'a'+runIndex)
	group := ns + ".e2e.example.com"
	node := ns + "-1"
	namespace(t, ns)
	things := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "things"}).Namespace(ns)
	nodes := env.Client.CoreV1().Nodes()
	hooks := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	t.Cleanup(func() {
		release(things, "t0")
		_ = nodes.Delete(ctx, node, metav1.DeleteOptions{})
		_ = hooks.Delete(ctx, ns, metav1.DeleteOptions{})
		for _, pod := range []string{"web-0", "api-0"} {
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, pod, deleteOpts(new(int64)))
		}
	})

	// The three writes, each justified.
	if err := env.CRD(ctx, group, "Thing", "things"); err != nil {
		t.Fatal(err)
	}
	widget := func() error {
		if err := env.CustomResource(ctx, group, "Thing", "things", ns, "t0", operator+".example.com/cleanup"); err != nil {
			return err
		}
		return things.Delete(ctx, "t0", metav1.DeleteOptions{})
	}
	if err := widget(); err != nil {
		t.Fatal(err)
	}
	widgetDeleted := time.Now()
	podOnDeadNode(t, ns, "web-0", node)
	if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
		t.Fatal(err)
	}
	guardedPodInStateC(t, ns, "api-0", env.DownWebhook) // settles it
	pastDeadline(t, ns, "web-0")
	settle(t, widgetDeleted)

	targets := []string{"pod/web-0", "pod/api-0", "things." + group + "/t0", "-n", ns, "--max-risk", "destructive"}
	review := run(t, append([]string{"fix", "-o", "json"}, targets...)...)
	var plan planJSON
	if err := json.Unmarshal([]byte(review.stdout), &plan); err != nil || review.code != 1 {
		t.Fatalf("review: exit %d, %v\n%s\n%s", review.code, err, review.stdout, review.stderr)
	}
	// planned: each written object's path, and the identity the plan was made on.
	var mu sync.Mutex
	planned := map[string]identity{}
	var verbs, audited []string
	for _, target := range plan.Plan.Targets {
		for _, s := range target.Steps {
			if a := s.Step.Apply; a != nil {
				path := strings.TrimSuffix(strings.SplitN(auditedRequest(a.Verb, a.Object), " ", 2)[1], "?timeout=30s")
				planned[path] = identity{a.Object.UID, a.ResourceVersion}
				verbs = append(verbs, a.Verb)
				audited = append(audited, auditedRequest(a.Verb, a.Object))
			}
		}
	}
	slices.Sort(verbs)
	if !slices.Equal(verbs, []string{"delete", "remove-finalizer", "taint-out-of-service"}) {
		t.Fatalf("the plan's writes are %q, want one of each verb:\n%s", verbs, review.stdout)
	}
	expectFixWrites(audited...)

	controllerAppeared := false
	var log, violations []string
	change := func(point, what string) {
		log = append(log, point+": "+what)
		var err error
		switch what {
		case "controller appears":
			err = env.Controller(ctx, ns, operator, liveNode) // returns once it is ready
			controllerAppeared = err == nil
		case "touch node", "touch hook", "touch widget":
			kind := strings.TrimPrefix(what, "touch ")
			patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, time.Now().UnixNano()))
			switch kind {
			case "node":
				_, err = nodes.Patch(ctx, node, "application/merge-patch+json", patch, metav1.PatchOptions{})
			case "hook":
				_, err = hooks.Patch(ctx, ns, "application/merge-patch+json", patch, metav1.PatchOptions{})
			case "widget":
				_, err = things.Patch(ctx, "t0", "application/merge-patch+json", patch, metav1.PatchOptions{})
			}
		case "recreate node":
			var old *corev1.Node
			if old, err = nodes.Get(ctx, node, metav1.GetOptions{}); err == nil {
				if err = nodes.Delete(ctx, node, metav1.DeleteOptions{}); err == nil {
					_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: old.Labels}}, metav1.CreateOptions{})
				}
			}
		case "recreate hook":
			if hook, getErr := hooks.Get(ctx, ns, metav1.GetOptions{}); getErr != nil {
				err = getErr
			} else if err = hooks.Delete(ctx, ns, metav1.DeleteOptions{}); err == nil {
				hook.ObjectMeta = metav1.ObjectMeta{Name: ns}
				_, err = hooks.Create(ctx, hook, metav1.CreateOptions{})
			}
		case "recreate widget":
			release(things, "t0")
			if err = waitGone(ctx, func(ctx context.Context) error { _, err := things.Get(ctx, "t0", metav1.GetOptions{}); return err }); err == nil {
				err = widget()
			}
		}
		if err != nil {
			log = append(log, fmt.Sprintf("  (%s failed: %v)", what, err))
		}
	}
	byPoint := map[string][]string{}
	for _, m := range schedule {
		if m.point == "before" {
			change("before", m.change)
		} else {
			byPoint[m.point] = append(byPoint[m.point], m.change)
		}
	}
	// now is the identity of the object each write goes to, read just
	// before it is forwarded (after any change scheduled at that point).
	now := map[int]identity{}
	current := func(path string) identity {
		raw, err := env.Client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			return identity{"gone", ""}
		}
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal(raw, &m); err != nil {
			return identity{"unreadable", err.Error()}
		}
		return identity{string(m.UID), m.ResourceVersion}
	}
	applied := 0
	p := startInterposer(t,
		func(seq int, points []string, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			for _, point := range points {
				for _, what := range byPoint[point] {
					change(point, what)
				}
			}
			if isWrite(r) {
				now[seq] = current(r.URL.Path)
			}
		},
		func(seq int, r *http.Request, status int, body []byte) {
			mu.Lock()
			defer mu.Unlock()
			if status < 200 || status > 299 {
				return
			}
			applied++
			want, ok := planned[r.URL.Path]
			switch got := now[seq]; {
			case !ok:
				violations = append(violations, fmt.Sprintf("%s %s was never planned", r.Method, r.URL.Path))
			case got != want:
				violations = append(violations, fmt.Sprintf("%s %s written at %+v, planned on %+v", r.Method, r.URL.Path, got, want))
			case strings.Contains(r.URL.Path, "/things/") && controllerAppeared:
				violations = append(violations, fmt.Sprintf("%s %s: the finalizer removed though its controller appeared", r.Method, r.URL.Path))
			}
			var m metav1.PartialObjectMetadata
			if json.Unmarshal(body, &m) == nil && m.ResourceVersion != "" {
				planned[r.URL.Path] = identity{string(m.UID), m.ResourceVersion} // fix's own write moves it
			}
		})
	res := runWith(t, append([]string{"--kubeconfig", p.kubeconfig(t), "fix", "-o", "json", "--confirm", plan.Plan.Digest, "--settle", "5s"}, targets...)...)
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Errorf("violations: %q\nchanges: %q\nfix: exit %d\n%s\n%s", violations, log, res.code, res.stdout, res.stderr)
	}
	if len(log) == 0 && applied != 3 {
		t.Errorf("no change, %d of 3 writes applied: exit %d\n%s\n%s", applied, res.code, res.stdout, res.stderr)
	}
	t.Logf("changes %q: %d writes applied, fix exit %d", log, applied, res.code)
}

// waitGone waits until get says the object is gone.
func waitGone(ctx context.Context, get func(context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := get(ctx); err != nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("still there after 30s")
}
