package collect

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A claim held by the snapshotter's source protection: the VolumeSnapshots
// of its namespace are read (one list), reduced to what the rule reads; a
// cluster that does not serve the snapshot API has none. A snapshot held by
// the restore protection: the claims of its namespace are read.
func TestReadSnapshotSources(t *testing.T) {
	held := func(apiVersion, kind, resource, name, finalizer string) *observed.Target {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		u.SetFinalizers([]string{finalizer})
		return &observed.Target{Object: u, Ref: observed.ObjectRef{APIVersion: apiVersion, Kind: kind, Resource: resource, Namespace: "shop", Name: name}}
	}
	vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "nightly", "namespace": "shop", "uid": "uid-nightly"},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "fast"},
		"status":   map[string]any{"readyToUse": false, "error": map[string]any{"message": "class not found"}}}}
	listKinds := map[schema.GroupVersionResource]string{volumeSnapshots: "VolumeSnapshotList"}
	for _, served := range []bool{true, false} {
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, vs)
		if !served {
			dyn.PrependReactor("list", "volumesnapshots", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(volumeSnapshots.GroupResource(), "")
			})
		}
		typed := kubefake.NewClientset(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restore-1", Namespace: "shop", UID: "uid-restore-1"}},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, InvolvedObject: corev1.ObjectReference{UID: "uid-nightly"}, Type: "Warning", Reason: "SnapshotCreationFailed"},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "shop"}, InvolvedObject: corev1.ObjectReference{UID: "uid-restore-1"}, Type: "Warning", Reason: "ProvisioningFailed"},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e3", Namespace: "shop"}, InvolvedObject: corev1.ObjectReference{UID: "uid-unrelated"}, Type: "Warning", Reason: "BackOff"})
		s := observed.New(time.Now())
		s.Targets = []*observed.Target{
			held("v1", "PersistentVolumeClaim", "persistentvolumeclaims", "data", "snapshot.storage.kubernetes.io/pvc-as-source-protection"),
			held("snapshot.storage.k8s.io/v1", "VolumeSnapshot", "volumesnapshots.snapshot.storage.k8s.io", "old", "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"),
		}
		c := &Collector{Clients: &kube.Clients{Typed: typed, Dynamic: dyn}}
		c.readSnapshotSources(context.Background(), s)
		got, ok := s.VolumeSnapshots["shop"]
		switch {
		case !ok:
			t.Errorf("served %v: snapshots not recorded as read", served)
		case served && (len(got) != 1 || got[0].SourceClaim != "data" || got[0].Class != "fast" || got[0].Error != "class not found" || got[0].ReadyToUse == nil || *got[0].ReadyToUse):
			t.Errorf("snapshots %+v", got)
		case !served && len(got) != 0:
			t.Errorf("not served: %+v", got)
		}
		if claims := s.NamespaceClaims["shop"]; len(claims) != 1 || claims[0].Name != "restore-1" {
			t.Errorf("claims %+v", claims)
		}
		// What is said about them: one event list for the namespace, kept
		// for the snapshots and claims read only.
		if got := s.BlockerEvents["uid-restore-1"]; len(got) != 1 || got[0].Reason != "ProvisioningFailed" || len(s.BlockerEvents["uid-unrelated"]) != 0 {
			t.Errorf("served %v: blocker events %v", served, s.BlockerEvents)
		}
		if got := s.BlockerEvents["uid-nightly"]; served != (len(got) == 1) {
			t.Errorf("served %v: the snapshot's events %v", served, got)
		}
		if len(c.Skips()) != 0 {
			t.Errorf("skips %v", c.Skips())
		}
	}
}
