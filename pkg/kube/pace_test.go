package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The pace follows the server: the token bucket until a response carries
// APF's flow-schema header, then none (the server paces); at the first
// 429 the bucket again, for the rest of the run, whatever follows. The
// client-go clients of a run share it, and client-go retries the 429
// after its Retry-After.
func TestThePaceFollowsTheServer(t *testing.T) {
	var apf, busy atomic.Bool
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if apf.Load() {
			w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "c1a5c0de")
			w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "c1a5c0df")
		}
		if busy.CompareAndSwap(true, false) { // once
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	pace := newServerPace(1, 1) // one request a second: any wait on it would show
	cfg := &rest.Config{Host: srv.URL, RateLimiter: pace}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &paced{pace: pace, rt: rt} })
	client := kubernetes.NewForConfigOrDie(cfg)
	get := func() {
		t.Helper()
		if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	get()
	if pace.Free() || pace.TryAccept() {
		t.Fatal("a server without APF: the bucket paces (its one token taken)")
	}
	apf.Store(true)
	get() // waits for the bucket's next token, then hears APF
	if !pace.Free() {
		t.Fatal("a response with APF's header did not free the pace")
	}
	for range 50 {
		if !pace.TryAccept() {
			t.Fatal("the server paces: no client-side wait")
		}
	}
	busy.Store(true)
	before := served.Load()
	get() // a 429, retried by client-go after Retry-After
	if served.Load()-before != 2 {
		t.Errorf("%d requests for one GET answered 429 once, want 2 (client-go's retry)", served.Load()-before)
	}
	if pace.Free() {
		t.Fatal("a 429 did not bring the bucket back")
	}
	get()
	if pace.Free() {
		t.Error("after a 429, APF's header freed the pace again: the server said it is busy")
	}
}
