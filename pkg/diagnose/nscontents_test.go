package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func TestNamespaceNestsItsBlockers(t *testing.T) {
	ns := terminatingNamespace(10*time.Minute, allConditions(
		nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances, widgets.example.com has 3 resource instances"),
		nsCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: widgets.acme.io/cleanup in 3 resource instances"),
	)...)
	s := snap(ns, node("node-1", corev1.ConditionUnknown, taintUnreachable), lease("node-1", 20*time.Minute))
	pod := snap(terminatingPod(10*time.Minute, 30)).Targets[0]
	var held []*observed.Target
	for _, name := range []string{"w1", "w2", "w3"} {
		w := widget(10*time.Minute, "widgets.acme.io/cleanup")
		w.SetName(name)
		held = append(held, snap(w).Targets[0])
	}
	s.Targets[0].Contents = &observed.Contents{
		Counts:     byType(map[string]int{"pods": 1, "widgets.example.com": 3}),
		Finalizers: map[string]int{"widgets.acme.io/cleanup": 3},
		Held:       map[string][]*observed.Target{"widgets.acme.io/cleanup": held},
		Pods:       []*observed.Target{pod},
	}
	s.Controllers = &observed.Controllers{}

	it := Diagnose(s).Items[0]
	got := codes(it)
	if len(got) < 4 || got[0] != "FinalizerPending" || got[1] != "PodStuckTerminating" || !slices.Contains(got, "NamespaceFinalizersRemaining") {
		t.Fatalf("codes = %v", got)
	}
	fin, pods := it.Causes[0], it.Causes[1]
	if fin.Severity != report.Critical || !strings.HasPrefix(fin.Summary, "3 objects in the namespace are held by finalizer widgets.acme.io/cleanup (widget.example.com/w1, widget.example.com/w2, widget.example.com/w3): ") || len(fin.BlockedBy) != 3 {
		t.Errorf("grouped finalizer cause: %s %q, %d nested", fin.Severity, fin.Summary, len(fin.BlockedBy))
	}
	if len(pods.BlockedBy) != 1 || pods.BlockedBy[0].Causes[0].Code != "NodeUnreachable" || !strings.Contains(pods.Summary, "pod web-0 is stuck terminating: node node-1 stopped reporting") {
		t.Errorf("nested pod: %q %+v", pods.Summary, pods.BlockedBy)
	}
	remaining := it.Causes[slices.Index(got, "NamespaceContentRemaining")]
	if !slices.Contains(remaining.Evidence, "live scan: widgets.example.com: 3 objects left") || !slices.Contains(remaining.Evidence, "live scan: pods: 1 object left") {
		t.Errorf("live scan evidence: %q", remaining.Evidence)
	}
}

// Class d: with ordered namespace deletion the namespace controller deletes
// the pods first and leaves the rest until they are gone. A namespace whose
// pods are inside their grace period is progressing, whatever else it holds
// (kube-root-ca.crt, the default ServiceAccount, an object whose finalizer's
// controller is gone, none of them deleted yet); it is stuck only once a pod
// is, with that pod's diagnosis nested.
func TestNamespaceWaitingForItsPodsByDesign(t *testing.T) {
	build := func(podRequested time.Duration, nodeReady corev1.ConditionStatus, leaseAge time.Duration) *observed.Snapshot {
		ns := terminatingNamespace(2*time.Minute, allConditions()...)
		s := snap(ns, node("node-1", nodeReady), lease("node-1", leaseAge))
		var pods []*observed.Target
		for _, name := range []string{"db-0", "db-1"} {
			p := terminatingPod(podRequested, 300)
			p.Name, p.UID = name, "uid-"+types.UID(name)
			pods = append(pods, snap(p).Targets[0])
		}
		s.Targets[0].Contents = &observed.Contents{
			Counts:     byType(map[string]int{"pods": 2, "configmaps": 2, "serviceaccounts": 1, "widgets.example.com": 1}),
			NotDeleted: byType(map[string]int{"configmaps": 2, "serviceaccounts": 1, "widgets.example.com": 1}),
			Finalizers: map[string]int{}, Held: map[string][]*observed.Target{},
			Pods: pods,
		}
		s.Controllers = &observed.Controllers{}
		return s
	}

	it := Diagnose(build(2*time.Minute, corev1.ConditionTrue, 5*time.Second)).Items[0]
	expectCauses(t, it, []string{"WithinGracePeriod"}, report.Info, "OrderedNamespaceDeletion: server version unknown, assumed as in the newest releases (on)")
	if it.Stuck || !strings.Contains(it.Causes[0].Summary, "2 pods are terminating normally and the last pod's grace period ends in 3m") ||
		!strings.Contains(it.Causes[0].Summary, "the 4 other objects are deleted after them") {
		t.Errorf("stuck %t, summary %q", it.Stuck, it.Causes[0].Summary)
	}

	// The pods' node died and their deadline passed: now the namespace is stuck, and says why.
	it = Diagnose(build(10*time.Minute, corev1.ConditionUnknown, 10*time.Minute)).Items[0]
	if got := codes(it); !it.Stuck || got[0] != "PodStuckTerminating" || slices.Contains(got, "NamespaceContentRemaining") || slices.Contains(got, "FinalizerPending") {
		t.Fatalf("stuck %t, codes %v: want PodStuckTerminating and nothing blamed on the content not deleted yet", it.Stuck, got)
	}
	if top := it.Causes[0]; top.Severity != report.Critical || top.BlockedBy[0].Causes[0].Code != "NodeUnreachable" {
		t.Errorf("top %s, nested %v", top.Severity, codes(top.BlockedBy[0]))
	}
}

// Without ordered namespace deletion (off by default before 1.33) the
// namespace controller deletes every type at once and reports the pods in
// its NamespaceContentRemaining condition: pods inside their grace period
// still make the namespace progressing (not the false STUCK a 1.31 cluster
// got), the rest does not wait for them, and content held by a finalizer
// whose controller is gone blocks now, beside them. On 1.33+ the same
// namespace waits for its pods by design.
func TestNamespaceWithPodsInGraceByRelease(t *testing.T) {
	build := func(gitVersion string, heldWidget bool) *observed.Snapshot {
		msg := "Some resources are remaining: pods. has 2 resource instances"
		counts := map[string]int{"pods": 2}
		if heldWidget {
			msg += ", widgets.example.com has 1 resource instances"
			counts["widgets.example.com"] = 1
		}
		ns := terminatingNamespace(2*time.Minute, allConditions(nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", msg))...)
		s := snap(ns, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Server = &observed.Server{GitVersion: gitVersion}
		var pods []*observed.Target
		for _, name := range []string{"db-0", "db-1"} {
			p := terminatingPod(2*time.Minute, 300)
			p.Name, p.UID = name, "uid-"+types.UID(name)
			pods = append(pods, snap(p).Targets[0])
		}
		c := &observed.Contents{Counts: byType(counts), Finalizers: map[string]int{}, Held: map[string][]*observed.Target{}, Pods: pods}
		if heldWidget {
			w := widget(2*time.Minute, "widgets.acme.io/cleanup")
			c.Finalizers["widgets.acme.io/cleanup"] = 1
			c.Held["widgets.acme.io/cleanup"] = []*observed.Target{snap(w).Targets[0]}
		}
		s.Targets[0].Contents = c
		s.Controllers = &observed.Controllers{}
		return s
	}
	for _, tc := range []struct {
		version, assumed, wording string
	}{
		{"v1.31.14", "OrderedNamespaceDeletion: off by default in 1.31", "deletes every type at once"},
		{"v1.32.9", "OrderedNamespaceDeletion: off by default in 1.32", "deletes every type at once"},
		{"v1.33.5", "OrderedNamespaceDeletion: on by default in 1.33", "deletes the pods first"},
		{"v1.37.2", "OrderedNamespaceDeletion: always on in 1.37", "deletes the pods first"},
	} {
		r := Diagnose(build(tc.version, false))
		it := r.Items[0]
		if it.Stuck || it.Severity != report.Info || codes(it)[0] != "WithinGracePeriod" || slices.Contains(codes(it), "NamespaceContentRemaining") {
			t.Errorf("%s, pods in grace only: stuck %t %s %v, want progressing", tc.version, it.Stuck, it.Severity, codes(it))
		}
		if !strings.Contains(it.Causes[0].Summary, tc.wording) || !slices.ContainsFunc(it.Causes[0].Evidence, func(e string) bool { return strings.HasPrefix(e, tc.assumed) }) {
			t.Errorf("%s: summary %q, evidence %q", tc.version, it.Causes[0].Summary, it.Causes[0].Evidence)
		}
		if r.Server == nil || r.Server.GitVersion != tc.version || !slices.ContainsFunc(r.Server.Assumptions, func(a string) bool { return strings.HasPrefix(a, tc.assumed) }) {
			t.Errorf("%s: report.server %+v", tc.version, r.Server)
		}

		held := Diagnose(build(tc.version, true)).Items[0]
		if !held.Stuck || codes(held)[0] != "FinalizerPending" || !slices.Contains(codes(held), "WithinGracePeriod") {
			t.Errorf("%s, a widget held by a finalizer with no controller: stuck %t, codes %v", tc.version, held.Stuck, codes(held))
		}
	}
}

// A namespace progressing (its pods in grace) that already holds objects not
// deleted yet whose finalizer no controller will remove gets a forecast:
// information, never stuck; a live controller, a Kubernetes finalizer or a
// stuck pod make none.
func TestNamespaceForecast(t *testing.T) {
	build := func(ctl *observed.Controllers, pending map[string]int) *observed.Snapshot {
		ns := terminatingNamespace(time.Minute, allConditions()...)
		s := snap(ns, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
		s.Server = &observed.Server{GitVersion: "v1.36.3"}
		p := terminatingPod(time.Minute, 300)
		s.Targets[0].Contents = &observed.Contents{
			Counts:     byType(map[string]int{"pods": 1, "widgets.example.com": 4, "configmaps": 1}),
			NotDeleted: byType(map[string]int{"widgets.example.com": 4, "configmaps": 1}),
			Finalizers: map[string]int{}, Held: map[string][]*observed.Target{}, Pending: pending,
			Pods: []*observed.Target{snap(p).Targets[0]},
		}
		s.Controllers = ctl
		return s
	}
	pending := map[string]int{"widgets.acme.io/cleanup": 4, "kubernetes.io/pvc-protection": 1}
	it := Diagnose(build(&observed.Controllers{}, pending)).Items[0]
	// The forecast ranks first (the root of what is coming), as information.
	if it.Stuck || it.Severity != report.Info || !slices.Equal(codes(it), []string{"FinalizerPending", "WithinGracePeriod"}) {
		t.Fatalf("stuck %t %s %v: want progressing with a forecast", it.Stuck, it.Severity, codes(it))
	}
	f := it.Causes[0]
	if f.Severity != report.Info || !strings.HasPrefix(f.Summary, "forecast: once the pods are gone, 4 objects carrying widgets.acme.io/cleanup will be deleted, and no controller") ||
		f.About.Count != 4 || !slices.Equal(f.About.Finalizers, []string{"widgets.acme.io/cleanup"}) {
		t.Errorf("forecast: %s %q %+v", f.Severity, f.Summary, f.About)
	}

	live := &observed.Controllers{Workloads: []observed.Workload{{Kind: "Deployment", Namespace: "acme-system", Name: "acme-controller", Desired: 1, Ready: 1}}}
	if got := codes(Diagnose(build(live, pending)).Items[0]); !slices.Equal(got, []string{"WithinGracePeriod"}) {
		t.Errorf("controller alive: %v, want no forecast", got)
	}
	if got := codes(Diagnose(build(&observed.Controllers{}, map[string]int{"kubernetes.io/pvc-protection": 1})).Items[0]); !slices.Equal(got, []string{"WithinGracePeriod"}) {
		t.Errorf("only Kubernetes' own finalizers: %v, want no forecast", got)
	}
}

// On a release without ordered deletion the pod's claim is deleted with it
// and held by pvc-protection while the pod, in grace, still uses it; the
// controller says so in its *Remaining conditions. Everything left is
// progressing: the namespace is not stuck, the claim judged by its pod.
func TestNamespaceWithAClaimOfAPodInGrace(t *testing.T) {
	ns := terminatingNamespace(2*time.Minute, allConditions(
		nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: persistentvolumeclaims. has 1 resource instances, pods. has 1 resource instances"),
		nsCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: kubernetes.io/pvc-protection in 1 resource instances"),
	)...)
	s := snap(ns, node("node-1", corev1.ConditionTrue), lease("node-1", 5*time.Second))
	s.Server = &observed.Server{GitVersion: "v1.31.4"}
	pod := snap(terminatingPod(2*time.Minute, 300)).Targets[0]
	claim := heldObject("PersistentVolumeClaim", "persistentvolumeclaims", "data", 2*time.Minute, "kubernetes.io/pvc-protection")
	claim.ClaimUsers = []*observed.Target{pod}
	s.Targets[0].Contents = &observed.Contents{
		Counts:     byType(map[string]int{"pods": 1, "persistentvolumeclaims": 1}),
		Finalizers: map[string]int{"kubernetes.io/pvc-protection": 1},
		Held:       map[string][]*observed.Target{"kubernetes.io/pvc-protection": {claim}},
		Pods:       []*observed.Target{pod},
	}
	it := Diagnose(s).Items[0]
	if it.Stuck || it.Severity != report.Info || slices.Contains(codes(it), "NamespaceFinalizersRemaining") || slices.Contains(codes(it), "NamespaceContentRemaining") {
		t.Fatalf("stuck %t %s %v: want progressing, the conditions no blocker", it.Stuck, it.Severity, codes(it))
	}
	held := it.Causes[slices.Index(codes(it), "PVCInUse")]
	if len(held.BlockedBy) != 1 || !strings.HasPrefix(held.BlockedBy[0].Causes[0].Summary, "progressing: the 1 pod that uses the claim is being deleted") ||
		!strings.HasPrefix(held.Summary, "1 object in the namespace is held by finalizer kubernetes.io/pvc-protection (persistentvolumeclaim/data): ") {
		t.Errorf("the held claim: %q %+v", held.Summary, held.BlockedBy)
	}
}

// The removal by hand of a finalizer that holds a namespace's objects is
// for all of them, not the examples: one pipeline per type that may hold
// them, in that namespace (the types of the examples when they are all of
// them, else every type with objects being deleted, pods aside).
func TestNamespaceRemovalCoversEveryHeldObject(t *testing.T) {
	const f = "widgets.acme.io/cleanup"
	build := func(held int, counts, notDeleted map[string]int) report.Cause {
		s := snap(terminatingNamespace(10*time.Minute, allConditions()...))
		var examples []*observed.Target
		for _, name := range []string{"w1", "w2", "w3"}[:min(held, 3)] {
			w := widget(10*time.Minute, f)
			w.SetName(name)
			examples = append(examples, snap(w).Targets[0])
		}
		s.Targets[0].Contents = &observed.Contents{Counts: byType(counts), NotDeleted: byType(notDeleted),
			Finalizers: map[string]int{f: held}, Held: map[string][]*observed.Target{f: examples}}
		s.Controllers = &observed.Controllers{}
		it := Diagnose(s).Items[0]
		return it.Causes[slices.IndexFunc(it.Causes, func(c report.Cause) bool { return c.Code == "FinalizerPending" })]
	}
	for _, tc := range []struct {
		name               string
		held               int
		counts, notDeleted map[string]int
		types              []string
		from               string
	}{
		{"every one an example", 3, map[string]int{"widgets.example.com": 3}, nil, []string{"widgets.example.com"}, "from all 3 objects in the namespace"},
		{"more than the examples", 7, map[string]int{"widgets.example.com": 5, "gadgets.example.com": 2, "configmaps": 1, "pods": 1}, map[string]int{"configmaps": 1},
			[]string{"gadgets.example.com", "widgets.example.com"}, "from all 7 objects in the namespace"},
		{"a single one", 1, map[string]int{"widgets.example.com": 1}, nil, []string{"widgets.example.com"}, "from the 1 object in the namespace"},
	} {
		c := build(tc.held, tc.counts, tc.notDeleted)
		last := c.Remediation[len(c.Remediation)-1]
		want := removeFromEachOf(tc.types, "shop", f)
		if last.Command != want || last.RiskLevel != report.RiskHigh || !strings.Contains(last.Action, tc.from) {
			t.Errorf("%s: last step %+v, want the command %s", tc.name, last, want)
		}
		if !strings.HasPrefix(c.Remediation[0].Command, "kubectl get deployments,statefulsets,daemonsets -A --show-labels | grep -Fi -e acme") {
			t.Errorf("%s: first step %+v", tc.name, c.Remediation[0])
		}
	}
}
