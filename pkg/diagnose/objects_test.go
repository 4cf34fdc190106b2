package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// heldObject is a generic target: deleted `requested` ago, with finalizers.
func heldObject(kind, resource, name string, requested time.Duration, finalizers ...string) *observed.Target {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace("shop")
	u.SetName(name)
	u.SetUID(apitypes.UID("uid-" + name))
	if requested > 0 {
		u.SetDeletionTimestamp(ago(requested))
		u.SetDeletionGracePeriodSeconds(int64p(0))
	}
	u.SetFinalizers(finalizers)
	return &observed.Target{Object: u, Ref: report.ObjectRef{APIVersion: "v1", Kind: kind, Resource: resource, Namespace: "shop", Name: name, UID: "uid-" + name}}
}

func snapOf(targets ...*observed.Target) *observed.Snapshot {
	s := observed.New(now)
	s.Targets = targets
	s.Controllers = &observed.Controllers{}
	return s
}

func TestForegroundDeletion(t *testing.T) {
	owner := heldObject("ConfigMap", "configmaps", "owner", 10*time.Minute, "foregroundDeletion")
	dep := heldObject("ConfigMap", "configmaps", "dep", 9*time.Minute, "acme.io/keep")
	yes := true
	dep.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner", BlockOwnerDeletion: &yes}})
	owner.Dependents = []*observed.Target{dep}
	it := Diagnose(snapOf(owner)).Items[0]
	expectCauses(t, it, []string{"ForegroundDeletionBlocked"}, report.Critical, "dependent configmap/dep -n shop: ownerReference to ConfigMap/owner, blockOwnerDeletion true, being deleted since")
	top := it.Causes[0]
	if !strings.Contains(top.Summary, "1 dependent with blockOwnerDeletion still exists: configmap/dep is stuck: no controller that could remove acme.io/keep") {
		t.Errorf("summary: %q", top.Summary)
	}
	if len(top.BlockedBy) != 1 || top.BlockedBy[0].Causes[0].Code != "FinalizerPending" {
		t.Errorf("nested: %+v", top.BlockedBy)
	}

	// Without blockOwnerDeletion, nothing holds the owner: the GC should finish.
	dep.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"}})
	it = Diagnose(snapOf(owner)).Items[0]
	expectCauses(t, it, []string{"ForegroundDeletionBlocked"}, report.Warning, "live scan: 1 dependent, without blockOwnerDeletion")

	// An unavailable aggregated API is what may hold the garbage collector back: named, quoted.
	withAPI := snapOf(owner)
	withAPI.APIServices = []observed.APIService{{Name: "v1beta1.metrics.k8s.io", Group: "metrics.k8s.io", Version: "v1beta1", Service: "kube-system/metrics-server",
		Available: "False", Reason: "MissingEndpoints", Message: "endpoints for service/metrics-server in \"kube-system\" have no addresses"}}
	it = Diagnose(withAPI).Items[0]
	expectCauses(t, it, []string{"ForegroundDeletionBlocked"}, report.Warning, "apiservice v1beta1.metrics.k8s.io: condition Available=False reason MissingEndpoints")
	if !strings.Contains(it.Causes[0].Summary, "its discovery fails for metrics.k8s.io/v1beta1") {
		t.Errorf("summary: %q", it.Causes[0].Summary)
	}

	// Dependents not read: the generic answer.
	owner.Dependents = nil
	expectCauses(t, Diagnose(snapOf(owner)).Items[0], []string{"FinalizerPending"}, report.Warning, "")
}

func TestClaimInUse(t *testing.T) {
	claim := heldObject("PersistentVolumeClaim", "persistentvolumeclaims", "data", 10*time.Minute, "kubernetes.io/pvc-protection")
	running := snap(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop"},
		Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}).Targets[0]
	claim.ClaimUsers = []*observed.Target{running}
	it := Diagnose(snapOf(claim)).Items[0]
	expectCauses(t, it, []string{"PVCInUse"}, report.Warning, "pod shop/db-0: phase Running on node \"node-1\", not being deleted")

	// A user stuck terminating on a dead node: its diagnosis is nested and sets the severity.
	stuck := snap(terminatingPod(10*time.Minute, 30)).Targets[0]
	claim.ClaimUsers = []*observed.Target{stuck}
	s := snapOf(claim)
	s.Nodes["node-1"], s.Leases["node-1"] = node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 20*time.Minute)
	it = Diagnose(s).Items[0]
	expectCauses(t, it, []string{"PVCInUse"}, report.Critical, "")
	if top := it.Causes[0]; len(top.BlockedBy) != 1 || top.BlockedBy[0].Causes[0].Code != "NodeUnreachable" || !strings.Contains(top.Summary, "pod/web-0 is stuck") {
		t.Errorf("nested pod: %q %+v", top.Summary, top.BlockedBy)
	}
	last := it.Causes[0].Remediation[len(it.Causes[0].Remediation)-1]
	if !strings.Contains(last.Risk, "data loss") {
		t.Errorf("last step: %+v", last)
	}

	// Its only user inside its grace period, its node alive: the claim is
	// progressing (a namespace deleted on a release without ordered deletion).
	inGrace := snap(terminatingPod(time.Minute, 300)).Targets[0]
	claim.ClaimUsers = []*observed.Target{inGrace}
	s = snapOf(claim)
	s.Nodes["node-1"], s.Leases["node-1"] = node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second)
	it = Diagnose(s).Items[0]
	expectCauses(t, it, []string{"PVCInUse"}, report.Info, "")
	if it.Stuck || !strings.HasPrefix(it.Causes[0].Summary, "progressing: the 1 pod that uses the claim is being deleted and is not stuck") {
		t.Errorf("stuck %t: %q", it.Stuck, it.Causes[0].Summary)
	}
}

func TestVolumeBoundAndDetach(t *testing.T) {
	pv := heldObject("PersistentVolume", "persistentvolumes", "pv-1", 10*time.Minute, "kubernetes.io/pv-protection", "external-attacher/csi.example.com")
	pv.Volume = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec:   corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	pv.Attachments = []storagev1.VolumeAttachment{{ObjectMeta: metav1.ObjectMeta{Name: "csi-123"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1"},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, DetachError: &storagev1.VolumeError{Time: *ago(time.Minute), Message: "disk is busy"}}}}
	it := Diagnose(snapOf(pv)).Items[0]
	expectCauses(t, it, []string{"VolumeDetachFailed", "PVBound"}, report.Critical, "status.detachError at")
	if !strings.Contains(it.Causes[0].Summary, "csi-123 from node node-1: disk is busy") || !strings.Contains(it.Causes[1].Summary, "Bound to claim shop/data") {
		t.Errorf("summaries: %q / %q", it.Causes[0].Summary, it.Causes[1].Summary)
	}

	// Still attached, no error reported: the attacher may not run. A Bound
	// volume whose claim is not known: find it first.
	pv.Attachments[0].Status.DetachError = nil
	pv.Volume.Spec.ClaimRef = nil
	it = Diagnose(snapOf(pv)).Items[0]
	expectCauses(t, it, []string{"VolumeDetachFailed", "PVBound"}, report.Warning, "status.attached true")
	if ids := stepIDs(it.Causes[0]); !slices.Equal(ids, []string{"read-attachment", "check-attacher", "remove-finalizer"}) {
		t.Errorf("the attacher's steps: %v", ids)
	}
	if ids := stepIDs(it.Causes[1]); ids[0] != "find-claim" {
		t.Errorf("the bound volume's steps: %v", ids)
	}

	pv.Volume.Status.Phase = corev1.VolumeReleased
	pv.Attachments[0].Status = storagev1.VolumeAttachmentStatus{}
	expectCauses(t, Diagnose(snapOf(pv)).Items[0], []string{"FinalizerPending"}, report.Warning, "")
}

// stepIDs are the ids of a cause's remediation steps, in order.
func stepIDs(c report.Cause) []string {
	var out []string
	for _, s := range c.Remediation {
		out = append(out, s.ID)
	}
	return out
}

func TestLoadBalancerCleanup(t *testing.T) {
	svc := heldObject("Service", "services", "web", 10*time.Minute, "service.kubernetes.io/load-balancer-cleanup")
	svc.Service = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	expectCauses(t, Diagnose(snapOf(svc)).Items[0], []string{"LoadBalancerCleanupPending"}, report.Warning, "no SyncLoadBalancerFailed or DeleteLoadBalancerFailed event seen")

	s := snapOf(svc)
	s.Events[svc.Object.GetUID()] = []corev1.Event{{Reason: "DeleteLoadBalancerFailed", Type: "Warning", Message: "Error deleting load balancer: quota exceeded", LastTimestamp: *ago(time.Minute)}}
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"LoadBalancerCleanupPending"}, report.Critical, "event Warning DeleteLoadBalancerFailed")
	if !strings.Contains(it.Causes[0].Summary, "quota exceeded") {
		t.Errorf("summary: %q", it.Causes[0].Summary)
	}
	// With its finalizer on, the service controller records the failure as
	// SyncLoadBalancerFailed (the catalogue's failure events): the latest one speaks.
	s.Events[svc.Object.GetUID()] = append(s.Events[svc.Object.GetUID()], corev1.Event{Reason: "SyncLoadBalancerFailed", Type: "Warning",
		Message: "Error syncing load balancer: failed to delete load balancer: AccessDenied", LastTimestamp: *ago(10 * time.Second)})
	if it := Diagnose(s).Items[0]; it.Severity != report.Critical || !strings.Contains(it.Causes[0].Summary, "AccessDenied") {
		t.Errorf("SyncLoadBalancerFailed: %s %q", it.Severity, it.Causes[0].Summary)
	}
}

// A controller named unlike its finalizer is found by the workloads its
// catalogue row names: Cluster API's machine finalizer and capi-controller-manager.
func TestOwnerFoundByTheCataloguesWorkloads(t *testing.T) {
	ctl := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "capi-system", Name: "capi-controller-manager", Desired: 1, Ready: 1}}}
	if state, _ := ownerLiveness(ctl, "cluster.cluster.x-k8s.io", nil); state != ownerHealthy {
		t.Errorf("cluster.cluster.x-k8s.io with capi-controller-manager ready: state %d, want healthy", state)
	}
	ctl.Workloads[0].Ready = 0
	if state, _ := ownerLiveness(ctl, "cluster.cluster.x-k8s.io", nil); state != ownerDown {
		t.Errorf("with no ready replica: state %d, want down", state)
	}
}

func TestWebhookRefusingFinalizerRemoval(t *testing.T) {
	w := heldObject("ConfigMap", "configmaps", "w1", 10*time.Minute, "example.com/cleanup")
	s := snapOf(w)
	s.Admission = observed.NewAdmission()
	hook := deletePodsWebhook(admissionregistrationv1.Fail, admissionregistrationv1.Update)
	hook.Webhooks[0].Rules[0].Resources = []string{"configmaps"}
	s.Admission.Validating = append(s.Admission.Validating, hook)
	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 0
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"AdmissionWebhookDenied", "FinalizerPending"}, report.Critical, "matches UPDATE configmaps (the patch that removes a finalizer)")

	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 2 // up: it may well allow the patch
	expectCauses(t, Diagnose(s).Items[0], []string{"FinalizerPending"}, report.Warning, "")
}

func TestOrphan(t *testing.T) {
	owner := heldObject("ConfigMap", "configmaps", "owner", 10*time.Minute, "orphan")
	dep := heldObject("ConfigMap", "configmaps", "dep", 0)
	owner.Dependents = []*observed.Target{dep}
	it := Diagnose(snapOf(owner)).Items[0]
	expectCauses(t, it, []string{"FinalizerPending"}, report.Warning, "live scan: 1 dependent still names ConfigMap/owner")
	if !strings.Contains(it.Causes[0].Summary, "still has to orphan 1 dependent: configmap/dep -n shop") {
		t.Errorf("summary: %q", it.Causes[0].Summary)
	}
}

// Class b: foreground deletion followed to the root cause, through a
// dependent that itself waits in foreground deletion on its own dependents
// (Deployment -> ReplicaSet -> Pod on a dead node).
func TestForegroundDeletionChain(t *testing.T) {
	yes := true
	owns := func(d *observed.Target, kind, name string) {
		d.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: apitypes.UID("uid-" + name), BlockOwnerDeletion: &yes}})
	}
	deploy := heldObject("Deployment", "deployments.apps", "web", 10*time.Minute, "foregroundDeletion")
	rs := heldObject("ReplicaSet", "replicasets.apps", "web-abc", 10*time.Minute, "foregroundDeletion")
	owns(rs, "Deployment", "web")
	pod := terminatingPod(10*time.Minute, 30)
	pod.Name, pod.UID, pod.Spec.NodeName = "web-abc-1", "uid-web-abc-1", "node-dead"
	pt := target(pod, "pods", func(t *observed.Target) { t.Pod = pod })
	owns(pt, "ReplicaSet", "web-abc")
	deploy.Dependents = []*observed.Target{rs}
	rs.Dependents = []*observed.Target{pt}

	s := snapOf(deploy)
	s.Nodes["node-dead"] = node("node-dead", corev1.ConditionUnknown, "node.kubernetes.io/unreachable")
	s.Leases["node-dead"] = lease("node-dead", 10*time.Minute)
	it := Diagnose(s).Items[0]
	expectCauses(t, it, []string{"ForegroundDeletionBlocked"}, report.Critical, "chain of objects waiting in foreground deletion: deployment/web -> replicaset/web-abc -> pod/web-abc-1")
	top := it.Causes[0]
	if !strings.Contains(top.Summary, "replicaset/web-abc waits on pod/web-abc-1; pod/web-abc-1 is stuck: node node-dead stopped reporting") {
		t.Errorf("summary: %q", top.Summary)
	}
	rsItem := top.BlockedBy[0]
	if rsItem.Causes[0].Code != "ForegroundDeletionBlocked" || rsItem.Causes[0].BlockedBy[0].Causes[0].Code != "NodeUnreachable" {
		t.Errorf("nested chain: %v -> %v", codes(rsItem), codes(rsItem.Causes[0].BlockedBy[0]))
	}

	// The dependents of the ReplicaSet could not be read: the chain stops
	// there, honestly, with the generic answer for its finalizer.
	rs.Dependents = nil
	it = Diagnose(s).Items[0]
	if got := it.Causes[0].BlockedBy[0].Causes[0].Code; got != "FinalizerPending" {
		t.Errorf("unread dependents: nested %s, want FinalizerPending", got)
	}
}

// A released CSI volume whose provisioner has not deleted the backend
// volume: a VolumeFailedDelete event makes it critical with the backend's
// message; without one, a warning; a Bound volume waits for its claim first.
func TestVolumeDelete(t *testing.T) {
	pv := heldObject("PersistentVolume", "persistentvolumes", "pv-2", 10*time.Minute, "external-provisioner.volume.kubernetes.io/finalizer")
	pv.Volume = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-2"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.example.com", VolumeHandle: "vol-123"}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
	it := Diagnose(snapOf(pv)).Items[0]
	expectCauses(t, it, []string{"VolumeDeleteFailed"}, report.Warning, "no VolumeFailedDelete event seen")
	if !strings.Contains(it.Causes[0].Summary, "CSI external-provisioner of driver ebs.csi.example.com may not be running") {
		t.Errorf("summary: %q", it.Causes[0].Summary)
	}

	s := snapOf(pv)
	s.Events[pv.Object.GetUID()] = []corev1.Event{{Reason: "VolumeFailedDelete", Type: "Warning", Message: "rpc error: code = FailedPrecondition desc = volume vol-123 is attached", LastTimestamp: *ago(time.Minute)}}
	it = Diagnose(s).Items[0]
	expectCauses(t, it, []string{"VolumeDeleteFailed"}, report.Critical, "event Warning VolumeFailedDelete")
	if !strings.Contains(it.Causes[0].Summary, "fails to delete the backend volume: rpc error") {
		t.Errorf("summary: %q", it.Causes[0].Summary)
	}
	last := it.Causes[0].Remediation[len(it.Causes[0].Remediation)-1]
	if last.RiskLevel != report.RiskHigh || !strings.Contains(last.Command, `"path":"/metadata/finalizers/0"`) {
		t.Errorf("last step: %+v", last)
	}

	pv.Volume.Status.Phase = corev1.VolumeBound
	expectCauses(t, Diagnose(snapOf(pv)).Items[0], []string{"FinalizerPending"}, report.Warning, "")
}

// A foreground chain is judged by its leaves: while the pods at its end are
// inside their grace period the owner is progressing (not stuck); once one
// is stuck, so is the owner; a dependent not being deleted yet is a warning.
func TestForegroundChainJudgedByItsLeaves(t *testing.T) {
	yes := true
	owns := func(d *observed.Target, kind, name string) {
		d.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: apitypes.UID("uid-" + name), BlockOwnerDeletion: &yes}})
	}
	chain := func(pods ...*corev1.Pod) *observed.Snapshot {
		deploy := heldObject("Deployment", "deployments.apps", "web", 2*time.Minute, "foregroundDeletion")
		rs := heldObject("ReplicaSet", "replicasets.apps", "web-abc", 2*time.Minute, "foregroundDeletion")
		owns(rs, "Deployment", "web")
		deploy.Dependents, rs.Dependents = []*observed.Target{rs}, []*observed.Target{}
		for _, p := range pods {
			pt := target(p, "pods", func(t *observed.Target) { t.Pod = p })
			owns(pt, "ReplicaSet", "web-abc")
			rs.Dependents = append(rs.Dependents, pt)
		}
		s := snapOf(deploy)
		s.Nodes["node-1"] = node("node-1", corev1.ConditionTrue)
		s.Leases["node-1"] = lease("node-1", 5*time.Second)
		return s
	}
	inGrace := func(name string) *corev1.Pod {
		p := terminatingPod(30*time.Second, 600) // 9m30s of grace left
		p.Name, p.UID, p.Spec.NodeName = name, apitypes.UID("uid-"+name), "node-1"
		return p
	}
	it := Diagnose(chain(inGrace("web-abc-1"), inGrace("web-abc-2"))).Items[0]
	if it.Stuck || it.Severity != report.Info || !strings.HasPrefix(it.Causes[0].Summary, "progressing: the 1 dependent with blockOwnerDeletion is being deleted and is not stuck") {
		t.Errorf("pods in their grace period: stuck %v, %s: %s", it.Stuck, it.Severity, it.Causes[0].Summary)
	}

	stuck := terminatingPod(10*time.Minute, 30)
	stuck.Name, stuck.UID, stuck.Spec.NodeName = "web-abc-3", "uid-web-abc-3", "node-dead"
	s := chain(inGrace("web-abc-1"), stuck)
	s.Nodes["node-dead"] = node("node-dead", corev1.ConditionUnknown, "node.kubernetes.io/unreachable")
	s.Leases["node-dead"] = lease("node-dead", 10*time.Minute)
	if it := Diagnose(s).Items[0]; !it.Stuck || it.Severity != report.Critical || !strings.Contains(it.Causes[0].Summary, "is stuck") {
		t.Errorf("one stuck leaf: stuck %v, %s: %s", it.Stuck, it.Severity, it.Causes[0].Summary)
	}

	notDeleted := inGrace("web-abc-4")
	notDeleted.DeletionTimestamp = nil
	if it := Diagnose(chain(notDeleted)).Items[0]; !it.Stuck || it.Severity != report.Warning {
		t.Errorf("a dependent not deleted yet: stuck %v, %s: %s", it.Stuck, it.Severity, it.Causes[0].Summary)
	}
}

// Every blocking object is nested, however many: JSON carries them all.
func TestEveryBlockerIsNested(t *testing.T) {
	owner := heldObject("ConfigMap", "configmaps", "owner", 10*time.Minute, "foregroundDeletion")
	yes := true
	for i := range 12 {
		dep := heldObject("ConfigMap", "configmaps", fmt.Sprintf("dep-%d", i), 9*time.Minute, "acme.io/keep")
		dep.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner", BlockOwnerDeletion: &yes}})
		owner.Dependents = append(owner.Dependents, dep)
	}
	if got := len(Diagnose(snapOf(owner)).Items[0].Causes[0].BlockedBy); got != 12 {
		t.Errorf("%d blocking objects nested, want all 12", got)
	}
}

// Past the deepest nesting, the object left undiagnosed is named as the
// report heads it (kind/name), not by its resource.
func TestNestedTooDeepNamesTheObject(t *testing.T) {
	cm := heldObject("ConfigMap", "configmaps", "deep", 10*time.Minute, "acme.io/keep")
	it := nested(snapOf(cm), cm, timing{depth: observed.MaxDepth})
	if len(it.Causes) != 0 || len(it.Skipped) != 1 || it.Skipped[0].Check != "diagnosis of configmap/deep" ||
		it.Skipped[0].Detail != fmt.Sprintf("nested deeper than %d levels", observed.MaxDepth) {
		t.Errorf("%+v", it)
	}
}

// Issue 35: where the collector stopped following a chain of owners (the
// depth bound), the object reached says the chain goes on, and its first
// step diagnoses from there.
func TestForegroundChainCutSaysSo(t *testing.T) {
	owner := heldObject("ConfigMap", "configmaps", "link-8", 10*time.Minute, "foregroundDeletion")
	s := snapOf(owner)
	owner.Skipped = []report.Skip{{Check: "dependents of configmaps/link-8", Reason: observed.SkipDepth, Detail: "the chain of owners waiting on their dependents is deeper than 8 levels: not followed from here"}}
	it := Diagnose(s).Items[0]
	top := it.Causes[0]
	if top.Code != "ForegroundDeletionBlocked" || !strings.Contains(top.Summary, "deeper than 8 levels") ||
		!strings.Contains(top.Remediation[0].Command, "terminating why") || !slices.Contains(top.Evidence, "not read: dependents of configmaps/link-8 (DepthLimit)") {
		t.Errorf("%+v", top)
	}
}

// A Service that is no LoadBalancer keeps the cloud's cleanup finalizer
// only where no service controller runs: it removes it at once, deleted or
// not (needsCleanup). A Helm chart that writes the finalizer on a ClusterIP
// Service (aqua-helm's envoy Service) leaves it for ever: critical, before
// the delete as after it; a Service written seconds ago may yet be
// cleaned.
func TestLoadBalancerCleanupWithoutAServiceController(t *testing.T) {
	build := func(requested, age time.Duration, typ corev1.ServiceType) *observed.Snapshot {
		svc := heldObject("Service", "services", "envoy", requested, "service.kubernetes.io/load-balancer-cleanup")
		svc.Object.SetCreationTimestamp(*ago(age))
		svc.Service = &corev1.Service{Spec: corev1.ServiceSpec{Type: typ}}
		return snapOf(svc)
	}
	it := Diagnose(build(10*time.Minute, time.Hour, corev1.ServiceTypeClusterIP)).Items[0]
	expectCauses(t, it, []string{"LoadBalancerCleanupPending"}, report.Critical, "no SyncLoadBalancerFailed or DeleteLoadBalancerFailed event seen")
	if want := "no cloud-controller-manager acts on it: the cloud service controller removes service.kubernetes.io/load-balancer-cleanup from a Service of type ClusterIP at once, deleted or not, and it is still there"; !strings.HasPrefix(it.Causes[0].Summary, want) {
		t.Errorf("summary %q", it.Causes[0].Summary)
	}
	fc := Preflight(build(0, time.Hour, corev1.ServiceTypeClusterIP)).Items[0]
	if !fc.Stuck || fc.Severity != report.Critical || codes(fc)[0] != "LoadBalancerCleanupPending" || !strings.HasPrefix(fc.Causes[0].Summary, wouldStickPrefix+"no cloud-controller-manager acts on it") {
		t.Errorf("preflight: %s %v %+v", fc.Severity, codes(fc), fc.Causes)
	}
	for name, s := range map[string]*observed.Snapshot{
		"written seconds ago":      build(0, 5*time.Second, corev1.ServiceTypeClusterIP),
		"a LoadBalancer, no event": build(0, time.Hour, corev1.ServiceTypeLoadBalancer),
	} {
		if fc := Preflight(s).Items[0]; fc.Stuck {
			t.Errorf("%s: %s %v", name, fc.Severity, codes(fc))
		}
	}
}

// A released CSI volume's backend volume is deleted by its driver's
// external-provisioner: its leader Lease (named after the driver) not
// renewed, or no Lease and no CSIDriver (the driver uninstalled, often
// with its namespace), says none runs: critical; renewed, it runs; a
// CSIDriver with no Lease (leader election off) says nothing.
func TestVolumeDeleteByTheProvisionersLease(t *testing.T) {
	build := func(p *observed.Provisioner, requested ...time.Duration) *observed.Snapshot {
		pv := heldObject("PersistentVolume", "persistentvolumes", "pv-3", append(requested, 10*time.Minute)[0], "external-provisioner.volume.kubernetes.io/finalizer")
		pv.Volume = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-3"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-9"}}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
		s := snapOf(pv)
		s.Provisioners["ebs.csi.aws.com"] = p
		return s
	}
	leased := func(renewed time.Duration) *coordinationv1.Lease {
		l := lease("ebs-csi-aws-com", renewed)
		l.Namespace = "kube-system"
		return l
	}
	for _, tc := range []struct {
		name     string
		p        *observed.Provisioner
		severity report.Severity
		summary  string
		evidence string
	}{
		{"uninstalled", &observed.Provisioner{}, report.Critical,
			"no CSI external-provisioner of driver ebs.csi.aws.com acts on it: driver ebs.csi.aws.com looks uninstalled (no CSIDriver ebs.csi.aws.com, and no leader lease of its external-provisioner in any namespace)",
			"csidriver ebs.csi.aws.com: not found"},
		{"lease not renewed", &observed.Provisioner{Lease: leased(20 * time.Minute), Installed: true}, report.Critical,
			"the external-provisioner of driver ebs.csi.aws.com is not running (its leader lease is not renewed)", "lease kube-system/ebs-csi-aws-com: holder"},
		{"lease renewed", &observed.Provisioner{Lease: leased(3 * time.Second), Installed: true}, report.Warning,
			"the external-provisioner of driver ebs.csi.aws.com runs (its leader lease is renewed)", "lease kube-system/ebs-csi-aws-com: holder"},
		{"leader election off", &observed.Provisioner{Installed: true}, report.Warning,
			"the CSI external-provisioner of driver ebs.csi.aws.com may not be running", "no lease ebs-csi-aws-com in any namespace: the external-provisioner's leader election is off"},
	} {
		it := Diagnose(build(tc.p)).Items[0]
		expectCauses(t, it, []string{"VolumeDeleteFailed"}, tc.severity, tc.evidence)
		if !strings.Contains(it.Causes[0].Summary, tc.summary) {
			t.Errorf("%s: %q", tc.name, it.Causes[0].Summary)
		}
	}
	// Before the delete: a released volume whose driver is gone would stick;
	// one whose provisioner runs would not.
	fc := Preflight(build(&observed.Provisioner{}, 0)).Items[0]
	if !fc.Stuck || fc.Severity != report.Critical || codes(fc)[0] != "VolumeDeleteFailed" || !strings.HasPrefix(fc.Causes[0].Summary, wouldStickPrefix+"no CSI external-provisioner") {
		t.Errorf("preflight, driver gone: %s %v %+v", fc.Severity, codes(fc), fc.Causes)
	}
	if fc := Preflight(build(&observed.Provisioner{Lease: leased(3 * time.Second), Installed: true}, 0)).Items[0]; fc.Stuck {
		t.Errorf("preflight, provisioner running: %s %v", fc.Severity, codes(fc))
	}
	if got := observed.ProvisionerLeaseName("ebs.csi.aws.com"); got != "ebs-csi-aws-com" {
		t.Errorf("ProvisionerLeaseName: %q", got)
	}
}

// A CSI driver's external-attacher renews its leader-election Lease every
// few seconds wherever it runs: a Lease not renewed says no attacher runs,
// and a volume still attached will never be detached (critical, before
// the delete as after it); a renewed one says it runs; none says nothing.
func TestDetachByTheAttachersLease(t *testing.T) {
	build := func(requested time.Duration, renewed *time.Duration) *observed.Snapshot {
		pv := heldObject("PersistentVolume", "persistentvolumes", "pv-1", requested, "external-attacher/pd-csi-storage-gke-io")
		pv.Volume = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
		pv.Attachments = []storagev1.VolumeAttachment{{ObjectMeta: metav1.ObjectMeta{Name: "csi-123"},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "pd.csi.storage.gke.io", NodeName: "node-1"}, Status: storagev1.VolumeAttachmentStatus{Attached: true}}}
		s := snapOf(pv)
		s.AttacherLeases["pd.csi.storage.gke.io"] = nil
		if renewed != nil {
			l := lease("external-attacher-leader-pd-csi-storage-gke-io", *renewed)
			l.Namespace = "gce-pd-csi-driver"
			s.AttacherLeases["pd.csi.storage.gke.io"] = l
		}
		return s
	}
	stale, fresh := 20*time.Minute, 3*time.Second
	it := Diagnose(build(10*time.Minute, &stale)).Items[0]
	expectCauses(t, it, []string{"VolumeDetachFailed"}, report.Critical, "lease gce-pd-csi-driver/external-attacher-leader-pd-csi-storage-gke-io: holder")
	if !strings.Contains(it.Causes[0].Summary, "the external-attacher of driver pd.csi.storage.gke.io is not running (its leader lease is not renewed)") {
		t.Errorf("summary %q", it.Causes[0].Summary)
	}
	fc := Preflight(build(0, &stale)).Items[0]
	if !fc.Stuck || fc.Severity != report.Critical || codes(fc)[0] != "VolumeDetachFailed" {
		t.Errorf("preflight: %s %v", fc.Severity, codes(fc))
	}
	it = Diagnose(build(10*time.Minute, &fresh)).Items[0]
	expectCauses(t, it, []string{"VolumeDetachFailed"}, report.Warning, "")
	if !strings.Contains(it.Causes[0].Summary, "runs (its leader lease is renewed)") {
		t.Errorf("renewed: %q", it.Causes[0].Summary)
	}
	if fc := Preflight(build(0, &fresh)).Items[0]; fc.Stuck {
		t.Errorf("preflight with the attacher running: %s %v", fc.Severity, codes(fc))
	}
	expectCauses(t, Diagnose(build(10*time.Minute, nil)).Items[0], []string{"VolumeDetachFailed"}, report.Warning,
		"no lease external-attacher-leader-pd-csi-storage-gke-io in any namespace")
	if got := observed.AttacherLeaseName("weird.driver/"); got != "external-attacher-leader-weird-driver-X" {
		t.Errorf("AttacherLeaseName: %q", got)
	}
}
