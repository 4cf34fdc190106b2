package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

const etcdDown = `[+]ping ok
[+]log ok
[-]etcd failed: reason withheld
[+]informer-sync ok
[-]etcd-readiness failed: reason withheld
readyz check failed
`

// The health is read from /readyz?verbose and /livez?verbose: the failed
// checks, as the apiserver lists them.
func TestHealth(t *testing.T) {
	for _, tc := range []struct {
		name         string
		readyz       func(http.ResponseWriter)
		notReady     bool
		want         string
		wantRequests int32
	}{
		{"etcd down", func(w http.ResponseWriter) { w.WriteHeader(500); fmt.Fprint(w, etcdDown) }, true,
			"/readyz?verbose: [-]etcd failed: reason withheld, [-]etcd-readiness failed: reason withheld; /livez?verbose: [-]etcd failed: reason withheld", 2},
		{"ready", func(w http.ResponseWriter) { fmt.Fprint(w, "[+]ping ok\nreadyz check passed\n") }, false, "the apiserver's /readyz says ok", 2},
		{"forbidden", func(w http.ResponseWriter) { w.WriteHeader(403); fmt.Fprint(w, `{"kind":"Status"}`) }, false, "not allowed", 2},
		{"hangs", nil, false, "no answer within 500ms either", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if r.URL.RawQuery != "verbose" {
					t.Errorf("%s: query %q", r.URL.Path, r.URL.RawQuery)
				}
				switch r.URL.Path {
				case "/readyz":
					if tc.readyz == nil { // hangs
						select {
						case <-r.Context().Done():
						case <-time.After(3 * time.Second):
						}
						return
					}
					tc.readyz(w)
				case "/livez":
					w.WriteHeader(500)
					fmt.Fprint(w, "[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed\n")
				default:
					t.Errorf("asked %s", r.URL.Path)
				}
			}))
			defer srv.Close()
			m := NewMonitor()
			m.ProbeTimeout = 500 * time.Millisecond
			m.observe(&rest.Config{Host: srv.URL})
			h := m.Health(context.Background())
			if h.NotReady() != tc.notReady || !strings.Contains(h.String(), tc.want) {
				t.Errorf("not ready %t, %q; want %t, %q", h.NotReady(), h, tc.notReady, tc.want)
			}
			// Nothing was answered since: the result stands, no new probe.
			if m.Health(context.Background()) != h || requests.Load() != tc.wantRequests {
				t.Errorf("%d requests, want %d", requests.Load(), tc.wantRequests)
			}
		})
	}
}

// A request unanswered StallAfter, nothing else answered meanwhile, makes
// the run's context end with the apiserver's word; a run whose requests are
// answered asks nothing.
func TestStallAsksTheHealth(t *testing.T) {
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz", "/livez":
			probes.Add(1)
			w.WriteHeader(500)
			fmt.Fprint(w, etcdDown)
		case "/api/fast":
			fmt.Fprint(w, "{}")
		default:
			<-r.Context().Done()
		}
	}))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	m := NewMonitor()
	m.StallAfter = 300 * time.Millisecond
	cfg := &rest.Config{Host: srv.URL}
	m.observe(cfg)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := m.Begin(context.Background())
	defer stop()
	for range 5 {
		resp, err := client.Get(srv.URL + "/api/fast")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	if probes.Load() != 0 || ctx.Err() != nil {
		t.Fatalf("answered requests made %d probes", probes.Load())
	}
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/pods", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled request did not end the run")
	}
	var nr *NotReadyError
	cause := context.Cause(ctx)
	if nr, _ = cause.(*NotReadyError); nr == nil || !strings.Contains(nr.Error(), "[-]etcd failed") {
		t.Errorf("cause %v", cause)
	}
}

// A request its context cuts is still what the run waited for once it has
// ended: Doing names it, with how long it waited, while nothing is in
// flight and nothing was answered since; an answered request is never
// named.
func TestDoingNamesTheRequestItsContextCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/fast" {
			fmt.Fprint(w, "{}")
			return
		}
		<-r.Context().Done()
	}))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	m := NewMonitor()
	cfg := &rest.Config{Host: srv.URL}
	m.observe(cfg)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	get(context.Background(), "/api/fast")
	if d := m.Doing(); d != "" {
		t.Fatalf("after an answer, Doing = %q", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	get(ctx, "/api/v1/pods")
	if d := m.Doing(); !strings.HasPrefix(d, "waiting for GET "+srv.URL+"/api/v1/pods (unanswered for ") {
		t.Errorf("after the cut, Doing = %q", d)
	}
	get(context.Background(), "/api/fast")
	if d := m.Doing(); d != "" {
		t.Errorf("an answer after the cut: the run went on, but Doing = %q", d)
	}
}
