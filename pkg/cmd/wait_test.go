package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// fakeClock gives wait a clock that only moves when the test steps it.
func fakeClock(fc *clocktesting.FakeClock) func(*Options) {
	return func(o *Options) {
		o.now = fc.Now
		o.clock = fc
	}
}

// stepWhile moves the clock by a second whenever at least n timers wait on
// it, until stop is closed: n = 1 lets the deadline fire, n = 2 fires only
// a retry's backoff while the deadline also waits.
func stepWhile(fc *clocktesting.FakeClock, n int, stop <-chan struct{}) {
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				if fc.Waiters() >= n {
					fc.Step(time.Second)
				}
			}
		}
	}()
}

// watchedBy makes every watch of pods a fake one the test drives, handed over
// on the returned channel once the plugin watches.
func watchedBy(watchers chan<- *watch.FakeWatcher) func(*kubefake.Clientset, *kube.Clients) {
	return func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			w := watch.NewFake()
			watchers <- w
			return true, w, nil
		})
	}
}

func TestWaitTimesOutWithTheDiagnosis(t *testing.T) {
	fc := clocktesting.NewFakeClock(now)
	stop := make(chan struct{})
	defer close(stop)
	stepWhile(fc, 1, stop)
	file := filepath.Join(t.TempDir(), "wait.json")
	out, errOut, err := executeWith(t, fakes(t, cluster(), nil), fakeClock(fc), "wait", "pod/web-0", "-n", "shop", "--timeout", "3s", "--save-snapshot", file)
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitStuck)
	}
	if !strings.Contains(errOut, "timed out after 3s: 1 object still there") || !strings.Contains(out, "NodeUnreachable") {
		t.Errorf("stderr %q; stdout %q", errOut, out)
	}
	// The diagnosis printed at the timeout is the one its snapshot replays.
	if replay, _, err := execute(t, nil, "why", "--snapshot", file); replay != out || ExitCode(err) != ExitStuck {
		t.Errorf("the replay of wait's snapshot (exit %d):\n%s\nwant:\n%s", ExitCode(err), replay, out)
	}
	if strings.Contains(errOut, "waiting for") {
		t.Errorf("no progress lines when stderr is not a terminal: %q", errOut)
	}
}

// The object goes while wait watches it: the watch's DELETED event ends the
// wait, with no further read.
func TestWaitSucceedsWhenTheObjectGoes(t *testing.T) {
	watchers := make(chan *watch.FakeWatcher, 1)
	clients := fakes(t, cluster(), watchedBy(watchers))
	go func() {
		w := <-watchers
		c, _ := clients()
		obj, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop").Get(context.Background(), "cache-0", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		w.Modify(obj) // its latest state first, as the apiserver sends it
		w.Delete(obj)
	}()
	terminal := func(o *Options) {
		fakeClock(clocktesting.NewFakeClock(now))(o)
		o.isTerminal = func(w io.Writer) bool { return w == o.ErrOut }
	}
	out, errOut, err := executeWith(t, clients, terminal, "wait", "pod/cache-0", "pod/never-was", "-n", "shop", "--timeout", "1m", "--ignore-not-found")
	if err != nil || out != "pod/never-was deleted\npod/cache-0 deleted\n" {
		t.Errorf("err %v, stdout %q", err, out)
	}
	if !strings.Contains(errOut, "waiting for 1 object; pod/cache-0: FinalizerPending") {
		t.Errorf("progress on a terminal: %q", errOut)
	}
}

// An object asked for by name that does not exist is an error at once (a
// typo must not look like success); --ignore-not-found is kubectl's behaviour.
func TestWaitOnAnObjectNeverSeen(t *testing.T) {
	out, _, err := execute(t, fakes(t, cluster(), nil), "wait", "pod/cache-0", "pod/nevr-was", "-n", "shop", "--timeout", "1m")
	if err == nil || !strings.Contains(err.Error(), "pod/nevr-was not found (--ignore-not-found") || ExitCode(err) != 1 || out != "" {
		t.Errorf("err %v (exit %d), stdout %q", err, ExitCode(err), out)
	}
}

func TestWaitErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wait"}, "requires at least 1 arg"},
		{[]string{"wait", "pod/x", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"wait", "nosuch/x"}, `the server doesn't have a resource type "nosuch"`},
		{[]string{"wait", "pods", "-l", "app in (web"}, `invalid --selector "app in (web"`},
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, err %v; want %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}

// An apiserver restart during a wait: the watch ends, the lists that follow
// are refused and then answered 503, and wait carries on until the object
// goes; said once on stderr.
func TestWaitSurvivesAnAPIServerRestart(t *testing.T) {
	lists := 0
	restarting := func(_ *kubefake.Clientset, c *kube.Clients) {
		fake := c.Dynamic.(*dynamicfake.FakeDynamicClient)
		fake.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			w := watch.NewFake()
			w.Stop() // the apiserver goes away
			return true, w, nil
		})
		fake.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			lists++
			switch lists {
			case 2, 3:
				return true, nil, &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces/shop/pods", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
			case 4:
				return true, nil, apierrors.NewServiceUnavailable("the apiserver is starting")
			case 5:
				return true, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "PodList"}}, nil
			}
			return false, nil, nil
		})
	}
	fc := clocktesting.NewFakeClock(now)
	stop := make(chan struct{})
	defer close(stop)
	stepWhile(fc, 2, stop)
	out, errOut, err := executeWith(t, fakes(t, cluster(), restarting), fakeClock(fc), "wait", "pod/cache-0", "-n", "shop", "--timeout", "1m")
	if err != nil || out != "pod/cache-0 deleted\n" || lists != 5 {
		t.Fatalf("err %v after %d lists, stdout %q, stderr %q", err, lists, out, errOut)
	}
	if strings.Count(errOut, "retrying until the timeout") != 1 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("stderr: %q", errOut)
	}

	// A Forbidden is no blip: it ends the wait at once.
	forbidden := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no rights"))
		})
	}
	if _, _, err := executeWith(t, fakes(t, cluster(), forbidden), fakeClock(clocktesting.NewFakeClock(now)), "wait", "pod/cache-0", "-n", "shop", "--timeout", "1m"); ExitCode(err) != ExitError || !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: exit %d, %v", ExitCode(err), err)
	}
}

// An object that is not being deleted would be waited on for ever: named,
// it is an error at once; found by type, it is left out.
func TestWaitOnObjectsNotBeingDeleted(t *testing.T) {
	_, _, err := executeWith(t, fakes(t, cluster(), nil), fakeClock(clocktesting.NewFakeClock(now)), "wait", "pod/ok-0", "-n", "shop", "--timeout", "1m")
	if ExitCode(err) != ExitError || !strings.Contains(err.Error(), "pod/ok-0 is not being deleted") {
		t.Errorf("exit %d: %v", ExitCode(err), err)
	}
}

func TestInterruptedSaysSo(t *testing.T) {
	if got := Explain(fmt.Errorf("list pods: %w", context.Canceled)); got != "interrupted" {
		t.Errorf("Explain = %q", got)
	}
}
