package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// liveAcme is a controller whose name carries widgets.acme.io/cleanup's words.
func liveAcme(ready int32) *observed.Controllers {
	return &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "acme-system", Name: "acme-controller", Desired: 1, Ready: ready}}}
}

// notDeleted is o as it is before anyone deletes it.
func notDeleted(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetDeletionTimestamp(nil)
	u.SetDeletionGracePeriodSeconds(nil)
	return u
}

// An object carrying a third-party finalizer: its deletion would stick when
// nothing in the cluster looks like the finalizer's controller, or when the
// controller has no ready replica; not when it looks alive.
func TestPreflightOwnFinalizer(t *testing.T) {
	cases := []struct {
		name     string
		ctl      *observed.Controllers
		severity report.Severity
		stuck    bool
		summary  string
		steps    []string
	}{
		{"controller gone", &observed.Controllers{}, report.Critical, true, "no controller that could remove it is found in the cluster: the deletion would stick",
			[]string{"find-owner", "restore-owner-before", "remove-finalizer-before"}},
		{"controller down", liveAcme(0), report.Critical, true, "its controller has no ready replica: the deletion would stick until it has one",
			[]string{"find-owner", "restore-owner-before", "remove-finalizer-before"}},
		{"controller alive", liveAcme(1), report.Info, false, "its controller looks alive and would remove it", []string{"find-owner"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(notDeleted(widget(0, "widgets.acme.io/cleanup")))
			s.Controllers = tc.ctl
			it := Preflight(s).Items[0]
			if !it.Forecast || it.Stuck != tc.stuck || it.Severity != tc.severity || !slices.Equal(codes(it), []string{"FinalizerPending"}) {
				t.Fatalf("forecast %t stuck %t %s %v", it.Forecast, it.Stuck, it.Severity, codes(it))
			}
			c := it.Causes[0]
			if !c.Forecast || !strings.HasPrefix(c.Summary, "once deleted, Widget w1 would wait for finalizer widgets.acme.io/cleanup") || !strings.HasSuffix(c.Summary, tc.summary) {
				t.Errorf("%+v", c)
			}
			if !slices.Equal(stepIDs(c), tc.steps) {
				t.Errorf("steps %v, want %v", stepIDs(c), tc.steps)
			}
			if tc.stuck && !strings.Contains(c.Remediation[2].Command, `"op":"test","path":"/metadata/finalizers/0","value":"widgets.acme.io/cleanup"`) {
				t.Errorf("the last resort removes that one finalizer, testing it first: %q", c.Remediation[2].Command)
			}
		})
	}
	// Kubernetes' own finalizers are not a third party's: no forecast yet.
	s := snap(notDeleted(widget(0, "kubernetes.io/pvc-protection")))
	s.Controllers = &observed.Controllers{}
	if it := Preflight(s).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("pvc-protection: %v", codes(it))
	}
}

// A namespace: the objects its deletion would delete that carry a
// third-party finalizer nothing would remove, and unavailable APIServices,
// which stop the namespace controller whatever it deletes.
func TestPreflightNamespace(t *testing.T) {
	release := ""
	build := func(ctl *observed.Controllers, pending map[string]int, apis ...observed.APIService) report.Item {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "preview-1"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		s := snap(ns)
		waiting := map[string][]observed.ObjectRef{}
		for _, n := range []string{"w1", "w2", "w3"} {
			waiting["widgets.acme.io/cleanup"] = append(waiting["widgets.acme.io/cleanup"], observed.ObjectRef{APIVersion: "acme.io/v1", Resource: "widgets.acme.io", Kind: "Widget", Namespace: "preview-1", Name: n})
		}
		s.Targets[0].Contents = &observed.Contents{
			Counts:     byType(map[string]int{"widgets.acme.io": 4, "configmaps": 1}),
			NotDeleted: byType(map[string]int{"widgets.acme.io": 4, "configmaps": 1}),
			Finalizers: map[string]int{}, Held: map[string][]*observed.Target{}, Pending: pending, Waiting: waiting,
			Read: observed.ContentsRead{Types: 40},
		}
		s.Controllers = ctl
		s.APIServices = apis
		if release != "" {
			s.Server = &observed.Server{GitVersion: release}
		}
		return Preflight(s).Items[0]
	}
	pending := map[string]int{"widgets.acme.io/cleanup": 4, "kubernetes.io/pvc-protection": 1}

	it := build(&observed.Controllers{}, pending)
	if !it.Stuck || it.Severity != report.Critical || !slices.Equal(codes(it), []string{"FinalizerPending"}) {
		t.Fatalf("stuck %t %s %v", it.Stuck, it.Severity, codes(it))
	}
	c := it.Causes[0]
	if c.Summary != "once deleted, 4 objects (widget.acme.io/w1, widget.acme.io/w2, widget.acme.io/w3, ...) would wait for finalizer widgets.acme.io/cleanup, and no controller that could remove it is found in the cluster: the deletion would stick" ||
		c.About.Count != 4 || !slices.Equal(c.About.Finalizers, []string{"widgets.acme.io/cleanup"}) {
		t.Errorf("%q %+v", c.Summary, c.About)
	}
	if !slices.Contains(c.Evidence, "live scan of namespace preview-1: finalizer widgets.acme.io/cleanup on 4 objects, none of them being deleted yet") {
		t.Errorf("evidence %q", c.Evidence)
	}
	if it.ContentsRead == nil || it.ContentsRead.Types != 40 {
		t.Errorf("contents read: %+v", it.ContentsRead)
	}

	if it := build(liveAcme(1), pending); it.Stuck || it.Severity != report.Info {
		t.Errorf("controller alive: stuck %t %s %v", it.Stuck, it.Severity, codes(it))
	}
	// The controller runs in the namespace being deleted: the namespace
	// controller deletes it too, its pods first under ordered deletion.
	inside := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "preview-1", Name: "acme-controller", Desired: 1, Ready: 1}}}
	for _, tc := range []struct {
		release  string
		severity report.Severity
		how      string
	}{
		{"v1.36.3", report.Critical, "deletes the pods first and waits for them: the controller's pods go before the objects it would finish"},
		{"v1.31.4", report.Warning, "deletes every type at once (no ordered namespace deletion on this release): the controller may go before it has removed the finalizer"},
	} {
		release = tc.release
		it := build(inside, pending)
		c := it.Causes[0]
		if !it.Stuck || c.Severity != tc.severity || c.Code != "FinalizerPending" ||
			!strings.Contains(c.Summary, "whose controller (deployment preview-1/acme-controller) runs in the namespace being deleted; the namespace controller "+tc.how) ||
			!slices.Equal(stepIDs(c), []string{"find-owner", "delete-objects-first"}) {
			t.Errorf("%s: stuck %t %s %q %v", tc.release, it.Stuck, c.Severity, c.Summary, stepIDs(c))
		}
	}
	release = ""
	if it := build(&observed.Controllers{}, map[string]int{"kubernetes.io/pvc-protection": 1}); it.Stuck || len(it.Causes) != 0 {
		t.Errorf("nothing would hold it: %v", codes(it))
	}

	broken := observed.APIService{Name: "v1beta1.metrics.example.com", Group: "metrics.example.com", Version: "v1beta1", Service: "metrics/metrics-server", Available: "False", Reason: "MissingEndpoints"}
	it = build(&observed.Controllers{}, nil, broken)
	if !it.Stuck || !slices.Equal(codes(it), []string{"APIServiceUnavailable"}) || !it.Causes[0].Forecast ||
		!strings.HasPrefix(it.Causes[0].Summary, "deleting the namespace now would stop at discovery: aggregated API metrics.example.com/v1beta1 is unavailable (MissingEndpoints)") {
		t.Errorf("APIService: stuck %t %v %q", it.Stuck, codes(it), it.Causes[0].Summary)
	}
}

// A CRD: apiextensions deletes its instances, which would then wait for
// their own finalizers; the report uses why's code for a CRD.
func TestPreflightCRD(t *testing.T) {
	s := terminatingCRD(0, "", nil, "")
	crd := s.Targets[0]
	crd.Object.SetDeletionTimestamp(nil)
	crd.Object.SetFinalizers(nil) // apiextensions adds its cleanup finalizer only once the CRD is deleted
	crd.Forecast = true
	if !Needs(crd).Has(InstanceEvidence | CRDEvidence) {
		t.Errorf("a CRD's preflight reads its instances: needs %b", Needs(crd))
	}
	crd.Contents = &observed.Contents{ByNamespace: map[string]int{"shop": 2}, Finalizers: map[string]int{}, Held: map[string][]*observed.Target{},
		Pending: map[string]int{"widgets.acme.io/cleanup": 2},
		Waiting: map[string][]observed.ObjectRef{"widgets.acme.io/cleanup": {{APIVersion: "example.com/v1", Resource: "widgets.example.com", Kind: "Widget", Namespace: "shop", Name: "a"}, {APIVersion: "example.com/v1", Resource: "widgets.example.com", Kind: "Widget", Namespace: "shop", Name: "b"}}}}
	it := Preflight(s).Items[0]
	if !it.Stuck || !slices.Equal(codes(it), []string{"CRDInstancesRemaining"}) {
		t.Fatalf("stuck %t %v", it.Stuck, codes(it))
	}
	c := it.Causes[0]
	if !strings.HasPrefix(c.Summary, "once deleted, 2 instances (widget.example.com/a, widget.example.com/b) would wait for finalizer widgets.acme.io/cleanup") ||
		!slices.Equal(stepIDs(c), []string{"list-instances", "restore-owner-before", "remove-instance-finalizers-before"}) ||
		c.Remediation[0].Command != "kubectl get widgets.example.com -A" {
		t.Errorf("%q %v %q", c.Summary, stepIDs(c), c.Remediation[0].Command)
	}
}

// Only a preflight's targets read what a forecast needs: an object not
// being deleted that a diagnosis nests (a claim's running pod, what a spec
// names) is not forecast.
func TestForecastReadsOnlyForPreflight(t *testing.T) {
	ns := snap(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "ops"}}).Targets[0]
	if Needs(ns).Has(FinalizedEvidence) || Needs(ns).Has(AdmissionEvidence) {
		t.Errorf("nested: needs %b", Needs(ns))
	}
	ns.Forecast = true
	if !Needs(ns).Has(FinalizedEvidence | AdmissionEvidence | ContentEvidence) {
		t.Errorf("a preflight's: needs %b", Needs(ns))
	}
}

// Without the controllers read, a preflight says nothing it cannot know:
// the run's skipped read makes the report partial.
func TestPreflightWithoutControllers(t *testing.T) {
	s := snap(notDeleted(widget(0, "widgets.acme.io/cleanup")))
	if it := Preflight(s).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("%v", codes(it))
	}
}

// An object already being deleted has nothing left to foresee: it is
// diagnosed as why diagnoses it.
func TestPreflightOfADeletion(t *testing.T) {
	s := snap(widget(10*time.Minute, "widgets.acme.io/cleanup"))
	s.Controllers = &observed.Controllers{}
	it := Preflight(s).Items[0]
	if it.Forecast || !it.Stuck || it.Causes[0].Forecast || it.OverdueSeconds == 0 {
		t.Errorf("forecast %t stuck %t %+v", it.Forecast, it.Stuck, it.Causes[0])
	}
}

// A namespace that already holds stuck objects (a pod on a dead node,
// objects a finalizer nothing removes holds): its deletion would wait for
// them, diagnosed and nested as why nests them, each by its own deletion;
// a Terminating namespace's last resort (emptying spec.finalizers) is not
// offered for one not being deleted.
func TestPreflightNamespaceHoldingStuckObjects(t *testing.T) {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	s := snap(ns, node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 20*time.Minute))
	pod := snap(terminatingPod(10*time.Minute, 30)).Targets[0]
	w := widget(10*time.Minute, "widgets.acme.io/cleanup")
	s.Targets[0].Contents = &observed.Contents{
		Counts:     byType(map[string]int{"pods": 1, "widgets.example.com": 1}),
		Finalizers: map[string]int{"widgets.acme.io/cleanup": 1},
		Held:       map[string][]*observed.Target{"widgets.acme.io/cleanup": {snap(w).Targets[0]}},
		Pods:       []*observed.Target{pod},
	}
	s.Controllers = &observed.Controllers{}
	it := Preflight(s).Items[0]
	if !it.Forecast || !it.Stuck || !slices.Equal(codes(it), []string{"FinalizerPending", "PodStuckTerminating"}) {
		t.Fatalf("stuck %t %v", it.Stuck, codes(it))
	}
	held, pods := it.Causes[0], it.Causes[1]
	if !strings.HasPrefix(held.Summary, "already being deleted, and stuck: 1 object in the namespace is held by finalizer widgets.acme.io/cleanup (widget.example.com/w1): no controller") ||
		held.Severity != report.Critical || len(held.BlockedBy) != 1 {
		t.Errorf("held: %s %q", held.Severity, held.Summary)
	}
	if !strings.HasPrefix(pods.Summary, "already being deleted, and stuck: pod web-0 is stuck terminating: node node-1 stopped reporting") ||
		len(pods.BlockedBy) != 1 || pods.BlockedBy[0].Causes[0].Code != "NodeUnreachable" || pods.BlockedBy[0].Forecast {
		t.Errorf("pods: %q %+v", pods.Summary, pods.BlockedBy)
	}
	for _, c := range it.Causes {
		if slices.Contains(stepIDs(c), "finalize-namespace") {
			t.Errorf("%s offers to finalize a namespace not being deleted: %v", c.Code, stepIDs(c))
		}
	}
}

// The writes a deletion needs that admission would refuse: the UPDATE that
// removes a finalizer, the namespace controller's DELETEs of a namespace's
// content; the same codes why reports once they are refused. A webhook
// that answers may well allow them: no forecast.
func TestPreflightAdmission(t *testing.T) {
	down := func(ready int, op admissionregistrationv1.OperationType, resource string) *observed.Admission {
		a := observed.NewAdmission()
		hook := deletePodsWebhook(admissionregistrationv1.Fail, op)
		hook.Webhooks[0].Rules[0].Resources = []string{resource}
		a.Validating = append(a.Validating, hook)
		a.ServiceEndpoints[key("guard/guard-svc")] = ready
		return a
	}
	cm := heldObject("ConfigMap", "configmaps", "w1", 0, "example.com/cleanup")
	s := snapOf(cm)
	s.Admission = down(0, admissionregistrationv1.Update, "configmaps")
	it := Preflight(s).Items[0]
	if !it.Stuck || !slices.Equal(codes(it), []string{"AdmissionWebhookDenied", "FinalizerPending"}) ||
		!strings.HasPrefix(it.Causes[0].Summary, "the deletion would stick: ") || !strings.Contains(it.Causes[0].Summary, "UPDATE configmaps (the patch that removes a finalizer)") {
		t.Errorf("finalizer removal refused: %v %q", codes(it), it.Causes[0].Summary)
	}
	s.Admission = down(2, admissionregistrationv1.Update, "configmaps")
	if got := codes(Preflight(s).Items[0]); !slices.Equal(got, []string{"FinalizerPending"}) {
		t.Errorf("webhook up: %v", got)
	}
	// A mutating webhook that answers the finalizer's removal: a suspect,
	// a warning as why says once the deletion is due, so exit 2.
	pod := terminatingPod(0, 30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	s = snap(pod)
	s.Admission = observed.NewAdmission()
	s.Admission.Mutating = append(s.Admission.Mutating, mutatingPodsWebhook(admissionregistrationv1.Ignore, nil))
	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 1
	if it := Preflight(s).Items[0]; !it.Stuck || it.Severity != report.Warning || codes(it)[0] != "AdmissionWebhookDenied" ||
		!strings.HasPrefix(it.Causes[0].Summary, "the deletion would stick: mutating webhook defaults.example.com (pod-defaults) changes UPDATE pods") {
		t.Errorf("a mutating suspect: stuck %t %s %v", it.Stuck, it.Severity, codes(it))
	}

	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "guarded"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	s = snap(ns)
	s.Targets[0].Contents = &observed.Contents{Counts: byType(map[string]int{"configmaps": 1}), NotDeleted: byType(map[string]int{"configmaps": 1}),
		Resources: map[schema.GroupResource]schema.GroupVersionResource{{Resource: "configmaps"}: {Version: "v1", Resource: "configmaps"}}}
	s.Admission = down(0, admissionregistrationv1.Delete, "configmaps")
	s.Controllers = &observed.Controllers{}
	s.Targets[0].Forecast = true
	if !Needs(s.Targets[0]).Has(AdmissionEvidence | ContentEvidence | APIServiceEvidence) {
		t.Errorf("a namespace's preflight reads admission, its content and the APIServices: %b", Needs(s.Targets[0]))
	}
	it = Preflight(s).Items[0]
	if !it.Stuck || !slices.Equal(codes(it), []string{"AdmissionWebhookDenied"}) ||
		!strings.Contains(it.Causes[0].Summary, "webhook guard.example.com refuses the namespace controller's DELETE of configmaps in namespace guarded") {
		t.Errorf("the namespace controller's deletes refused: %v %+v", codes(it), it.Causes)
	}
}

// A pod whose node stopped reporting would not finish its deletion (only
// its kubelet runs the shutdown); one on a live node would.
func TestPreflightPodOnADeadNode(t *testing.T) {
	pod := terminatingPod(0, 30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
	s := snap(pod, node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 20*time.Minute))
	if !Needs(s.Targets[0]).Has(NodeEvidence) {
		t.Fatalf("a pod's preflight reads its node")
	}
	it := Preflight(s).Items[0]
	if !it.Forecast || !it.Stuck || !slices.Equal(codes(it), []string{"NodeUnreachable"}) ||
		!strings.HasPrefix(it.Causes[0].Summary, "the deletion would stick: node node-1 stopped reporting") {
		t.Errorf("%v %+v", codes(it), it.Causes)
	}
	s = snap(pod, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
	if it := Preflight(s).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("live node: %v", codes(it))
	}
}

// A namespace whose pods (not being deleted) run on a node that stopped
// reporting: the namespace controller would delete them first and wait for
// them, so its deletion would stick with PodStuckTerminating, the pod's own
// forecast nested.
func TestPreflightNamespaceWithPodsOnADeadNode(t *testing.T) {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	pod := terminatingPod(0, 30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
	build := func(n *corev1.Node, l *coordinationv1.Lease) report.Item {
		s := snap(ns, n, l)
		s.Targets[0].Contents = &observed.Contents{Counts: byType(map[string]int{"pods": 1}), NotDeleted: byType(map[string]int{"pods": 1}),
			Live: []*observed.Target{snap(pod).Targets[0]}}
		return Preflight(s).Items[0]
	}
	it := build(node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 20*time.Minute))
	if !it.Stuck || !slices.Equal(codes(it), []string{"PodStuckTerminating"}) {
		t.Fatalf("stuck %t %v", it.Stuck, codes(it))
	}
	c := it.Causes[0]
	if !strings.HasPrefix(c.Summary, "once deleted, pod web-0 would be stuck terminating: node node-1 stopped reporting") ||
		len(c.BlockedBy) != 1 || !c.BlockedBy[0].Forecast || c.BlockedBy[0].Causes[0].Code != "NodeUnreachable" ||
		c.Remediation[0].Command != "kubectl terminating preflight pod/web-0 -n shop" {
		t.Errorf("%q %+v %q", c.Summary, c.BlockedBy, c.Remediation[0].Command)
	}
	if it := build(node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second)); it.Stuck || len(it.Causes) != 0 {
		t.Errorf("live node: %v", codes(it))
	}
}

// Kubernetes' in-use protections: a claim a running pod mounts would stay
// Terminating until the pod goes (PVCInUse, as why says once it is
// deleted); a claim no pod uses, or whose pods are all going, would not.
func TestPreflightClaimInUse(t *testing.T) {
	claim := heldObject("PersistentVolumeClaim", "persistentvolumeclaims", "data", 0, "kubernetes.io/pvc-protection")
	if !Needs(claim).Has(ClaimUserEvidence) {
		t.Fatalf("a claim's preflight reads its users")
	}
	running := terminatingPod(0, 30)
	running.DeletionTimestamp, running.DeletionGracePeriodSeconds = nil, nil
	claim.ClaimUsers = snap(running).Targets
	it := Preflight(snapOf(claim)).Items[0]
	if !it.Stuck || !slices.Equal(codes(it), []string{"PVCInUse"}) || it.Severity != report.Warning ||
		!strings.HasPrefix(it.Causes[0].Summary, "the deletion would stick: 1 pod still uses the claim: web-0") ||
		!slices.Equal(it.Causes[0].About.Finalizers, []string{"kubernetes.io/pvc-protection"}) {
		t.Errorf("stuck %t %v %+v", it.Stuck, codes(it), it.Causes)
	}
	claim.ClaimUsers = []*observed.Target{}
	if it := Preflight(snapOf(claim)).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("no user: %v", codes(it))
	}
}

// A node a drain finalizer empties: its deletion would stick on a pod whose
// eviction a budget refuses; a pod the drain may evict only makes it wait.
func TestPreflightDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed int32
		stuck   bool
	}{{"a budget allowing no disruption", 0, true}, {"a budget allowing one", 1, false}} {
		n := drainedNodeTarget()
		n.Object.SetDeletionTimestamp(nil)
		n.Object.SetDeletionGracePeriodSeconds(nil)
		s := snap()
		s.Targets = []*observed.Target{n}
		s.NodePods = map[string][]corev1.Pod{"node-7": {podOn("db-0", map[string]string{"app": "db"})}}
		s.PDBs = map[string][]policyv1.PodDisruptionBudget{"shop": {budget("db", tc.allowed)}}
		s.Controllers = liveAcme(1)
		it := Preflight(s).Items[0]
		if it.Stuck != tc.stuck || (tc.stuck && (codes(it)[0] != "NodeDrainBlocked" || !strings.HasPrefix(it.Causes[0].Summary, "the deletion would stick: the drain of node node-7 cannot evict pod shop/db-0"))) {
			t.Errorf("%s: stuck %t %v %+v", tc.name, it.Stuck, codes(it), it.Causes)
		}
	}
}

// An operator uninstalled before its custom resources: deleting the only
// live controller of a finalizer (its Deployment, or the namespace it runs
// in) would leave the objects elsewhere that carry it with no one to remove
// it. A controller with another live replica elsewhere strands nothing.
func TestPreflightStrandedFinalizers(t *testing.T) {
	deploy := heldObject("Deployment", "deployments.apps", "acme-controller", 0)
	deploy.Ref.APIVersion, deploy.Ref.Namespace = "apps/v1", "acme-system"
	deploy.Object.SetAPIVersion("apps/v1")
	deploy.Object.SetNamespace("acme-system")
	ns := snap(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "acme-system"}}).Targets[0]
	finalized := &observed.Finalized{Counts: map[string]map[string]int{"widgets.acme.io/cleanup": {"shop": 2, "acme-system": 1}},
		Examples: map[string][]observed.ObjectRef{"widgets.acme.io/cleanup": {{APIVersion: "acme.io/v1", Kind: "Widget", Resource: "widgets.acme.io", Namespace: "acme-system", Name: "w0"},
			{APIVersion: "acme.io/v1", Kind: "Widget", Resource: "widgets.acme.io", Namespace: "shop", Name: "w1"}}}}
	for _, tc := range []struct {
		name    string
		target  *observed.Target
		ctl     *observed.Controllers
		objects string
	}{
		{"its Deployment", deploy, liveAcme(1), "3 objects (widget.acme.io/w0 -n acme-system, widget.acme.io/w1 -n shop, ...)"},
		{"its namespace", ns, liveAcme(1), "2 objects (widget.acme.io/w1 -n shop, ...)"},
	} {
		tc.target.Forecast = true
		if !Needs(tc.target).Has(FinalizedEvidence | OwnerEvidence) {
			t.Errorf("%s: needs %b", tc.name, Needs(tc.target))
		}
		s := observed.New(now)
		s.Targets, s.Controllers, s.Finalized = []*observed.Target{tc.target}, tc.ctl, finalized
		if !DeletesLiveWorkloads(s, tc.target) || DeletesLiveWorkloads(&observed.Snapshot{Controllers: liveAcme(0)}, tc.target) {
			t.Errorf("%s: the cluster is scanned only when a live workload goes with the deletion", tc.name)
		}
		it := Preflight(s).Items[0]
		want := "once it is deleted, nothing would remove finalizer widgets.acme.io/cleanup from " + tc.objects + ": deployment acme-system/acme-controller, which looks like its controller, goes with it"
		if !it.Stuck || !slices.Equal(codes(it), []string{"FinalizerPending"}) || it.Severity != report.Warning || !strings.HasPrefix(it.Causes[0].Summary, want) ||
			!slices.Equal(stepIDs(it.Causes[0]), []string{"find-owner", "uninstall-last"}) {
			t.Errorf("%s: stuck %t %v %+v, want %q...", tc.name, it.Stuck, codes(it), it.Causes, want)
		}
		s.Controllers = &observed.Controllers{Workloads: append(liveAcme(1).Workloads, observed.Workload{Kind: "Deployment", Namespace: "acme-backup", Name: "acme-controller", Ready: 1})}
		if it := Preflight(s).Items[0]; it.Stuck {
			t.Errorf("%s, with another live replica elsewhere: %v", tc.name, codes(it))
		}
	}
}

// Deleted with --cascade=foreground, a Deployment would wait on its
// ReplicaSet, deleted in the foreground in turn, and so on its pod, whose
// node stopped reporting: ForegroundDeletionBlocked, the chain nested, as
// why reports it once the deletion is stuck. In the background (the
// default) the owner goes at once: nothing to forecast. A dependent without
// blockOwnerDeletion is not waited for.
func TestPreflightForegroundCascade(t *testing.T) {
	yes := true
	owns := func(d *observed.Target, kind, name string) {
		d.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: apitypes.UID("uid-" + name), BlockOwnerDeletion: &yes}})
	}
	forecast := func(t *observed.Target) *observed.Target {
		notDeleted(t.Object)
		t.Forecast, t.Cascade = true, metav1.DeletePropagationForeground
		return t
	}
	deploy := forecast(heldObject("Deployment", "deployments.apps", "web", 0))
	rs := forecast(heldObject("ReplicaSet", "replicasets.apps", "web-abc", 0))
	owns(rs, "Deployment", "web")
	pod := terminatingPod(0, 30)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = nil, nil
	pod.Name, pod.UID, pod.Spec.NodeName = "web-abc-1", "uid-web-abc-1", "node-dead"
	pt := forecast(target(pod, "pods", func(t *observed.Target) { t.Pod = pod }))
	owns(pt, "ReplicaSet", "web-abc")
	deploy.Dependents, rs.Dependents = []*observed.Target{rs}, []*observed.Target{pt}
	if !Needs(deploy).Has(DependentEvidence) || !Needs(rs).Has(DependentEvidence) || !Needs(pt).Has(NodeEvidence) {
		t.Fatalf("a foreground forecast reads the dependents, and their nodes")
	}

	s := snapOf(deploy)
	s.Nodes["node-dead"] = node("node-dead", corev1.ConditionUnknown, taintUnreachable)
	s.Leases["node-dead"] = lease("node-dead", 10*time.Minute)
	it := Preflight(s).Items[0]
	if !it.Stuck || it.Severity != report.Critical || !slices.Equal(codes(it), []string{"ForegroundDeletionBlocked"}) {
		t.Fatalf("stuck %t %s %v", it.Stuck, it.Severity, codes(it))
	}
	top := it.Causes[0]
	if want := "deleted with --cascade=foreground, it would wait on replicaset/web-abc -> pod/web-abc-1, whose deletion would stick: node node-dead stopped reporting"; !top.Forecast || !strings.HasPrefix(top.Summary, want) {
		t.Errorf("summary %q, want %q...", top.Summary, want)
	}
	if !slices.Equal(stepIDs(top), []string{"resolve-dependents-before", "delete-in-background"}) ||
		top.Remediation[0].Command != "kubectl terminating preflight pods/web-abc-1 -n shop" ||
		top.Remediation[1].Command != "kubectl delete deployments.apps web -n shop --cascade=background" {
		t.Errorf("steps %+v", top.Remediation)
	}
	if rsItem := top.BlockedBy[0]; !rsItem.Forecast || codes(rsItem)[0] != "ForegroundDeletionBlocked" || codes(rsItem.Causes[0].BlockedBy[0])[0] != "NodeUnreachable" {
		t.Errorf("nested: %v", codes(rsItem))
	}
	if !slices.ContainsFunc(top.Facts, func(f report.Fact) bool {
		return f.Text == "dependent replicaset/web-abc -n shop: blockOwnerDeletion true, not being deleted: ForegroundDeletionBlocked (critical)"
	}) {
		t.Errorf("evidence %+v", top.Facts)
	}

	// A live node: the chain would finish.
	s.Nodes["node-dead"] = node("node-dead", corev1.ConditionTrue)
	s.Leases["node-dead"] = lease("node-dead", 5*time.Second)
	if it := Preflight(s).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("live node: %v", codes(it))
	}
	s.Nodes["node-dead"] = node("node-dead", corev1.ConditionUnknown, taintUnreachable)
	s.Leases["node-dead"] = lease("node-dead", 10*time.Minute)

	// The pod's reference without blockOwnerDeletion: the ReplicaSet does
	// not wait for it.
	pt.Object.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "uid-web-abc"}})
	if it := Preflight(s).Items[0]; it.Stuck {
		t.Errorf("a dependent without blockOwnerDeletion: %v", codes(it))
	}
	owns(pt, "ReplicaSet", "web-abc")

	// In the background, the default, the owner goes at once.
	deploy.Cascade = ""
	if Needs(deploy).Has(DependentEvidence) {
		t.Errorf("a background forecast reads no dependents")
	}
	if it := Preflight(s).Items[0]; it.Stuck || len(it.Causes) != 0 {
		t.Errorf("background: %v", codes(it))
	}
}

// A namespace holding objects whose conversion webhook fails: the scan
// cannot list them, nor could the namespace controller, which would stop
// there: ConversionWebhookFailing, as why reports once it does.
func TestPreflightConversionWebhookFailing(t *testing.T) {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	s := snap(ns)
	s.Targets[0].Forecast = true
	if e := Needs(s.Targets[0]); !e.Has(ContentEvidence) || e.Has(CRDEvidence) {
		t.Fatalf("a namespace's preflight reads its content, not the CRDs while no list failed")
	}
	s.Targets[0].Contents = &observed.Contents{Counts: byType(nil), Finalizers: map[string]int{}, Held: map[string][]*observed.Target{},
		Skipped: []report.Skip{{Check: "list gadgets.conv.example.com in namespace shop", Reason: "Error",
			APIMessage: `conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://conv-down.default.svc:443/convert?timeout=30s": service "conv-down" not found`}}}
	if !Needs(s.Targets[0]).Has(CRDEvidence) {
		t.Fatalf("a list that failed to convert: the CRDs are read, for the webhook's backend")
	}
	s.CRDs["gadgets.conv.example.com"] = &observed.CRD{Name: "gadgets.conv.example.com", Group: "conv.example.com", Kind: "Gadget", Plural: "gadgets",
		Namespaced: true, StorageVersion: "v1", Served: []string{"v1", "v2"}, StoredVersions: []string{"v1"},
		ConversionStrategy: "Webhook", ConversionService: "default/conv-down", ConversionServiceEndpoints: new(int)}
	it := Preflight(s).Items[0]
	if !it.Forecast || !it.Stuck || it.Severity != report.Critical || codes(it)[0] != "ConversionWebhookFailing" ||
		!strings.HasPrefix(it.Causes[0].Summary, "deleting the namespace now would stop at its content: the conversion webhook of CRD gadgets.conv.example.com fails (its service default/conv-down has no ready endpoints)") {
		t.Errorf("stuck %t %s %v: %+v", it.Stuck, it.Severity, codes(it), it.Causes)
	}
	s.Targets[0].Contents.Skipped = nil // the kind lists fine
	if it := Preflight(s).Items[0]; it.Stuck {
		t.Errorf("conversion working: %v", codes(it))
	}
}
