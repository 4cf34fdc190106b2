package cmd

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// The status line is cut to the terminal's width (a wrapped line would be
// erased in part), erased only when drawn, and erased before what must stay.
func TestStatusLine(t *testing.T) {
	var b bytes.Buffer
	s := &statusLine{w: &b, width: 10}
	s.clear()
	s.show("0123456789abc")
	s.show("short")
	io.WriteString(s.above(&b), "kept\n")
	s.clear()
	if want := "\r\x1b[K012345678\r\x1b[Kshort\r\x1b[Kkept\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	var off *statusLine // off a terminal
	off.show("x")
	off.clear()
	b.Reset()
	io.WriteString(off.above(&b), "kept\n")
	if b.String() != "kept\n" {
		t.Errorf("off a terminal: %q", b.String())
	}
}

// On a terminal, a run's progress says what it reads (the scan, then each
// source) and for how long, redrawn until the run ends, and is erased
// before the report; off a terminal there is none.
func TestProgressUntilTheRunEnds(t *testing.T) {
	clients, realClock := slowAPIServer(t)
	onATerminal := func(o *Options) {
		realClock(o)
		o.isTerminal = func(w io.Writer) bool { return w == o.ErrOut }
	}
	out, errOut, err := executeWith(t, clients, onATerminal, "list", "-A")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d: %v", ExitCode(err), err)
	}
	if !regexp.MustCompile(`\r\x1b\[K0s: reading [^\r]*events`).MatchString(errOut) || !strings.HasSuffix(errOut, "\r\x1b[K") {
		t.Errorf("stderr: %q", errOut)
	}
	clients, realClock = slowAPIServer(t)
	plain, plainErr, _ := executeWith(t, clients, realClock, "list", "-A")
	if plain != out || plainErr != "" {
		t.Errorf("off a terminal: stderr %q, stdout\n%s\nwant\n%s", plainErr, plain, out)
	}
}

// slowAPIServer is the command tests' cluster behind an apiserver slow to
// list events (after the scan), for a run on a real clock whose progress
// line shows at once.
func slowAPIServer(t *testing.T) (func() (*kube.Clients, error), func(*Options)) {
	progressDelay, progressEvery = 0, time.Millisecond
	t.Cleanup(func() { progressDelay, progressEvery = time.Second, 250*time.Millisecond })
	slowEvents := func(typed *kubefake.Clientset, _ *kube.Clients) {
		typed.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
			time.Sleep(20 * time.Millisecond)
			return false, nil, nil
		})
	}
	return fakes(t, cluster(), slowEvents), func(o *Options) { o.clock = clock.RealClock{} }
}

// On a terminal, wait says every second how long it has waited and how long
// it will still wait, below the cause, and erases it before its last words.
func TestWaitShowsTheTimeSpentAndLeft(t *testing.T) {
	fc := clocktesting.NewFakeClock(now)
	stop := make(chan struct{})
	defer close(stop)
	stepWhile(fc, 1, stop)
	terminal := func(o *Options) {
		fakeClock(fc)(o)
		o.isTerminal = func(w io.Writer) bool { return w == o.ErrOut }
	}
	_, errOut, err := executeWith(t, fakes(t, cluster(), nil), terminal, "wait", "pod/cache-0", "-n", "shop", "--timeout", "3s")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("exit %d: %v", ExitCode(err), err)
	}
	times := regexp.MustCompile(`\r\x1b\[Kwaiting for 1 object: (\d)s elapsed, (\d)s left \(--timeout 3s\)`).FindAllStringSubmatch(errOut, -1)
	// At least one: the fake clock may be stepped twice before a redraw
	// (a ticker drops a tick it could not deliver), so a second line is not
	// certain (it flaked once in 20 runs under -race).
	if len(times) < 1 {
		t.Fatalf("no time spent and left: %q", errOut)
	}
	for _, m := range times {
		if spent, left := m[1][0]-'0', m[2][0]-'0'; spent+left != 3 {
			t.Errorf("%s spent and %s left of 3s", m[1], m[2])
		}
	}
	if !strings.Contains(errOut, "waiting for 1 object; pod/cache-0: FinalizerPending") || !strings.Contains(errOut, "\r\x1b[Ktimed out after 3s") {
		t.Errorf("stderr: %q", errOut)
	}
}
