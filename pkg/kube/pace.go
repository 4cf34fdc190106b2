package kube

import (
	"context"
	"net/http"
	"sync/atomic"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/util/flowcontrol"
)

// An apiserver with priority and fairness (APF: on by default since 1.20,
// GA in 1.29) paces each client itself: it queues what it cannot serve at
// once and answers 429 with Retry-After when its queues are full, which
// client-go honours (it waits and retries). A fixed client-side limit on
// top of it only slows a scan of a thousand types that the server would
// serve at once. So the plugin paces itself as the server does: with the
// token bucket (QPS, Burst) until a response shows APF at work (its
// X-Kubernetes-PF-FlowSchema-UID header), then not at all but for the
// bound on lists in flight; and back to the bucket for the rest of the run
// at the first 429, where the server says it is busy (flux and cert-manager
// do the same).

// serverPace is the rate limiter shared by every client of a run.
type serverPace struct {
	bucket flowcontrol.RateLimiter
	// free: the server paces (APF seen, no 429 yet).
	free atomic.Bool
	// busy: the server answered 429 once; the bucket paces from then on.
	busy atomic.Bool
}

func newServerPace(qps float32, burst int) *serverPace {
	return &serverPace{bucket: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// TryAccept, Accept, Wait, Stop and QPS make it a client-go RateLimiter.
func (p *serverPace) TryAccept() bool { return p.free.Load() || p.bucket.TryAccept() }

func (p *serverPace) Accept() {
	if !p.free.Load() {
		p.bucket.Accept()
	}
}

func (p *serverPace) Wait(ctx context.Context) error {
	if p.free.Load() {
		return ctx.Err()
	}
	return p.bucket.Wait(ctx)
}

func (p *serverPace) Stop() { p.bucket.Stop() }

func (p *serverPace) QPS() float32 { return p.bucket.QPS() }

// heard reads a response: APF's header frees the pace, a 429 ends that.
func (p *serverPace) heard(resp *http.Response) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		p.busy.Store(true)
		p.free.Store(false)
	case !p.busy.Load() && resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "":
		p.free.Store(true)
	}
}

// Free says whether the server paces the run now.
func (p *serverPace) Free() bool { return p.free.Load() }

// paced wraps a transport so that every response informs the pace.
type paced struct {
	pace *serverPace
	rt   http.RoundTripper
}

func (t *paced) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		t.pace.heard(resp)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go see through the wrapper.
func (t *paced) WrappedRoundTripper() http.RoundTripper { return t.rt }

// CancelRequest passes on a cancellation, as client-go's wrappers do.
func (t *paced) CancelRequest(req *http.Request) {
	if c, ok := t.rt.(interface{ CancelRequest(*http.Request) }); ok {
		c.CancelRequest(req)
	}
}
