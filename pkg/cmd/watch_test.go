package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// list -w: the table; then, when cache-0's finalizer goes, its new verdict as
// a row once the burst settles; then a row as each pod goes; exit 0 when all
// are gone.
func TestListWatchPrintsChangesAndDeletions(t *testing.T) {
	fc := clocktesting.NewFakeClock(now)
	out, _, err := executeWith(t, playWatch(t, fc), fakeClock(fc), "list", "pods", "-n", "shop", "--stuck-only", "-w")
	if err != nil {
		t.Fatalf("exit %d (%v), want 0 once everything is gone", ExitCode(err), err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("want the header, 2 rows, 1 change, 2 deletions; got:\n%s", out)
	}
	for i, want := range []string{"NAME", "pod/web-0", "pod/cache-0", "pod/cache-0", "pod/web-0", "pod/cache-0"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %q, want it to start with %q\n%s", i, lines[i], want, out)
		}
	}
	if strings.Contains(lines[3], "FinalizerPending") || !strings.Contains(lines[2], "FinalizerPending") {
		t.Errorf("cache-0's new row should show its new top cause:\n%s", out)
	}
	for _, l := range lines[4:] {
		if !strings.Contains(l, " - ") || !strings.HasSuffix(l, "deleted") {
			t.Errorf("a deletion row: %q", l)
		}
	}
	if strings.Contains(out, "stuck") && strings.Contains(out, "Top causes") {
		t.Errorf("no footer under -w:\n%s", out)
	}
}

// playWatch is the cluster of list -w's tests, played once the plugin
// watches the pods: cache-0's finalizer goes (a new verdict once the burst
// settles on fc), then web-0 and cache-0 go.
func playWatch(t *testing.T, fc *clocktesting.FakeClock) func() (*kube.Clients, error) {
	watchers := make(chan *watch.FakeWatcher, 1)
	var typed *kubefake.Clientset
	clients := fakes(t, cluster(), func(cs *kubefake.Clientset, c *kube.Clients) {
		typed = cs
		watchedBy(watchers)(cs, c)
	})
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	go func() {
		w := <-watchers
		ctx := context.Background()
		c, _ := clients()
		cache, err := typed.CoreV1().Pods("shop").Get(ctx, "cache-0", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		cache.Finalizers = nil
		if _, err := typed.CoreV1().Pods("shop").Update(ctx, cache, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
			return
		}
		obj, _ := c.Dynamic.Resource(pods).Namespace("shop").Get(ctx, "cache-0", metav1.GetOptions{})
		obj.SetFinalizers(nil)
		obj.SetResourceVersion(cache.ResourceVersion + "1") // a new state, not a relist
		w.Modify(obj)
		// The burst settles after a second: cache-0 is diagnosed again
		// (a GET of it), and its row printed before the next event is read.
		for !fc.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		typed.ClearActions()
		fc.Step(settle)
		for !readPod(typed, "cache-0") {
			time.Sleep(time.Millisecond)
		}
		web, _ := c.Dynamic.Resource(pods).Namespace("shop").Get(ctx, "web-0", metav1.GetOptions{})
		w.Delete(web)
		w.Delete(obj)
	}()
	return clients
}

// readPod reports whether the plugin has read the named pod since the
// actions were last cleared.
func readPod(cs *kubefake.Clientset, name string) bool {
	for _, a := range cs.Actions() {
		if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && a.GetResource().Resource == "pods" && g.GetName() == name {
			return true
		}
	}
	return false
}

func TestListWatchRefusesWhatItCannotPrint(t *testing.T) {
	for _, args := range [][]string{
		{"list", "-w", "-o", "json"},
		{"list", "-w", "--group-by", "cause"},
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), args...)
		if ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), "--watch") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// Issue 35: list -w prints a change that time alone makes, no object
// changing: batch-0, inside its grace period at the start (not stuck), is
// stuck once its deadline and the settle time have passed; the row comes at
// that time, without an event.
func TestListWatchPrintsTimeDrivenChanges(t *testing.T) {
	fc := clocktesting.NewFakeClock(now)
	watchers := make(chan *watch.FakeWatcher, 1)
	clients := fakes(t, cluster(), watchedBy(watchers))
	go func() {
		w := <-watchers
		// Past the deadline (20 s) and the settle time (30 s), the clock
		// stepped whenever the plugin waits on it; then the next time armed,
		// the row printed. Bounded: a plugin that never waits on time fails.
		bound := time.Now().Add(10 * time.Second)
		for (fc.Now().Before(now.Add(52*time.Second)) || !fc.HasWaiters()) && time.Now().Before(bound) {
			if fc.HasWaiters() && fc.Now().Before(now.Add(52*time.Second)) {
				fc.Step(time.Second)
			}
			time.Sleep(time.Millisecond)
		}
		c, _ := clients()
		batch, _ := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop").Get(context.Background(), "batch-0", metav1.GetOptions{})
		w.Delete(batch)
	}()
	out, _, err := executeWith(t, clients, fakeClock(fc), "list", "pod/batch-0", "-n", "shop", "-w")
	if err != nil {
		t.Fatalf("exit %d (%v)", ExitCode(err), err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "pod/batch-0") || !strings.Contains(lines[1], "WithinGracePeriod") ||
		strings.Contains(lines[len(lines)-2], "WithinGracePeriod") || !strings.HasSuffix(lines[len(lines)-1], "deleted") {
		t.Errorf("want the row in grace, a row once time made it stuck, then deleted:\n%s", out)
	}
}
