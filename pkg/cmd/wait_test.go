package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// fakeClock makes wait's sleeps instant: each advances the clock, and may
// act on the cluster (then delete an object, say).
func fakeClock(onSleep func(slept int)) func(*Options) {
	return func(o *Options) {
		clock, slept := now, 0
		o.now = func() time.Time { return clock }
		o.sleep = func(_ context.Context, d time.Duration) error {
			clock = clock.Add(d)
			slept++
			onSleep(slept)
			return nil
		}
	}
}

func TestWaitTimesOutWithTheDiagnosis(t *testing.T) {
	var sleeps int
	out, errOut, err := executeWith(t, fakes(t, cluster(), nil), fakeClock(func(n int) { sleeps = n }), "wait", "pod/web-0", "-n", "shop", "--timeout", "3s")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d (%v), want %d", ExitCode(err), err, ExitStuck)
	}
	if sleeps != 3 || !strings.Contains(errOut, "timed out after 3s: 1 object(s) still there") || !strings.Contains(out, "NodeUnreachable") {
		t.Errorf("%d polls; stderr %q; stdout %q", sleeps, errOut, out)
	}
	if strings.Contains(errOut, "waiting for") {
		t.Errorf("no progress lines when stderr is not a terminal: %q", errOut)
	}
}

func TestWaitSucceedsWhenTheObjectGoes(t *testing.T) {
	clients := fakes(t, cluster(), nil)
	c, _ := clients()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gone := func(n int) {
		if n == 2 {
			if err := c.Dynamic.Resource(pods).Namespace("shop").Delete(context.Background(), "cache-0", metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}
	}
	terminal := func(o *Options) {
		fakeClock(gone)(o)
		o.isTerminal = func(w io.Writer) bool { return w == o.ErrOut }
	}
	out, errOut, err := executeWith(t, clients, terminal, "wait", "pod/cache-0", "pod/never-was", "-n", "shop", "--timeout", "1m")
	if err != nil || out != "pod/never-was deleted\npod/cache-0 deleted\n" {
		t.Errorf("err %v, stdout %q", err, out)
	}
	if !strings.Contains(errOut, "waiting for 1 object(s); pod/cache-0: FinalizerPending") {
		t.Errorf("progress on a terminal: %q", errOut)
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

// An apiserver restart during a wait (connection refused, then a 503) is
// retried until the object goes; said once on stderr.
func TestWaitSurvivesAnAPIServerRestart(t *testing.T) {
	gets := 0
	restarting := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			gets++
			switch gets {
			case 2, 3:
				return true, nil, &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces/shop/pods/cache-0", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
			case 4:
				return true, nil, apierrors.NewServiceUnavailable("the apiserver is starting")
			case 5:
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "cache-0")
			}
			return false, nil, nil
		})
	}
	out, errOut, err := executeWith(t, fakes(t, cluster(), restarting), fakeClock(func(int) {}), "wait", "pod/cache-0", "-n", "shop", "--timeout", "1m")
	if err != nil || out != "pod/cache-0 deleted\n" {
		t.Fatalf("err %v, stdout %q, stderr %q", err, out, errOut)
	}
	if strings.Count(errOut, "retrying until the timeout") != 1 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("stderr: %q", errOut)
	}

	// A Forbidden is no blip: it ends the wait at once.
	forbidden := func(_ *kubefake.Clientset, c *kube.Clients) {
		c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			gets++
			if gets > 7 {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "cache-0", errors.New("no rights"))
			}
			return false, nil, nil
		})
	}
	gets = 6
	if _, _, err := executeWith(t, fakes(t, cluster(), forbidden), fakeClock(func(int) {}), "wait", "pod/cache-0", "-n", "shop", "--timeout", "1m"); ExitCode(err) != ExitError || !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: exit %d, %v", ExitCode(err), err)
	}
}

// An object that is not being deleted would be waited on for ever: named,
// it is an error at once; found by type, it is left out.
func TestWaitOnObjectsNotBeingDeleted(t *testing.T) {
	sleeps := 0
	_, _, err := executeWith(t, fakes(t, cluster(), nil), fakeClock(func(n int) { sleeps = n }), "wait", "pod/ok-0", "-n", "shop", "--timeout", "1m")
	if ExitCode(err) != ExitError || !strings.Contains(err.Error(), "pod/ok-0 is not being deleted") || sleeps != 0 {
		t.Errorf("exit %d after %d polls: %v", ExitCode(err), sleeps, err)
	}
}

func TestInterruptedSaysSo(t *testing.T) {
	if got := Explain(fmt.Errorf("list pods: %w", context.Canceled)); got != "interrupted" {
		t.Errorf("Explain = %q", got)
	}
}
