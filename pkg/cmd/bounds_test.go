package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// Timing bounds here are generous (a loaded two-core machine): each is far
// below what the same run took before its bound existed (30 s per request,
// or for ever).
const slack = 15 * time.Second

// silentServer accepts connections and never answers: an apiserver that hangs.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "https://" + l.Addr().String()
}

// liveKubeconfig writes a kubeconfig for server whose user has user (YAML).
func liveKubeconfig(t *testing.T, server, user string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: %s
contexts:
- name: c
  context: {cluster: c, user: u, namespace: shop}
current-context: c
`, server, user)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

type liveRun struct {
	code   int
	stderr string
	took   time.Duration
}

// executeLive runs the command line as main does, with the clients kube.New
// builds from the kubeconfig (no fakes), ctx standing for the signals.
func executeLive(t *testing.T, ctx context.Context, kubeconfig string, customize func(*Options), args ...string) liveRun {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := newRoot(streams, func(o *Options) {
		o.monitor.ProbeTimeout = time.Second
		if customize != nil {
			customize(o)
		}
	})
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...))
	root.SetOut(out)
	root.SetErr(errOut)
	began := time.Now()
	code := Execute(ctx, root, errOut)
	return liveRun{code: code, stderr: errOut.String(), took: time.Since(began)}
}

// oneErrorLine: stderr is exactly one line, "error: ...", holding want.
func oneErrorLine(t *testing.T, r liveRun, want ...string) {
	t.Helper()
	if r.code != ExitError || !strings.HasPrefix(r.stderr, "error: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d after %s, stderr %q: want exit 1 and one error line", r.code, r.took.Round(time.Millisecond), r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
}

// --timeout bounds the whole run from its start, discovery included (which
// takes no context): against a server that accepts connections and never
// answers, why ends at its 1 s bound, saying which bound and what it was
// waiting for; it did not say "cannot reach" of a server it reached.
func TestTimeoutBoundsAServerThatNeverAnswers(t *testing.T) {
	server := silentServer(t)
	kc := liveKubeconfig(t, server, "{token: abc}")
	for _, args := range [][]string{{"why", "pods"}, {"list", "-A"}, {"wait", "pod/web-0"}} {
		r := executeLive(t, context.Background(), kc, nil, append(args, "--timeout", "1s")...)
		t.Logf("%v: exit %d after %s: %s", args, r.code, r.took.Round(time.Millisecond), r.stderr)
		oneErrorLine(t, r, "timed out: --timeout 1s, the bound on the whole run, expired while waiting for GET "+server+"/api", "no connection to the apiserver got past the TLS handshake, so its /readyz was not asked")
		if r.took > slack || strings.Contains(r.stderr, "cannot reach") || strings.Contains(r.stderr, "context deadline exceeded") {
			t.Errorf("%v: %s", args, r.took)
		}
	}
}

// When --request-timeout fires, the message names it, not --timeout.
func TestRequestTimeoutIsNamed(t *testing.T) {
	kc := liveKubeconfig(t, silentServer(t), "{token: abc}")
	r := executeLive(t, context.Background(), kc, nil, "why", "pods", "--request-timeout", "1s", "--timeout", "1m")
	t.Logf("exit %d after %s: %s", r.code, r.took.Round(time.Millisecond), r.stderr)
	oneErrorLine(t, r, "--request-timeout 1s, the bound on each request (not --timeout), expired")
	if r.took > slack || strings.Contains(r.stderr, "--timeout bounds") {
		t.Errorf("took %s", r.took)
	}
}

// Ctrl-C ends a run within a second, even one held by a read that takes no
// context.
func TestInterruptEndsTheRunWithinASecond(t *testing.T) {
	kc := liveKubeconfig(t, silentServer(t), "{token: abc}")
	for _, args := range [][]string{{"list", "-A"}, {"wait", "pod/web-0", "--timeout", "1m"}} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		r := executeLive(t, ctx, kc, nil, args...)
		t.Logf("%v: exit %d after %s: %s", args, r.code, r.took.Round(time.Millisecond), r.stderr)
		oneErrorLine(t, r, "error: interrupted while waiting for GET ")
		// It ends 0.5 s after the signal; the bound leaves room for a loaded machine.
		if r.took > 500*time.Millisecond+2*time.Second {
			t.Errorf("%v: interrupted after 500ms, ended after %s", args, r.took)
		}
	}
}

// The apiserver's word ends a run whose reads stall: its failing checks,
// within seconds, exit 1; not after --timeout (2 minutes).
func TestStalledReadsQuoteReadyz(t *testing.T) {
	var probes atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz", "/livez":
			probes.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]informer-sync ok\nreadyz check failed\n")
		default: // etcd is stopped: every read hangs
			<-r.Context().Done()
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	kc := liveKubeconfig(t, srv.URL, "{token: abc}")
	stallFast := func(o *Options) { o.monitor.StallAfter = 500 * time.Millisecond }
	for _, args := range [][]string{{"list", "-A"}, {"wait", "pod/web-0", "--timeout", "1m"}} {
		r := executeLive(t, context.Background(), kc, stallFast, args...)
		t.Logf("%v: exit %d after %s: %s", args, r.code, r.took.Round(time.Millisecond), r.stderr)
		oneErrorLine(t, r, "the apiserver at "+srv.URL+" says it is not ready", "/readyz?verbose: [-]etcd failed: reason withheld")
		if r.took > slack {
			t.Errorf("%v: took %s", args, r.took)
		}
	}
	if probes.Load() == 0 {
		t.Error("no probe")
	}
}

// pluginKubeconfig is a kubeconfig whose user's credential comes from script.
func pluginKubeconfig(t *testing.T, server, script string) string {
	t.Helper()
	plugin := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return liveKubeconfig(t, server, fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}", plugin))
}

// A credential plugin that hangs holds the request that needs it, whatever
// its context says: the run still ends at --timeout, and says it was
// waiting for the plugin, not for the cluster, which it never contacted.
// One that fails is named too, not "cannot reach the cluster".
func TestCredentialPlugin(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	pidFile := filepath.Join(t.TempDir(), "pid")
	hangs := pluginKubeconfig(t, srv.URL, fmt.Sprintf("echo $$ > %q\nexec sleep 30\n", pidFile))
	defer func() {
		// Under load the plugin may start after the run has given up on it:
		// wait for its pid before killing it, so that it neither outlives
		// the test nor writes into a TempDir being removed.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			b, err := os.ReadFile(pidFile)
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL) // unit tests run it unguarded
				return
			}
		}
	}()
	r := executeLive(t, context.Background(), hangs, nil, "why", "pods", "--timeout", "1s")
	t.Logf("hangs: exit %d after %s: %s", r.code, r.took.Round(time.Millisecond), r.stderr)
	oneErrorLine(t, r, "timed out: --timeout 1s, the bound on the whole run, expired while waiting for the credential plugin", "no request reached the cluster")
	if r.took > slack || strings.Contains(r.stderr, "cannot reach") {
		t.Errorf("took %s", r.took)
	}

	fails := pluginKubeconfig(t, srv.URL, "echo 'token expired' >&2\nexit 3\n")
	r = executeLive(t, context.Background(), fails, nil, "why", "pods")
	t.Logf("fails: exit %d after %s: %s", r.code, r.took.Round(time.Millisecond), r.stderr)
	oneErrorLine(t, r, "the credential plugin", "failed, so no request reached the cluster", "exit code 3")
	if strings.Contains(r.stderr, "cannot reach") {
		t.Error("said cannot reach")
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server was sent %d requests", n)
	}
}

// A panic is an internal error on one line with exit 1, never Go's exit 2
// (which runbooks read as "stuck"): in the command's work and on the main
// goroutine.
func TestPanicIsAnInternalError(t *testing.T) {
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	root := newRoot(streams, func(o *Options) {
		o.newClients = func() (*kube.Clients, error) {
			noMap()["x"]++ // a nil map: a runtime panic
			return nil, nil
		}
	})
	root.SetArgs([]string{"why", "pods", "--kubeconfig", liveKubeconfig(t, "https://127.0.0.1:1", "{token: abc}")})
	code := Execute(context.Background(), root, errOut)
	if code != ExitError || strings.Count(errOut.String(), "\n") != 1 ||
		!strings.HasPrefix(errOut.String(), "error: internal error: assignment to entry in nil map at github.com/kubectl-terminating/kubectl-terminating/pkg/cmd.TestPanicIsAnInternalError") ||
		!strings.Contains(errOut.String(), "(a bug: please report it") {
		t.Errorf("work: exit %d, stderr %q", code, errOut)
	}

	errOut.Reset()
	main := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { panic(errors.New("boom\x1b[2J\nerror: forged")) }}
	main.SetArgs([]string{}) // not nil: cobra would read the test binary's own flags
	code = Execute(context.Background(), main, errOut)
	if code != ExitError || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), `error: internal error: boom\x1b[2J\nerror: forged at `) {
		t.Errorf("main goroutine: exit %d, stderr %q", code, errOut)
	}
}

// Every error is printed as one escaped line: a damaged snapshot names
// objects from a stranger's file.
func TestExplainIsOneEscapedLine(t *testing.T) {
	err := fmt.Errorf("snapshot: target pod/%s has no object", "web\x1b]0;owned\x07-0\u202e\nerror: all clear")
	got := Explain(err)
	if strings.ContainsAny(got, "\x1b\x07\n\u202e") || got != `snapshot: target pod/web\x1b]0;owned\x07-0\u202e\nerror: all clear has no object` {
		t.Errorf("Explain = %q", got)
	}
}

// A connection never made is "cannot reach the cluster", even when the dial
// timed out; a timeout on a connection made is no such thing.
func TestExplainDialTimeout(t *testing.T) {
	dial := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}}
	if got := Explain(dial); !strings.HasPrefix(got, "cannot reach the cluster: ") {
		t.Errorf("Explain = %q", got)
	}
	read := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}
	if got := Explain(read); !strings.HasPrefix(got, "timed out: ") {
		t.Errorf("Explain = %q", got)
	}
}

func noMap() map[string]int { return nil }
