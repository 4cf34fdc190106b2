package diagnose

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// controllerManagerLease is a controller manager's leader-election Lease,
// last renewed renewed ago by holder, for 15 s (their default).
func controllerManagerLease(name, holder string, renewed time.Duration) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: "lease-uid"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: int32p(15), RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}}
}

func TestControllerManagerNotLeading(t *testing.T) {
	ns := terminatingNamespace(10 * time.Minute) // no condition: the namespace controller never acted
	s := snap(ns)
	observed.ControllerManagerLeases.Set(s, map[string]*coordinationv1.Lease{
		"kube-controller-manager":  controllerManagerLease("kube-controller-manager", "cp-1_4b0f2c", 12*time.Minute),
		"cloud-controller-manager": nil, // leader election off, or no cloud: not judged
	})
	if !Needs(s.Targets[0]).Has(ControllerManagerEvidence) {
		t.Fatal("a namespace held by kubernetes does not ask for the controller managers' leases")
	}
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"ControllerManagerNotLeading", "NamespaceControllerInactive"}, report.Critical,
		`lease kube-system/kube-controller-manager: holder "cp-1_4b0f2c", renewed 12m ago (duration 15s)`)
	top := it.Causes[0]
	if !strings.Contains(top.Summary, `kube-controller-manager is not running: no replica has renewed its leader lease kube-system/kube-controller-manager for 12m (last held by "cp-1_4b0f2c"), so nothing removes kubernetes`) {
		t.Errorf("summary: %s", top.Summary)
	}
	if o := top.About.Object; o == nil || o.Kind != "Lease" || o.Namespace != "kube-system" || o.Name != "kube-controller-manager" ||
		strings.Join(top.About.Finalizers, ",") != "kubernetes" || top.About.Controller != "down" {
		t.Errorf("about: %+v %v", top.About, top.About.Object)
	}
	if got := top.Remediation[0].Command; got != "kubectl get lease kube-controller-manager -n kube-system -o yaml; kubectl get pods -n kube-system -l component=kube-controller-manager -o wide" {
		t.Errorf("first step's command: %s", got)
	}
	if got := top.Remediation[0].Action; !strings.Contains(got, `Check that kube-controller-manager runs`) || !strings.Contains(got, `(the last leader was "cp-1_4b0f2c")`) {
		t.Errorf("first step: %s", got)
	}
	if lf := top.Facts[0]; lf.Field != "spec.renewTime" || lf.Object == nil || lf.Object.Name != "kube-controller-manager" || lf.At == nil {
		t.Errorf("the lease's fact is not data: %+v", lf)
	}

	// Renewed within its duration: the component runs, nothing to say.
	observed.ControllerManagerLeases.Set(s, map[string]*coordinationv1.Lease{"kube-controller-manager": controllerManagerLease("kube-controller-manager", "cp-1_4b0f2c", 2*time.Second)})
	expectCauses(t, Diagnose(s).Items[0], []string{"NamespaceControllerInactive"}, report.Critical, "")
	// No lease (leader election off), or the leases not read: not judged.
	observed.ControllerManagerLeases.Set(s, map[string]*coordinationv1.Lease{"kube-controller-manager": nil})
	expectCauses(t, Diagnose(s).Items[0], []string{"NamespaceControllerInactive"}, report.Critical, "")
	expectCauses(t, Diagnose(snap(ns)).Items[0], []string{"NamespaceControllerInactive"}, report.Critical, "")
}

// The cloud service controller runs in cloud-controller-manager: its
// finalizer is judged by that component's lease, and a finalizer of no
// controller manager asks for neither.
func TestCloudControllerManagerNotLeading(t *testing.T) {
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "svc-uid", DeletionTimestamp: ago(20 * time.Minute),
			Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	s := snap()
	s.Targets = append(s.Targets, target(svc, "services", func(t *observed.Target) { t.Service = svc }))
	observed.ControllerManagerLeases.Set(s, map[string]*coordinationv1.Lease{
		"kube-controller-manager":  controllerManagerLease("kube-controller-manager", "cp-1_x", time.Second),
		"cloud-controller-manager": controllerManagerLease("cloud-controller-manager", "cp-2_y", time.Hour),
	})
	it := Diagnose(s).Items[0]
	if it.Causes[0].Code != "ControllerManagerNotLeading" || !strings.Contains(it.Causes[0].Summary, "cloud-controller-manager is not running") ||
		strings.Join(it.Causes[0].About.Finalizers, ",") != "service.kubernetes.io/load-balancer-cleanup" {
		t.Errorf("causes: %v; top: %s", codes(it), it.Causes[0].Summary)
	}
	expectGradedSteps(t, it)

	widget := target(terminatingNamespace(time.Hour), "widgets.example.com", func(t *observed.Target) {})
	widget.Object.SetFinalizers([]string{"example.com/cleanup"})
	if Needs(widget).Has(ControllerManagerEvidence) {
		t.Error("an object held by a third-party finalizer asks for the controller managers' leases")
	}
}
