package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

type objectRef struct{ APIVersion, Kind, Resource, Namespace, Name, UID string }

// fixRecord is fix's -o json as a runbook reads it.
type fixRecord struct {
	APIVersion, Kind, Confirmed string
	Plan                        struct {
		Digest  string
		Targets []struct {
			Refused string
			Steps   []struct{ Cause string }
		}
	}
	Sent []struct {
		Verb, Request, Answer string
		Object                objectRef
		DryRun, OK            bool
	}
	Outcomes []struct{ Result, Detail string }
}

func fixJSON(t *testing.T, args ...string) (fixRecord, result) {
	t.Helper()
	res := run(t, append([]string{"fix", "-o", "json"}, args...)...)
	var rec fixRecord
	if err := json.Unmarshal([]byte(res.stdout), &rec); err != nil {
		t.Fatalf("fix %v: exit %d, %v:\n%s\n%s", args, res.code, err, res.stdout, res.stderr)
	}
	return rec, res
}

// Issue 27: fix clears an orphaned finalizer (its controller gone) by the
// plan a person reviewed, and only then: without a terminal nothing is
// applied unless --confirm repeats the digest; a stale digest is refused;
// a step above --max-risk is not planned; --dry-run=server changes
// nothing; a live controller's finalizer and an object not stuck are left
// alone. The audit log holds exactly the planned writes.
func TestFixClearsAnOrphanedFinalizer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fix")
	const group = "fix.e2e.example.com"
	if err := env.CRD(ctx, group, "Widget", "widgets"); err != nil {
		t.Fatal(err)
	}
	if err := env.Controller(ctx, ns, "livectl", liveNode); err != nil {
		t.Fatal(err)
	}
	widgets := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	// The finalizers' distinctive words name their controllers: goneoperator
	// (nowhere) and livectl (a ready Deployment).
	for name, finalizer := range map[string]string{"orphan": "goneoperator.example.com/cleanup", "live": "livectl.example.com/cleanup", "fresh": "goneoperator.example.com/cleanup"} {
		if err := env.CustomResource(ctx, group, "Widget", "widgets", ns, name, finalizer); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { release(widgets, name) })
	}
	for _, name := range []string{"orphan", "live"} {
		if err := widgets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(31 * time.Second) // controllers act within seconds: past that, it is stuck
	orphan := []string{"widgets." + group + "/orphan", "-n", ns}

	// Reviewed without a terminal: the plan and its digest, nothing applied.
	res := run(t, append([]string{"fix", "--max-risk", "high"}, orphan...)...)
	m := regexp.MustCompile(`Plan ([0-9a-f]{16}): 1 request`).FindStringSubmatch(res.stdout)
	if res.code != 1 || m == nil || !strings.Contains(res.stderr, "nothing applied: without a terminal, fix applies a plan only with --confirm "+m[1]) ||
		!strings.Contains(res.prose(), "remove finalizer goneoperator.example.com/cleanup") || !strings.Contains(res.prose(), "leaves behind:") {
		t.Fatalf("review: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	digest := m[1]
	// The default risk plans nothing for it: removing a finalizer is high.
	rec, res := fixJSON(t, orphan...)
	if res.code != 2 || len(rec.Sent) != 0 || !strings.Contains(rec.Plan.Targets[0].Refused, "above --max-risk low") {
		t.Errorf("--max-risk low: exit %d, %+v", res.code, rec)
	}
	// Said once, with the flag that would plan it (issue 39).
	if res := run(t, append([]string{"fix"}, orphan...)...); res.code != 2 || strings.Count(res.prose(), "above --max-risk low") != 1 ||
		!strings.Contains(res.prose(), "--max-risk high would plan it") || !strings.Contains(res.prose(), "not applied (not planned: the reason is above)") {
		t.Errorf("default risk: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	// A digest that is not the plan's is refused.
	res = run(t, append([]string{"fix", "--max-risk", "high", "--confirm", "0123456789abcdef"}, orphan...)...)
	if res.code != 1 || !strings.Contains(res.stderr, "nothing applied: the plan's digest is "+digest) {
		t.Errorf("stale digest: exit %d: %s", res.code, res.stderr)
	}
	// A server-side dry run: the request checked, nothing changed.
	rec, res = fixJSON(t, append([]string{"--max-risk", "high", "--dry-run=server"}, orphan...)...)
	if res.code != 2 || len(rec.Sent) != 1 || !rec.Sent[0].DryRun || !rec.Sent[0].OK || rec.Outcomes[0].Result != "dry run only" {
		t.Errorf("dry run: exit %d, %+v", res.code, rec)
	}
	if u, err := widgets.Get(ctx, "orphan", metav1.GetOptions{}); err != nil || len(u.GetFinalizers()) != 1 {
		t.Fatalf("the dry run changed the object: %v %v", err, u)
	}
	// Applied by digest: sent once, on a fresh read, and the object is gone.
	rec, res = fixJSON(t, append([]string{"--max-risk", "high", "--confirm", digest}, orphan...)...)
	if res.code != 0 || rec.Kind != "FixRecord" || rec.Confirmed != "digest" || len(rec.Sent) != 1 || rec.Outcomes[0].Result != "gone" ||
		!strings.Contains(rec.Sent[0].Request, `"op":"test","path":"/metadata/resourceVersion"`) {
		t.Errorf("apply: exit %d, %+v\n%s", res.code, rec, res.stderr)
	}
	if _, err := widgets.Get(ctx, "orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
	// A live controller's finalizer is left to it.
	rec, res = fixJSON(t, "widgets."+group+"/live", "-n", ns, "--max-risk", "high")
	if res.code != 2 || len(rec.Sent) != 0 || !strings.Contains(rec.Plan.Targets[0].Refused, "looks alive") {
		t.Errorf("live controller: exit %d, %+v", res.code, rec)
	}
	// An object just deleted is not stuck: left alone, nothing to do.
	if err := widgets.Delete(ctx, "fresh", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, res = fixJSON(t, "widgets."+group+"/fresh", "-n", ns, "--max-risk", "high")
	if res.code != 0 || len(rec.Sent) != 0 || rec.Outcomes[0].Result != "progressing" {
		t.Errorf("not stuck: exit %d, %+v", res.code, rec)
	}

	// The audit log: fix's writes are exactly the dry run and the removal.
	uri := "/apis/" + group + "/v1/namespaces/" + ns + "/widgets/orphan"
	want := []string{"patch " + uri + "?dryRun=All&timeout=30s", "patch " + uri + "?timeout=30s"} // --request-timeout's default
	got, err := auditedWrites(theLab.AuditLog, " fix")
	if err != nil {
		t.Fatal(err)
	}
	got = slices.DeleteFunc(got, func(w string) bool { return !strings.Contains(w, "/namespaces/"+ns+"/") })
	if !slices.Equal(got, want) {
		t.Errorf("fix's writes in the audit log: %q, want %q", got, want)
	}
	expectFixWrites(want...)
}

// fixByDigest reviews a plan as a runbook does (no terminal: the plan and
// its digest, nothing applied), then applies exactly that plan; the
// writes it sent must be in the audit log, and are the only fix writes the
// suite's read-only proof accepts.
func fixByDigest(t *testing.T, args ...string) (fixRecord, result) {
	t.Helper()
	return fixByDigestWhile(t, nil, args...)
}

// fixByDigestWhile is fixByDigest with meanwhile running beside the fix
// (until it returns).
func fixByDigestWhile(t *testing.T, meanwhile func(context.Context), args ...string) (fixRecord, result) {
	t.Helper()
	digest := reviewFix(t, args...)
	if meanwhile != nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); meanwhile(ctx) }()
		defer func() { cancel(); <-done }()
	}
	rec, res := fixJSON(t, append(args, "--confirm", digest)...)
	var want []string
	for _, s := range rec.Sent {
		want = append(want, auditedRequest(s.Verb, s.Object))
	}
	got, err := auditedWrites(theLab.AuditLog, " fix")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("the audit log lacks %q (fix's writes: %q)", w, got)
		}
	}
	expectFixWrites(want...)
	return rec, res
}

// reviewFix reviews a plan as a runbook does (no terminal: the plan and its
// digest, nothing applied) and returns the digest of a plan that sends
// something.
func reviewFix(t *testing.T, args ...string) string {
	t.Helper()
	review := run(t, append([]string{"fix"}, args...)...)
	m := regexp.MustCompile(`Plan ([0-9a-f]{16}): [1-9]`).FindStringSubmatch(review.stdout)
	if review.code != 1 || m == nil {
		t.Fatalf("review of %v: exit %d\n%s\n%s", args, review.code, review.stdout, review.stderr)
	}
	return m[1]
}

// blockersSettled waits until the named objects, deleted by a controller
// after their holder, are being deleted and past the plugin's settle time
// (30 s): stuck themselves, as fix requires of a blocker it follows.
func blockersSettled(t *testing.T, r dynamic.ResourceInterface, names ...string) {
	t.Helper()
	for _, name := range names {
		var deleted time.Time
		if err := scenario.Until(context.Background(), time.Minute, name+" being deleted", func(ctx context.Context) (bool, error) {
			u, err := r.Get(ctx, name, metav1.GetOptions{})
			if err != nil || u.GetDeletionTimestamp() == nil {
				return false, nil
			}
			deleted = u.GetDeletionTimestamp().Time
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		settle(t, deleted)
	}
}

// auditedRequest is how the audit log names a request fix sent.
func auditedRequest(verb string, o objectRef) string {
	gv, resource := "/api/"+o.APIVersion, strings.SplitN(o.Resource, ".", 2)[0]
	if strings.Contains(o.APIVersion, "/") {
		gv = "/apis/" + o.APIVersion
	}
	path := gv + "/" + resource + "/" + o.Name
	if o.Namespace != "" {
		path = gv + "/namespaces/" + o.Namespace + "/" + resource + "/" + o.Name
	}
	method := map[string]string{"remove-finalizer": "patch", "taint-out-of-service": "patch", "delete": "delete"}[verb]
	return method + " " + path + "?timeout=30s"
}

// Issue 27: fix clears each fixable class of the gallery on the lab, and
// verifies it: the object is gone at the end.
func TestFixClearsEachFixableClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gone := func(t *testing.T, rec fixRecord, res result) {
		t.Helper()
		if res.code != 0 || len(rec.Outcomes) != 1 || rec.Outcomes[0].Result != "gone" {
			t.Errorf("exit %d, %+v\n%s", res.code, rec, res.stderr)
		}
	}
	t.Run("a webhook whose service is gone refuses the final DELETE", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "fix-webhook")
		guardedPodInStateC(t, ns, "api-0", env.DownWebhook)
		// A kubelet retries its refused final DELETE at its next pod sync;
		// the lab's kwok acts on a pod's changes only, so once the webhook
		// is gone a change to the pod stands in for that sync.
		kubeletSync := func(ctx context.Context) {
			hooks := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			_ = scenario.Until(ctx, time.Minute, "webhook deleted", func(ctx context.Context) (bool, error) {
				_, err := hooks.Get(ctx, ns, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			_, _ = env.Client.CoreV1().Pods(ns).Patch(ctx, "api-0", types.MergePatchType, []byte(`{"metadata":{"annotations":{"e2e.kubectl-terminating.io/kubelet-sync":"1"}}}`), metav1.PatchOptions{})
		}
		rec, res := fixByDigestWhile(t, kubeletSync, "pod/api-0", "-n", ns, "--max-risk", "high", "--settle", "60s")
		gone(t, rec, res)
		if len(rec.Sent) != 1 || rec.Sent[0].Verb != "delete" || rec.Sent[0].Object.Kind != "ValidatingWebhookConfiguration" {
			t.Errorf("sent %+v", rec.Sent)
		}
	})
	t.Run("a CRD waiting on instances whose operator is gone", func(t *testing.T) {
		t.Parallel()
		const group, crd = "fixcrd.e2e.example.com", "gizmos.fixcrd.e2e.example.com"
		if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
			t.Fatal(err)
		}
		ns := namespace(t, "fix-crd")
		for _, name := range []string{"g0", "g1"} {
			if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", ns, name, "fixcrd.example.com/teardown"); err != nil {
				t.Fatal(err)
			}
		}
		deleted := time.Now()
		if err := env.DeleteCRD(ctx, crd, "InstanceDeletionInProgress"); err != nil {
			t.Fatal(err)
		}
		settle(t, deleted)
		// fix follows only blockers that are stuck themselves: the
		// instances, deleted after the CRD, must be past their settle time.
		gizmos := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}).Namespace(ns)
		blockersSettled(t, gizmos, "g0", "g1")
		rec, res := fixByDigest(t, "crd/"+crd, "--max-risk", "high", "--settle", "60s")
		gone(t, rec, res)
		if len(rec.Sent) != 2 || rec.Plan.Targets[0].Steps[0].Cause != "CRDInstancesRemaining" {
			t.Errorf("sent %+v, plan %+v", rec.Sent, rec.Plan)
		}
	})
	t.Run("a namespace held by an orphaned finalizer", func(t *testing.T) {
		t.Parallel()
		const group = "fixns.e2e.example.com"
		if err := env.CRD(ctx, group, "Doohickey", "doohickeys"); err != nil {
			t.Fatal(err)
		}
		ns := namespace(t, "fix-ns")
		if err := env.CustomResource(ctx, group, "Doohickey", "doohickeys", ns, "d0", "fixns.example.com/cleanup"); err != nil {
			t.Fatal(err)
		}
		if err := env.DeleteNamespace(ctx, ns, "NamespaceFinalizersRemaining"); err != nil {
			t.Fatal(err)
		}
		settle(t, time.Now()) // see settle
		blockersSettled(t, env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "doohickeys"}).Namespace(ns), "d0")
		rec, res := fixByDigest(t, "ns/"+ns, "--max-risk", "high", "--settle", "60s")
		gone(t, rec, res)
		if len(rec.Sent) != 1 || rec.Sent[0].Object.Name != "d0" {
			t.Errorf("sent %+v", rec.Sent)
		}
	})
	t.Run("a namespace held by its own orphaned finalizer", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "fix-ns-own")
		if _, err := env.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"finalizers":["fixnsown.example.com/cleanup"]}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		settle(t, deleted)
		rec, res := fixByDigest(t, "ns/"+ns, "--max-risk", "high", "--settle", "60s")
		gone(t, rec, res)
		if len(rec.Sent) != 1 || rec.Sent[0].Object.Kind != "Namespace" || rec.Sent[0].Verb != "remove-finalizer" {
			t.Errorf("sent %+v", rec.Sent)
		}
	})
	t.Run("a pod on a dead node, through the out-of-service taint", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "fix-dead")
		podOnDeadNode(t, ns, "web-0", "fix-dead-1")
		if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
			t.Fatal(err)
		}
		pastDeadline(t, ns, "web-0")
		// Not without leave to take a destructive step.
		rec, res := fixJSON(t, "pod/web-0", "-n", ns, "--max-risk", "high")
		if res.code != 2 || len(rec.Sent) != 0 {
			t.Errorf("--max-risk high: exit %d, %+v", res.code, rec)
		}
		rec, res = fixByDigest(t, "pod/web-0", "-n", ns, "--max-risk", "destructive", "--settle", "90s")
		gone(t, rec, res)
		if len(rec.Sent) != 1 || rec.Sent[0].Verb != "taint-out-of-service" || rec.Sent[0].Object.Name != "fix-dead-1" {
			t.Errorf("sent %+v", rec.Sent)
		}
	})
}

// Issue 35: fix writes only to the object a person reviewed, in the state
// that justified it. Each case changes the cluster after the review, as a
// hostile tester did, then applies by the reviewed digest (or answers y
// at the prompt): nothing is written, and the audit log holds no write of
// fix's to the object.
func TestFixWritesOnlyWhatWasReviewed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := func(t *testing.T, digest string, args ...string) {
		t.Helper()
		res := run(t, append(append([]string{"fix"}, args...), "--confirm", digest)...)
		if res.code != 1 || !strings.Contains(res.stderr, "nothing applied: the plan's digest is ") || strings.Contains(res.stderr, "is "+digest+",") {
			t.Errorf("--confirm %s after the change: exit %d\n%s\n%s", digest, res.code, res.stdout, res.stderr)
		}
	}
	noFixWrite := func(t *testing.T, path string) {
		t.Helper()
		got, err := auditedWrites(theLab.AuditLog, " fix")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range got {
			if strings.Contains(w, path) {
				t.Errorf("fix wrote %s", w)
			}
		}
	}
	t.Run("a node deleted and recreated under its name", func(t *testing.T) {
		t.Parallel()
		ns, node := namespace(t, "fix-renode"), "fix-renode-1"
		podOnDeadNode(t, ns, "web-0", node)
		if err := env.DeletePod(ctx, ns, "web-0", 1); err != nil {
			t.Fatal(err)
		}
		pastDeadline(t, ns, "web-0")
		args := []string{"pod/web-0", "-n", ns, "--max-risk", "destructive"}
		digest := reviewFix(t, args...)
		nodes := env.Client.CoreV1().Nodes()
		old, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := nodes.Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: old.Labels}}
		if _, err := nodes.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = nodes.Delete(ctx, node, metav1.DeleteOptions{})
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, "web-0", deleteOpts(new(int64)))
		})
		refused(t, digest, args...)
		n, err := nodes.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node.kubernetes.io/out-of-service" {
				t.Errorf("the recreated node was tainted: %v", n.Spec.Taints)
			}
		}
		noFixWrite(t, "/api/v1/nodes/"+node+"?")
	})
	t.Run("a webhook configuration changed, then recreated", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, "fix-rehook")
		guardedPodInStateC(t, ns, "api-0", env.DownWebhook)
		args := []string{"pod/api-0", "-n", ns, "--max-risk", "high"}
		digest := reviewFix(t, args...)
		hooks := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		t.Cleanup(func() {
			_ = hooks.Delete(ctx, ns, metav1.DeleteOptions{})
			_ = env.Client.CoreV1().Pods(ns).Delete(ctx, "api-0", deleteOpts(new(int64)))
		})
		// A webhook added to the configuration after the review.
		hook, err := hooks.Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		extra := hook.Webhooks[0].DeepCopy()
		extra.Name = "extra." + extra.Name
		hook.Webhooks = append(hook.Webhooks, *extra)
		if hook, err = hooks.Update(ctx, hook, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		refused(t, digest, args...)
		// Then deleted and recreated under its name.
		if err := hooks.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		hook.ObjectMeta = metav1.ObjectMeta{Name: ns}
		if _, err := hooks.Create(ctx, hook, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		refused(t, digest, args...)
		if got, err := hooks.Get(ctx, ns, metav1.GetOptions{}); err != nil || len(got.Webhooks) != 2 {
			t.Errorf("the configuration nobody reviewed: %v, %v", got, err)
		}
		noFixWrite(t, "/validatingwebhookconfigurations/"+ns+"?")
	})
	t.Run("a controller that comes back while the prompt waits", func(t *testing.T) {
		t.Parallel()
		const group = "fixprompt.e2e.example.com"
		if err := env.CRD(ctx, group, "Thing", "things"); err != nil {
			t.Fatal(err)
		}
		ns := namespace(t, "fix-prompt")
		things := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "things"}).Namespace(ns)
		if err := env.CustomResource(ctx, group, "Thing", "things", ns, "t0", "lateop.example.com/cleanup"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { release(things, "t0") })
		deleted := time.Now()
		if err := things.Delete(ctx, "t0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		settle(t, deleted)
		args := []string{"fix", "things." + group + "/t0", "-n", ns, "--max-risk", "high"}
		prompt := func(screen func() string) {
			if err := scenario.Until(ctx, time.Minute, "the prompt", func(context.Context) (bool, error) {
				return strings.Contains(screen(), "[y/N]"), nil
			}); err != nil {
				t.Fatalf("%v:\n%s", err, screen())
			}
		}
		// No: nothing sent, no error, exit 2 (still held).
		screen, answer, done := onTerminal(t, args...)
		prompt(screen)
		answer("n\n")
		if code := done(); code != 2 || !strings.Contains(screen(), "Nothing applied: the answer was not y.") || strings.Contains(screen(), "error:") {
			t.Errorf("answered n: exit %d:\n%s", code, screen())
		}
		noFixWrite(t, "/namespaces/"+ns+"/things/t0?")
		screen, answer, done = onTerminal(t, args...)
		prompt(screen)
		// lateop, a ready Deployment, while the person reads the plan.
		if err := env.Controller(ctx, ns, "lateop", liveNode); err != nil {
			t.Fatal(err)
		}
		answer("y\n")
		code := done()
		text := strings.Join(strings.Fields(screen()), " ")
		if code != 2 || !strings.Contains(text, "The cluster changed while the plan waited for an answer") || !strings.Contains(text, "looks alive") {
			t.Errorf("exit %d:\n%s", code, screen())
		}
		if u, err := things.Get(ctx, "t0", metav1.GetOptions{}); err != nil || len(u.GetFinalizers()) != 1 {
			t.Errorf("the finalizer of a live controller was removed: %v %v", u, err)
		}
		noFixWrite(t, "/namespaces/"+ns+"/things/t0?")
	})
}

// onTerminal runs the plugin against the lab on a pseudo-terminal: what it
// has printed so far, a way to type an answer, and its exit code once it
// ends (within two minutes).
func onTerminal(t *testing.T, args ...string) (screen func() string, answer func(string), done func() int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", theLab.Kubeconfig}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	screen = func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	answer = func(s string) {
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Error(err)
		}
	}
	done = func() int {
		defer cancel()
		err := cmd.Wait()
		ptmx.Close()
		<-copied
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("running %v: %v", args, err)
		}
		return 0
	}
	return screen, answer, done
}
