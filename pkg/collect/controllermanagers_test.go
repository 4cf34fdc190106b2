package collect

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// The controller managers' leases are read once a run, and only when a
// target is held by a finalizer of theirs: one that exists is kept, one
// that does not is recorded as none, and a Forbidden read is a skipped check
// on the targets that needed it, the slot left unread.
func TestControllerManagerLeasesAreReadWhenNeeded(t *testing.T) {
	claim := func(name string, finalizer string) *observed.Target {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("PersistentVolumeClaim")
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetFinalizers([]string{finalizer})
		deleted := metav1.Now()
		u.SetDeletionTimestamp(&deleted)
		return &observed.Target{Ref: observed.ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: "shop", Name: name}, Object: u}
	}
	holder := "cp-1_4b0f2c"
	kcm := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager", Labels: map[string]string{"x": "y"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	read := func(forbid bool, targets ...*observed.Target) (*observed.Snapshot, *kubefake.Clientset) {
		s := observed.New(time.Now())
		s.Targets = targets
		fake := kubefake.NewClientset([]runtime.Object{kcm}...)
		if forbid {
			fake.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "kube-controller-manager", nil)
			})
		}
		(&Collector{Clients: &kube.Clients{Typed: fake}}).readControllerManagers(context.Background(), s)
		return s, fake
	}

	s, fake := read(false, claim("data", "kubernetes.io/pvc-protection"), claim("logs", "kubernetes.io/pvc-protection"))
	if n := len(fake.Actions()); n != len(observed.ControllerManagers) {
		t.Errorf("%d requests, want one get per controller manager", n)
	}
	leases, ok := observed.ControllerManagerLeases.Get(s)
	if !ok || leases["kube-controller-manager"] == nil || *leases["kube-controller-manager"].Spec.HolderIdentity != holder || leases["kube-controller-manager"].Labels != nil {
		t.Errorf("kube-controller-manager's lease: %+v (read %t); want its spec, not its labels", leases["kube-controller-manager"], ok)
	}
	if l, found := leases["cloud-controller-manager"]; !found || l != nil {
		t.Errorf("cloud-controller-manager has no lease: want a nil entry (read, none), got %v (present %t)", l, found)
	}

	if s, fake = read(false, claim("data", "example.com/backup")); len(fake.Actions()) != 0 {
		t.Errorf("%d requests for a target no controller manager holds", len(fake.Actions()))
	} else if _, ok := observed.ControllerManagerLeases.Get(s); ok {
		t.Error("the leases are recorded as read, with no read")
	}

	s, _ = read(true, claim("data", "kubernetes.io/pvc-protection"))
	if _, ok := observed.ControllerManagerLeases.Get(s); ok || len(s.Targets[0].Skipped) != 1 || s.Targets[0].Skipped[0].Check != "get leases/kube-controller-manager in kube-system" {
		t.Errorf("after a Forbidden read: read %t, skipped %+v", ok, s.Targets[0].Skipped)
	}
}
