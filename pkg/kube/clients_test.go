package kube

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// --request-timeout defaults to 30 s; what the user gives wins, 0 included.
func TestTune(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, DefaultRequestTimeout},
		{[]string{"--request-timeout", "5s"}, 5 * time.Second},
		{[]string{"--request-timeout", "0"}, 0},
	} {
		flags := genericclioptions.NewConfigFlags(false)
		server := "https://127.0.0.1:6443"
		flags.APIServer = &server
		Tune(flags, "kubectl-terminating/test")
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		flags.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Timeout != tc.want || cfg.UserAgent != "kubectl-terminating/test" || cfg.QPS != QPS || cfg.Burst != Burst {
			t.Errorf("%v: timeout %s, user agent %q, QPS %v, burst %d", tc.args, cfg.Timeout, cfg.UserAgent, cfg.QPS, cfg.Burst)
		}
		again, err := flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := cfg.RateLimiter.(*serverPace); !ok || again.RateLimiter != cfg.RateLimiter || p.QPS() != QPS {
			t.Errorf("%v: the configs of a run do not share one server pace: %T, %T", tc.args, cfg.RateLimiter, again.RateLimiter)
		}
	}
}
