package cmd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, err %v; want %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}
