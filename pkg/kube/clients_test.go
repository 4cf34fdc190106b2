package kube

import (
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func TestTune(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{
		{"0", DefaultRequestTimeout},
		{"5s", 5 * time.Second},
	} {
		flags := genericclioptions.NewConfigFlags(false)
		server, timeout := "https://127.0.0.1:6443", tc.flag
		flags.APIServer, flags.Timeout = &server, &timeout
		Tune(flags, "kubectl-terminating/test")
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Timeout != tc.want || cfg.UserAgent != "kubectl-terminating/test" || cfg.QPS != QPS || cfg.Burst != Burst {
			t.Errorf("--request-timeout=%s: timeout %s, user agent %q, QPS %v, burst %d", tc.flag, cfg.Timeout, cfg.UserAgent, cfg.QPS, cfg.Burst)
		}
	}
}
