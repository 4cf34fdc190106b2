package collect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "provisioners", after: nesting, read: (*Collector).readProvisioners,
		permissions: []Permission{
			{Read: "`list` leases in every namespace, by name (the driver's name, sanitized: `ebs-csi-aws-com`); `get` csidrivers/DRIVER", UsedFor: "whether a CSI driver's external-provisioner runs (its leader lease renewed) or the driver is uninstalled (neither exists), for a released volume whose backend volume it must delete", Without: "`skipped` names the read; `VolumeDeleteFailed` stays a warning"},
		}})
}

// readProvisioners reads, for each CSI driver of a volume whose backend
// volume its external-provisioner is to delete, what says whether that
// provisioner runs: its leader-election Lease, wherever it runs, and the
// driver's CSIDriver object (a driver uninstalled takes both with it).
func (c *Collector) readProvisioners(ctx context.Context, s *observed.Snapshot) {
	drivers := map[string][]*observed.Target{}
	for _, t := range c.needing(s, diagnose.ProvisionerEvidence) {
		if t.Volume != nil && t.Volume.Spec.CSI != nil && t.Volume.Spec.CSI.Driver != "" {
			drivers[t.Volume.Spec.CSI.Driver] = append(drivers[t.Volume.Spec.CSI.Driver], t)
		}
	}
	for driver, targets := range drivers {
		lease, failed := c.leaderLease(ctx, observed.ProvisionerLeaseName(driver))
		if failed == nil {
			_, err := c.Clients.Typed.StorageV1().CSIDrivers().Get(ctx, driver, metav1.GetOptions{})
			if err == nil || apierrors.IsNotFound(err) {
				s.Provisioners[driver] = &observed.Provisioner{Lease: lease, Installed: err == nil}
				continue
			}
			sk := skipOf("get csidrivers/"+driver, err)
			failed = &sk
		}
		for _, t := range targets {
			c.skipTarget(t, *failed)
		}
	}
}
