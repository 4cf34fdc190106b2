package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const (
	// DefaultStallAfter: a request unanswered this long, while nothing else
	// was answered either, makes the monitor ask the apiserver's health.
	// Normal runs never wait that long for an answer, so they make no
	// extra request (docs/performance.md counts them).
	DefaultStallAfter = 5 * time.Second
	// DefaultProbeTimeout bounds the health probe (/readyz and /livez at
	// once). With etcd stopped /readyz takes about 4 s: it runs its checks
	// one after the other, and both of its etcd checks give up after 2 s.
	DefaultProbeTimeout = 6 * time.Second
	// reprobeAfter: the health is asked again only this long after the last
	// probe, however many requests stall meanwhile.
	reprobeAfter = 15 * time.Second
)

// Monitor follows the requests that the clients of one process send, so that
// a run that stalls or fails can say what it was waiting for, and ask the
// apiserver why. Tune installs it on every REST config cli-runtime derives
// from the flags: its transport wrapper sits under the credential plugin's
// (client-go adds that one last, outermost), so a request counts as sent
// only once it has its credentials and goes to the cluster.
//
// It makes no request of its own unless a request stalls (StallAfter
// without any answer) or a run fails and Health is asked for its cause.
type Monitor struct {
	// StallAfter and ProbeTimeout default to DefaultStallAfter and
	// DefaultProbeTimeout; tests shorten them.
	StallAfter, ProbeTimeout time.Duration
	// GuardExec runs the kubeconfig's credential plugin under a guard that
	// kills it when the plugin's process ends (guard.go). Off in unit tests,
	// whose binary is not the plugin.
	GuardExec bool

	mu          sync.Mutex
	probeConfig *rest.Config // the first config seen, without the monitor's wrapper
	execCommand string       // the credential plugin of the kubeconfig's user, if any
	sent        int          // requests that reached the cluster (credentials obtained)
	answered    int          // of those, answered (any HTTP status)
	connected   bool         // a request got a connection (TCP and, for https, TLS done)
	lastAnswer  time.Time
	inflight    map[uint64]pending
	cut         *pending // the oldest request ended unanswered by its context
	nextID      uint64
	health      *Health // the last probe's result
	healthAt    int     // m.answered when it was probed
	lastProbe   time.Time
}

type pending struct {
	start, end  time.Time // end: when it was cut (zero while in flight)
	method, url string
}

// unanswered says how long p waited: until now, or until it was cut.
func (p pending) unanswered() time.Duration {
	if p.end.IsZero() {
		return time.Since(p.start)
	}
	return p.end.Sub(p.start)
}

// NewMonitor is a monitor with the default bounds.
func NewMonitor() *Monitor {
	return &Monitor{StallAfter: DefaultStallAfter, ProbeTimeout: DefaultProbeTimeout, inflight: map[uint64]pending{}}
}

// observe is called with each REST config derived from the flags: it
// records what the messages and the probe need and wraps the transport.
func (m *Monitor) observe(c *rest.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.ExecProvider != nil {
		m.execCommand = c.ExecProvider.Command
		if m.GuardExec {
			guardExec(c)
		}
	}
	if m.probeConfig == nil {
		m.probeConfig = rest.CopyConfig(c)
	}
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &monitored{m: m, rt: rt} })
}

type monitored struct {
	m  *Monitor
	rt http.RoundTripper
}

func (t *monitored) RoundTrip(req *http.Request) (*http.Response, error) {
	id := t.m.started(req)
	// GotConn comes once the connection is usable: dialled and, for https,
	// past its TLS handshake.
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { t.m.gotConn() }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := t.rt.RoundTrip(req)
	t.m.finished(id, err == nil, req.Context().Err() != nil)
	return resp, err
}

// WrappedRoundTripper lets client-go see through the wrapper (utilnet.RoundTripperWrapper).
func (t *monitored) WrappedRoundTripper() http.RoundTripper { return t.rt }

// CancelRequest passes on the cancellation http.Client sends a transport
// at its Timeout, as client-go's own wrappers do.
func (t *monitored) CancelRequest(req *http.Request) {
	if c, ok := t.rt.(interface{ CancelRequest(*http.Request) }); ok {
		c.CancelRequest(req)
	}
}

func (m *Monitor) started(req *http.Request) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	m.sent++
	u := *req.URL
	u.User = nil
	m.inflight[m.nextID] = pending{start: time.Now(), method: req.Method, url: u.String()}
	return m.nextID
}

// finished records a request's end. One its context cut (the run was
// interrupted or timed out) is kept, the oldest of them: the cancellation
// reaches a request that takes the run's context before the run can ask
// what it waited for (Doing). An answer after it says the run went on, and
// the run did not wait for it (a read the plugin cancelled itself).
func (m *Monitor) finished(id uint64, answered, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.inflight[id]; cut && !answered && (m.cut == nil || p.start.Before(m.cut.start)) {
		p.end = time.Now()
		m.cut = &p
	}
	delete(m.inflight, id)
	if answered {
		m.answered++
		m.lastAnswer = time.Now()
		m.cut = nil
	}
}

func (m *Monitor) gotConn() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connected = true
}

// Connected says whether any request of the run got a connection to the
// apiserver: dialled and, for https, past the TLS handshake. A server that
// accepts connections and never answers (not even the handshake) has none.
func (m *Monitor) Connected() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.connected
}

// Contacted says whether any request reached the cluster: none did while
// the credential plugin had not returned, or when it failed.
func (m *Monitor) Contacted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent > 0
}

// Answered says whether the apiserver answered any request of the run.
func (m *Monitor) Answered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answered > 0
}

// ExecCommand is the kubeconfig user's credential plugin, "" without one.
func (m *Monitor) ExecCommand() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.execCommand
}

// Doing says what the run is waiting for now: the oldest request in flight
// (or, when none is, the oldest its context cut) and how long it has been
// unanswered, or the credential plugin when no request has reached the
// cluster; "" when nothing is awaited.
func (m *Monitor) Doing() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.inflight) > 0 {
		ids := make([]uint64, 0, len(m.inflight))
		for id := range m.inflight {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		s := m.inflight[ids[0]].waiting()
		if n := len(ids) - 1; n > 0 {
			s += fmt.Sprintf("; %s in flight", report.Count(n, "more request"))
		}
		return s + ")"
	}
	if m.cut != nil {
		return m.cut.waiting() + ")"
	}
	if m.execCommand != "" && m.sent == 0 {
		return fmt.Sprintf("waiting for the credential plugin %q (the kubeconfig user's exec command) to return a credential: no request reached the cluster", m.execCommand)
	}
	return ""
}

func (p pending) waiting() string {
	return fmt.Sprintf("waiting for %s %s (unanswered for %s", p.method, p.url, p.unanswered().Round(100*time.Millisecond))
}

// stalled: a request has waited StallAfter with nothing answered meanwhile,
// and the health was not asked lately.
func (m *Monitor) stalled(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.inflight) == 0 || (!m.lastProbe.IsZero() && now.Sub(m.lastProbe) < reprobeAfter) {
		return false
	}
	var oldest time.Time
	for _, p := range m.inflight {
		if oldest.IsZero() || p.start.Before(oldest) {
			oldest = p.start
		}
	}
	since := oldest
	if m.lastAnswer.After(since) {
		since = m.lastAnswer
	}
	return now.Sub(since) >= m.StallAfter
}

// Begin watches one run: when a request stalls, it asks the apiserver's
// health, and if the apiserver says it is not ready the returned context
// ends with a *NotReadyError as its cause (context.Cause). stop ends the
// watch.
func (m *Monitor) Begin(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if !m.stalled(now) {
					continue
				}
				if h := m.Health(ctx); h.NotReady() {
					cancel(&NotReadyError{Health: h})
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Health asks the apiserver's /readyz?verbose and /livez?verbose (allowed to
// everyone by the default RBAC: system:public-info-viewer), bounded by
// ProbeTimeout. A result is reused while nothing was answered since it was
// read. nil when no client was ever built.
func (m *Monitor) Health(ctx context.Context) *Health {
	m.mu.Lock()
	if m.probeConfig == nil {
		m.mu.Unlock()
		return nil
	}
	if m.health != nil && m.healthAt == m.answered {
		h := m.health
		m.mu.Unlock()
		return h
	}
	cfg := rest.CopyConfig(m.probeConfig)
	m.lastProbe = time.Now()
	timeout := m.ProbeTimeout
	m.mu.Unlock()

	h := probe(ctx, cfg, timeout)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health, m.healthAt = h, m.answered
	return h
}

// Health is what the apiserver says of itself.
type Health struct {
	Server string
	// Answered: /readyz answered; Ready: with 200.
	Answered, Ready bool
	// Failed are the failing checks /readyz lists ("[-]etcd failed: reason
	// withheld"), Live those of /livez.
	Failed, Live []string
	// Problem says why the health could not be read (no answer, refused,
	// forbidden), or what /readyz said when it listed no failed check.
	Problem string
}

// NotReady: the apiserver answered that it is not ready.
func (h *Health) NotReady() bool {
	return h != nil && h.Answered && !h.Ready && (len(h.Failed) > 0 || h.Problem != "")
}

// String is the health in one line: the failed checks, or why it is not known.
func (h *Health) String() string {
	switch {
	case h == nil:
		return ""
	case h.Ready:
		return "the apiserver's /readyz says ok"
	case h.NotReady():
		s := "/readyz?verbose: " + strings.Join(orElse(h.Failed, h.Problem), ", ")
		if len(h.Live) > 0 {
			s += "; /livez?verbose: " + strings.Join(h.Live, ", ")
		}
		return s
	}
	return "its /readyz could not be read: " + h.Problem
}

func orElse(lines []string, alt string) []string {
	if len(lines) > 0 {
		return lines
	}
	return []string{alt}
}

// NotReadyError: reads stalled and the apiserver says it is not ready.
type NotReadyError struct{ Health *Health }

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("the apiserver at %s says it is not ready, so its reads hang or fail (%s)", e.Health.Server, e.Health)
}

// probe reads /readyz?verbose and /livez?verbose at once. It waits for them
// on a goroutine of its own: a credential plugin that hangs blocks the
// request itself, whatever its context says.
func probe(ctx context.Context, cfg *rest.Config, timeout time.Duration) *Health {
	h := &Health{Server: cfg.Host}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		h.Problem = err.Error()
		return h
	}
	cfg.Timeout = timeout
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		h.Problem = err.Error()
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		path   string
		status int
		body   string
		err    error
	}
	answers := make(chan answer, 2)
	for _, path := range []string{"/readyz", "/livez"} {
		go func() {
			u := *base
			u.Path = strings.TrimSuffix(u.Path, "/") + path
			u.RawQuery = "verbose"
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				answers <- answer{path: path, err: err}
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				answers <- answer{path: path, err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			answers <- answer{path: path, status: resp.StatusCode, body: string(body), err: err}
		}()
	}
	timer := time.NewTimer(timeout + 100*time.Millisecond)
	defer timer.Stop()
	for range 2 {
		select {
		case a := <-answers:
			failed := failedChecks(a.body)
			if a.path == "/livez" {
				if a.err == nil && a.status != http.StatusOK {
					h.Live = failed
				}
				continue
			}
			switch {
			case a.err != nil && (ctx.Err() != nil || isTimeout(a.err)):
				h.Problem = fmt.Sprintf("no answer within %s either", timeout)
			case a.err != nil:
				h.Problem = a.err.Error()
			case a.status == http.StatusOK:
				h.Answered, h.Ready = true, true
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				h.Problem = fmt.Sprintf("HTTP %d: not allowed to read it", a.status)
			default:
				h.Answered, h.Failed = true, failed
				if len(failed) == 0 {
					h.Problem = fmt.Sprintf("HTTP %d: %s", a.status, firstLine(a.body))
				}
			}
		case <-timer.C:
			if !h.Answered && h.Problem == "" {
				h.Problem = fmt.Sprintf("no answer within %s either", timeout)
			}
			return h
		}
	}
	return h
}

// failedChecks are the "[-]name failed: ..." lines of a verbose health answer.
func failedChecks(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "[-]") {
			out = append(out, line)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// CredentialError: the kubeconfig user's credential plugin failed, so no
// request reached the cluster.
type CredentialError struct {
	Command, Detail string
	Err             error
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("the credential plugin %q (the kubeconfig user's exec command) failed, so no request reached the cluster: %s", e.Command, e.Detail)
}

func (e *CredentialError) Unwrap() error { return e.Err }

// Credential is err as a *CredentialError when it is client-go's failure to
// get credentials from the plugin ("getting credentials: exec: ..."), the
// plugin named as the kubeconfig names it (not as the guard that ran it);
// nil for any other error.
func (m *Monitor) Credential(err error) *CredentialError {
	if err == nil {
		return nil
	}
	_, detail, ok := strings.Cut(err.Error(), "getting credentials: ")
	if !ok {
		return nil
	}
	command := m.ExecCommand()
	if self, e := os.Executable(); e == nil && command != "" {
		detail = strings.ReplaceAll(detail, self, command)
	}
	return &CredentialError{Command: command, Detail: detail, Err: err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
