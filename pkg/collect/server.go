package collect

import (
	"context"

	"k8s.io/apimachinery/pkg/version"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	// Early, on the first object found being deleted (earlyOn none: any
	// needs it): otherwise the round trip follows the scan.
	register(source{name: "server version", read: (*Collector).readServerVersion,
		early: func(c *Collector, _ context.Context) { _, _ = c.serverVersion() },
		permissions: []Permission{
			{Read: "`get` on the URL `/version`", UsedFor: "the release the verdicts are made for (what changed between releases: pkg/kubeversion)", Without: "everyone has it: `system:public-info-viewer`; without it `skipped` names the read"},
		}})
}

// readServerVersion reads /version once per run: the rules derive from it
// what changed between releases (pkg/kubeversion). Every user may read it
// (system:public-info-viewer).
func (c *Collector) readServerVersion(ctx context.Context, s *observed.Snapshot) {
	if len(s.Targets) == 0 {
		return
	}
	v, err := c.serverVersion()
	if err != nil {
		c.Skip(skipOf("server version", err))
		return
	}
	s.Server = &observed.Server{GitVersion: v.GitVersion}
}

// serverVersion is /version, read once per run.
func (c *Collector) serverVersion() (*version.Info, error) {
	return readOnce(c, "version", c.Clients.Discovery.ServerVersion)
}
