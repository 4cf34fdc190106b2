package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const vmiFinalizer = "kubevirt.io/foregroundDeleteVirtualMachine"

// vmi is a virtual machine instance held 10 minutes by its finalizer, on node.
func vmi(node string) *unstructured.Unstructured {
	u := heldWith(vmiFinalizer)
	u.SetUID("vmi-uid")
	_ = unstructured.SetNestedField(u.Object, node, "status", "nodeName")
	return u
}

var virtController = &observed.Controllers{Workloads: []observed.Workload{
	{Kind: "Deployment", Namespace: "kubevirt", Name: "virt-controller", Desired: 2, Ready: 2},
	{Kind: "daemonset", Namespace: "kubevirt", Name: "virt-handler", Desired: 3, Ready: 2}}}

// A held object that names a node (any field shape) is judged by that node:
// gone or not reporting, nothing there finishes the cleanup, and a node
// agent the finalizer's owner runs there cannot act.
func TestTheNodeAHeldObjectNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obj      *unstructured.Unstructured
		nodes    []runtime.Object
		missing  bool
		code     string
		summary  string
		evidence string
	}{
		{"status.nodeName of a node gone", vmi("node-gone"), nil, true, "NodeNotFound",
			"status.nodeName names node node-gone, which no longer exists: the cleanup " + vmiFinalizer + " waits for on that node cannot run",
			"DaemonSet kubevirt/virt-handler looks like the owner of " + vmiFinalizer + ": it runs one pod per node, and its pod on node node-gone cannot act (the node is gone)"},
		{"spec.ownerNodeID of a node not reporting", func() *unstructured.Unstructured {
			u := heldWith(vmiFinalizer)
			_ = unstructured.SetNestedField(u.Object, "node-1", "spec", "ownerNodeID")
			return u
		}(), []runtime.Object{node("node-1", corev1.ConditionUnknown), lease("node-1", 10*time.Minute)}, false, "NodeUnreachable",
			"spec.ownerNodeID names node node-1, which stopped reporting (lease last renewed 10m ago)", "lease kube-node-lease/node-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(append([]runtime.Object{tc.obj}, tc.nodes...)...)
			s.Controllers = virtController
			if tc.missing {
				s.MissingNodes["node-gone"] = true
			}
			it := Diagnose(s).Items[0]
			c := it.Causes[0]
			if c.Code != tc.code || c.Severity != report.Critical || !strings.Contains(c.Summary, tc.summary) || !it.Stuck {
				t.Errorf("%v: %s %s: %s", codes(it), c.Code, c.Severity, c.Summary)
			}
			if !hasLine(c.Evidence, tc.evidence) {
				t.Errorf("evidence %q lacks %q", c.Evidence, tc.evidence)
			}
			if len(c.About.Finalizers) != 1 || c.About.Finalizers[0] != vmiFinalizer {
				t.Errorf("about %+v", c.About)
			}
			expectGradedSteps(t, it)
		})
	}
	t.Run("a node NotReady while its kubelet reports", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionFalse), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		it := Diagnose(s).Items[0]
		if c := it.Causes[0]; c.Code != "NodeNotReady" || c.Severity != report.Warning || !strings.Contains(c.Summary, "status.nodeName names node node-1, which is NotReady") {
			t.Errorf("%v: %s %s", codes(it), c.Severity, c.Summary)
		}
		expectGradedSteps(t, it)
	})
	t.Run("a live node is no cause", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		if got := codes(Diagnose(s).Items[0]); len(got) != 1 || got[0] != "FinalizerPending" {
			t.Errorf("codes %v", got)
		}
	})
}

// An object whose controller waits for its own dependents (a virtual
// machine's launcher pod) is blocked by them: a dependent stuck on a dead
// node is the root cause, nested; dependents going normally are progress.
func TestDependentsBeingDeletedHoldTheirOwner(t *testing.T) {
	launcher := func(requested time.Duration, grace int64) *observed.Target {
		p := terminatingPod(requested, grace)
		p.Name = "virt-launcher-db-x7k"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "w1", UID: "vmi-uid"}}
		return target(p, "pods", func(t *observed.Target) { t.Pod = p })
	}
	t.Run("a launcher pod on a dead node", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 10*time.Minute))
		s.Controllers = virtController
		s.Targets[0].Dependents = []*observed.Target{launcher(10*time.Minute, 30)}
		it := Diagnose(s).Items[0]
		c := it.Causes[0]
		if c.Code != "FinalizerPending" && c.Code != "NodeUnreachable" {
			t.Fatalf("codes %v", codes(it))
		}
		fp := it.Causes[slices.Index(codes(it), "FinalizerPending")]
		want := "waits for the object's dependents, being deleted: pod/virt-launcher-db-x7k is stuck: node node-1 stopped reporting"
		if fp.Severity != report.Critical || !strings.Contains(fp.Summary, want) || len(fp.BlockedBy) != 1 || codes(fp.BlockedBy[0])[0] != "NodeUnreachable" {
			t.Errorf("%s: %s; blocked by %d", fp.Severity, fp.Summary, len(fp.BlockedBy))
		}
		if !hasLine(fp.Evidence, "dependent pod/virt-launcher-db-x7k -n shop: ownerReference to Widget/w1, being deleted since") {
			t.Errorf("evidence %q", fp.Evidence)
		}
	})
	t.Run("a launcher pod inside its grace period", func(t *testing.T) {
		u := heldWith(vmiFinalizer)
		u.SetUID("vmi-uid")
		s := snap(u, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		s.Targets[0].Dependents = []*observed.Target{launcher(time.Minute, 180)}
		it := Diagnose(s).Items[0]
		if c := it.Causes[0]; it.Stuck || c.Severity != report.Info || !strings.HasPrefix(c.Summary, "progressing: the object's 1 dependent being deleted is not stuck") {
			t.Errorf("stuck %t: %s %s", it.Stuck, c.Severity, c.Summary)
		}
	})
	t.Run("dependents not being deleted are not blockers", func(t *testing.T) {
		s := snap(vmi("node-1"), node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Controllers = virtController
		d := launcher(time.Minute, 30)
		d.Object.SetDeletionTimestamp(nil)
		s.Targets[0].Dependents = []*observed.Target{d}
		if c := Diagnose(s).Items[0].Causes[0]; len(c.BlockedBy) != 0 || !strings.Contains(c.Summary, "looks healthy") {
			t.Errorf("%s; blocked by %d", c.Summary, len(c.BlockedBy))
		}
	})
}

// What a held object's spec names, and what that names in turn, is followed
// to the first object whose status says it fails: a restore's backup's
// storage location, unavailable with the cloud's credential error.
func TestWhatAHeldObjectDependsOn(t *testing.T) {
	obj := func(apiVersion, kind, name string, spec, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "velero"}, "spec": spec, "status": status}}
		return u
	}
	named := func(u *unstructured.Unstructured, resource string) *observed.Target {
		return &observed.Target{Object: u, Ref: report.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Resource: resource, Namespace: "velero", Name: u.GetName()}}
	}
	restore := heldWith("restores.velero.io/external-resources-finalizer")
	_ = unstructured.SetNestedField(restore.Object, "nightly", "spec", "backupName")
	backup := named(obj("velero.io/v1", "Backup", "nightly", map[string]any{"storageLocation": "default"}, map[string]any{"phase": "Completed"}), "backups.velero.io")
	bsl := named(obj("velero.io/v1", "BackupStorageLocation", "default", map[string]any{"provider": "aws"},
		map[string]any{"phase": "Unavailable", "message": "BackupStorageLocation \"default\" is unavailable: rpc error: code = Unknown desc = NoCredentialProviders"}), "backupstoragelocations.velero.io")
	backup.Named = []*observed.Target{bsl}
	s := snap(restore)
	s.Targets[0].Named = []*observed.Target{backup}
	s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "deployment", Namespace: "velero", Name: "velero", Desired: 1, Ready: 1}}}
	it := Diagnose(s).Items[0]
	c := it.Causes[0]
	want := "depends on backupstoragelocation.velero.io/default (spec.backupName -> backup.velero.io/nightly -> spec.storageLocation), which reports status.message: BackupStorageLocation \"default\" is unavailable: rpc error"
	if c.Code != "FinalizerPending" || c.Severity != report.Critical || !strings.Contains(c.Summary, want) {
		t.Errorf("%s %s: %s\nwant %q", c.Code, c.Severity, c.Summary, want)
	}
	if !hasLine(c.Evidence, "backup.velero.io/nightly spec.storageLocation: backupstoragelocation.velero.io/default") ||
		!hasLine(c.Evidence, "backupstoragelocation.velero.io/default: status.phase: Unavailable") {
		t.Errorf("evidence %q", c.Evidence)
	}
	expectGradedSteps(t, it)

	bsl.Object.Object["status"] = map[string]any{"phase": "Available"}
	if c := Diagnose(s).Items[0].Causes[0]; !strings.Contains(c.Summary, "looks healthy") {
		t.Errorf("with the location available: %s", c.Summary)
	}

	// The location deleted: what the backup names does not exist.
	backup.Named = []*observed.Target{}
	backup.Unfound = []observed.ObjectRef{{APIVersion: "velero.io/v1", Kind: "BackupStorageLocation", Resource: "backupstoragelocations.velero.io", Namespace: "velero", Name: "default"}}
	it = Diagnose(s).Items[0]
	c = it.Causes[0]
	want = "may wait for backupstoragelocation.velero.io/default (spec.backupName -> backup.velero.io/nightly -> spec.storageLocation), which does not exist"
	if c.Severity != report.Warning || !strings.Contains(c.Summary, want) || !hasLine(c.Evidence, "backup.velero.io/nightly spec.storageLocation: backupstoragelocation.velero.io/default: not found") {
		t.Errorf("%s: %s\nwant %q; evidence %q", c.Severity, c.Summary, want, c.Evidence)
	}
	expectGradedSteps(t, it)
}

// A Cluster API cluster waits for its infrastructure cluster, which its own
// controller leaves alone while it is paused: the cluster's report names
// the paused object one hop away and how to unpause it, whatever the
// operator (the marker's shape, as for the held object itself).
func TestAPausedObjectItDependsOn(t *testing.T) {
	cluster := heldWith("cluster.cluster.x-k8s.io")
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta1")
	cluster.SetKind("Cluster")
	cluster.SetName("prod")
	infra := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
		"metadata": map[string]any{"name": "prod", "namespace": "shop", "deletionTimestamp": "2026-01-01T00:00:00Z",
			"finalizers": []any{"awscluster.infrastructure.cluster.x-k8s.io"}, "annotations": map[string]any{"cluster.x-k8s.io/paused": ""}},
		"status": map[string]any{"ready": true}}}
	_ = unstructured.SetNestedMap(cluster.Object, map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster", "name": "prod"}, "spec", "infrastructureRef")
	s := snap(cluster)
	ref := report.ObjectRef{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "AWSCluster", Resource: "awsclusters.infrastructure.cluster.x-k8s.io", Namespace: "shop", Name: "prod"}
	s.Targets[0].Named = []*observed.Target{{Object: infra, Ref: ref}}
	s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "deployment", Namespace: "capi-system", Name: "capi-controller-manager", Desired: 1, Ready: 1}}}
	it := Diagnose(s).Items[0]
	c := it.Causes[0]
	want := "the controller that removes cluster.cluster.x-k8s.io depends on awscluster.infrastructure.cluster.x-k8s.io/prod (spec.infrastructureRef), which is paused (metadata.annotations[cluster.x-k8s.io/paused]): its controller leaves it alone, its deletion included"
	if c.Code != "FinalizerPending" || c.Severity != report.Critical || c.Summary != want {
		t.Errorf("%s %s: %s\nwant %q", c.Code, c.Severity, c.Summary, want)
	}
	if got := stepIDs(c); !slices.Equal(got[:2], []string{"describe-dependency", "unpause-dependency"}) ||
		c.Remediation[1].Command != "kubectl annotate awsclusters.infrastructure.cluster.x-k8s.io prod cluster.x-k8s.io/paused- -n shop" ||
		!strings.HasPrefix(c.Remediation[1].Action, "Unpause awscluster.infrastructure.cluster.x-k8s.io/prod (metadata.annotations[cluster.x-k8s.io/paused])") {
		t.Errorf("steps %+v", c.Remediation)
	}
	if !hasLine(c.Evidence, "awscluster.infrastructure.cluster.x-k8s.io/prod: metadata.annotations[cluster.x-k8s.io/paused]: ") {
		t.Errorf("evidence %q", c.Evidence)
	}
	expectGradedSteps(t, it)
	// Unpaused, it is no cause: the controller looks healthy, as before.
	infra.SetAnnotations(nil)
	if c := Diagnose(s).Items[0].Causes[0]; strings.Contains(c.Summary, "paused") {
		t.Errorf("unpaused: %s", c.Summary)
	}
}

// What of its kin still names a held object (an event source naming its
// bus) is what its controller may wait for.
func TestWhatStillNamesAHeldObject(t *testing.T) {
	bus := heldWith("eventbus-controller")
	bus.SetAPIVersion("argoproj.io/v1alpha1")
	bus.SetKind("EventBus")
	bus.SetName("default")
	source := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "EventSource",
		"metadata": map[string]any{"name": "webhook", "namespace": "shop"}, "spec": map[string]any{"eventBusName": "default"}}}
	s := snap(bus)
	s.Targets[0].NamedBy = []*observed.Target{{Object: source, Ref: report.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "EventSource", Resource: "eventsources.argoproj.io", Namespace: "shop", Name: "webhook"}}}
	s.Controllers = &observed.Controllers{Workloads: []observed.Workload{{Kind: "deployment", Namespace: "argo-events", Name: "eventbus-controller", Desired: 1, Ready: 1}}}
	it := Diagnose(s).Items[0]
	c := it.Causes[0]
	want := "may wait for the 1 object that still names the object: eventsource.argoproj.io/webhook (spec.eventBusName)"
	if c.Severity != report.Critical || !strings.Contains(c.Summary, want) || !hasLine(c.Evidence, "named by eventsource.argoproj.io/webhook -n shop: spec.eventBusName: default (not being deleted)") {
		t.Errorf("%s: %s; evidence %q", c.Severity, c.Summary, c.Evidence)
	}
	expectGradedSteps(t, it)
	// A namer being deleted itself is going too, and may be waiting for this
	// one (a cluster for its infrastructure): quoted, never the cause.
	now := metav1.Now()
	source.SetDeletionTimestamp(&now)
	c = Diagnose(s).Items[0].Causes[0]
	if strings.Contains(c.Summary, "still names") || !hasLine(c.Evidence, "named by eventsource.argoproj.io/webhook -n shop: spec.eventBusName: default (being deleted") {
		t.Errorf("a namer being deleted: %s; evidence %q", c.Summary, c.Evidence)
	}
}
