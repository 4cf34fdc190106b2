package collect

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "controller managers", after: nesting, read: (*Collector).readControllerManagers,
		early: func(c *Collector, ctx context.Context) { c.controllerManagerLeases(ctx) }, earlyOn: diagnose.ControllerManagerEvidence,
		permissions: []Permission{
			{Read: "`get` leases/kube-controller-manager and leases/cloud-controller-manager in kube-system", UsedFor: "whether a controller manager runs (its leader lease renewed), for an object held by a finalizer one of its controllers removes", Without: "`skipped` names the read; `ControllerManagerNotLeading` is not judged"},
		}})
}

// readControllerManagers reads the controller managers' leader-election
// Leases, once a run, when a target is held by a finalizer of theirs.
func (c *Collector) readControllerManagers(ctx context.Context, s *observed.Snapshot) {
	targets := c.needing(s, diagnose.ControllerManagerEvidence)
	if len(targets) == 0 {
		return
	}
	read := c.controllerManagerLeases(ctx)
	leases := map[string]*coordinationv1.Lease{}
	for i, name := range observed.ControllerManagers {
		switch l, err := read[i].lease, read[i].err; {
		case apierrors.IsNotFound(err):
			leases[name] = nil
		case err != nil:
			failed := skipOf("get leases/"+name+" in "+observed.ControlPlaneNamespace, err)
			for _, t := range targets {
				c.skipTarget(t, failed)
			}
			return
		default:
			leases[name] = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace, UID: l.UID}, Spec: l.Spec}
		}
	}
	observed.ControllerManagerLeases.Set(s, leases)
}

// leaseRead is a Lease, or why it could not be read.
type leaseRead struct {
	lease *coordinationv1.Lease
	err   error
}

// controllerManagerLeases gets the Lease of each of observed.ControllerManagers,
// at once, once a run.
func (c *Collector) controllerManagerLeases(ctx context.Context) []leaseRead {
	read := make([]leaseRead, len(observed.ControllerManagers))
	bounded(len(read), len(read), func(i int) {
		name := observed.ControllerManagers[i]
		read[i].lease, read[i].err = readOnce(c, "leases/"+observed.ControlPlaneNamespace+"/"+name, func() (*coordinationv1.Lease, error) {
			return c.Clients.Typed.CoordinationV1().Leases(observed.ControlPlaneNamespace).Get(ctx, name, metav1.GetOptions{})
		})
	})
	return read
}
