// Package kube builds the API clients the plugin uses from kubectl's flags.
// Everything downstream takes the interfaces, so tests inject fakes.
package kube

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// QPS and Burst pace the run until the server shows it paces clients
// itself (pace.go), and again once it says it is busy. Raised on purpose:
// client-go's default of 5/10 is a hidden rate limit on a scan of every
// resource type.
const (
	QPS   = 100
	Burst = 200
)

// DefaultRequestTimeout bounds each request (connection and TLS handshake
// included) when --request-timeout is not given: one hung aggregated API
// must not hang the whole scan; its list fails, is reported under skipped,
// and the scan carries on. --request-timeout=0 removes the bound.
const DefaultRequestTimeout = 30 * time.Second

// RequestTimeoutUsage says what --request-timeout does here.
const RequestTimeoutUsage = "How long one request may take, connection and TLS handshake included (e.g. 10s, 1m); 0 removes the bound. A request that times out is reported under skipped and the run carries on."

// Clients are the read-only API clients of one run.
type Clients struct {
	Typed     kubernetes.Interface
	Metadata  metadata.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.CachedDiscoveryInterface
	Mapper    meta.RESTMapper
}

// Tune sets the user agent (so audit logs name the plugin), one pace for
// every REST config that cli-runtime derives from the flags (the server's,
// when it paces clients: pace.go), and the default of --request-timeout;
// the monitor it returns follows every request of those configs
// (monitor.go).
func Tune(flags *genericclioptions.ConfigFlags, userAgent string) *Monitor {
	*flags.Timeout = DefaultRequestTimeout.String()
	m := NewMonitor()
	pace := newServerPace(QPS, Burst)
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.UserAgent = userAgent
		c.QPS, c.Burst = QPS, Burst
		c.RateLimiter = pace
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &paced{pace: pace, rt: rt} })
		m.observe(c)
		return c
	}
	return m
}

// New builds the clients from kubectl's flags.
func New(getter genericclioptions.RESTClientGetter) (*Clients, error) {
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	// The scan's discovery, read fresh each run, is kept in memory: writing
	// it to kubectl's disk cache, a file per group version, cost more than
	// reading it. The mapper that resolves TYPE arguments keeps that cache.
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	mapper, err := getter.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	return &Clients{Typed: typed, Metadata: md, Dynamic: dyn, Discovery: memory.NewMemCacheClient(disc), Mapper: WithBuiltins(mapper)}, nil
}
