package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// ControllerManagerEvidence: the leader-election Leases of the controller
// managers (observed.ControllerManagerLeases).
var ControllerManagerEvidence = newEvidence()

func init() {
	registerRule(rule{name: "controller manager leading", applies: heldByControllerManager,
		needs: func(*observed.Target) Evidence { return ControllerManagerEvidence }, explain: controllerManagerCauses})
}

// controllerManagerOf names the controller manager whose controller removes
// the finalizer f, as its catalogue row's owner says ("PV protection
// controller (kube-controller-manager)"); "" for any other owner (every
// third-party finalizer).
func controllerManagerOf(f string) string {
	row, known := catalog.LookupFinalizer(f)
	if !known {
		return ""
	}
	for _, cm := range observed.ControllerManagers {
		if strings.Contains(row.Owner, "("+cm+")") {
			return cm
		}
	}
	return ""
}

// heldByControllerManager: an object being deleted that a finalizer of a
// controller manager's holds.
func heldByControllerManager(t *observed.Target) bool {
	return slices.ContainsFunc(finalizersOf(t), func(f heldBy) bool { return controllerManagerOf(f.name) != "" }) &&
		t.Object.GetDeletionTimestamp() != nil
}

// controllerManagerCauses: a controller manager runs its controllers only
// while a replica holds its leader-election Lease; a Lease left unrenewed
// means none does, and none of its finalizers is removed. A component with
// no Lease (leader election off) is not judged.
func controllerManagerCauses(x subject) []report.Cause {
	leases, read := observed.ControllerManagerLeases.Get(x.s)
	if !read {
		return nil
	}
	held := map[string][]string{}
	for _, f := range finalizersOf(x.t) {
		if cm := controllerManagerOf(f.name); cm != "" {
			held[cm] = append(held[cm], f.name)
		}
	}
	var causes []report.Cause
	for _, cm := range observed.ControllerManagers {
		lease := leases[cm]
		if len(held[cm]) == 0 || lease == nil {
			continue
		}
		state, facts := sidecarLease(x.s, lease, true, cm, cm)
		if state != leaseStale {
			continue
		}
		holder := ""
		if h := lease.Spec.HolderIdentity; h != nil {
			holder = *h
		}
		summary := fmt.Sprintf("%s is not running: no replica has renewed its leader lease %s/%s for %s (last held by %q), so nothing removes %s",
			cm, lease.Namespace, cm, report.HumanDuration(x.s.Now.Sub(lease.Spec.RenewTime.Time)), holder, report.FirstFew(held[cm]))
		facts = append(facts, report.Noted(fmt.Sprintf("%s: its controllers run only in the replica that holds the lease, and remove %s", cm, strings.Join(held[cm], ", "))))
		c := cause(catalog.ControllerManagerNotLeading, report.Critical, 0.85, summary, facts,
			step(catalog.ControllerManagerNotLeading, "check-controller-manager",
				then(kubectl(lease.Namespace, "get", "lease", cm, "-o", "yaml"), kubectl(lease.Namespace, "get", "pods", "-l", "component="+cm, "-o", "wide")),
				"component", cm, "holder", fmt.Sprintf("%q", holder)),
			step(catalog.ControllerManagerNotLeading, "restart-controller-manager", "", "component", cm))
		c.About.Object = &report.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases.coordination.k8s.io", Namespace: lease.Namespace, Name: cm, UID: string(lease.UID)}
		c.About.Finalizers = held[cm]
		c.About.Controller = "down"
		causes = append(causes, c)
	}
	return causes
}
