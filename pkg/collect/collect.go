package collect

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "nodes", after: nesting, read: (*Collector).readNodes,
		permissions: []Permission{
			{Read: "`get` nodes (`list` nodes when more than 8 are needed)", UsedFor: "node liveness of a pod, and of a node another object held by a third-party finalizer names (`status.nodeName`, `spec.ownerNodeID`...)", Without: "`node alive` is `unknown`, the node read is under `skipped`, the top cause may be `DiagnosisIncomplete`"},
			{Read: "`get` leases in `kube-node-lease` (`list` when more than 8)", UsedFor: "when the kubelet last renewed", Without: "as above, for the Lease"},
		}})
	register(source{name: "events", after: nesting, read: (*Collector).readEvents,
		permissions: []Permission{
			{Read: "`list` events in the object's namespace (field selector `involvedObject.uid`; the whole namespace's events when more than 8 objects in it need theirs, or when several objects of a terminating namespace do; for more than 8 objects of one kind other than pods, in several namespaces, one list of that kind's events in every namespace, field selector `involvedObject.kind`), for pods, services and objects held by a third-party or drain finalizer; in `default` for cluster-scoped objects (PersistentVolumes, Nodes: their events are recorded there)", UsedFor: "FailedKillPod, ExceededGracePeriod, FailedPreStopHook, Killing; DeleteLoadBalancerFailed; VolumeFailedDelete; what a finalizer's controller says (its Warning events)", Without: "`skipped: events`; kill and sandbox failures are inferred from the pod's state only"},
		}})
}

// Collector reads evidence through read-only clients.
type Collector struct {
	Clients *kube.Clients
	// Now is the clock the snapshot is taken at.
	Now func() time.Time
	// Progress, when set, records what the collector reads now, for a
	// progress line.
	Progress *Progress
	// Kubelet: also read what the pods' kubelets report, through the node
	// proxy (--kubelet; nodes/proxy is a powerful permission, so opt-in).
	Kubelet bool
	// FullScan: list every type of a terminating namespace, even where its
	// controller's conditions name what is left (--full-scan).
	FullScan bool
	// Preflight: the objects found are targets whether or not they are
	// being deleted: what their deletion would run into is read as if it
	// had begun (kubectl terminating preflight).
	Preflight bool
	// Cascade is the propagation policy a preflight forecasts the deletions
	// with (--cascade; "" is Background).
	Cascade metav1.DeletionPropagation

	mu    sync.Mutex
	skips []report.Skip
	// record is what the run's scans saw (see scanRecord).
	record *scanRecord

	// The run's discovery, read once (see discover).
	discoverMu sync.Mutex
	discovered bool
	resources  []*metav1.APIResourceList

	// stageNeeds is what each target needed when the stage being read began
	// (see needs), and stageTargets every target then, nested ones
	// included; both written between stages only.
	stageNeeds   map[*observed.Target]targetNeeds
	stageTargets []*observed.Target

	// reads are the run's reads made once (readOnce), early holds a
	// sync.Once for each source whose early reads started, earlyStarted
	// counts them (early.go).
	reads, early sync.Map
	earlyStarted atomic.Int32
}

// Fresh is a collector with c's clients and settings and none of its run's
// state (skips, scan record, discovery), to read the cluster again; it
// prints no progress (list -w's rows are on the screen).
func (c *Collector) Fresh() *Collector {
	return &Collector{Clients: c.Clients, Now: c.Now, Kubelet: c.Kubelet}
}

// Skip records a run-wide read that could not be made.
func (c *Collector) Skip(s report.Skip) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skips = append(c.skips, s)
}

// skipTarget records reads about one target that could not be made; the
// collector's readers run concurrently.
func (c *Collector) skipTarget(t *observed.Target, sks ...report.Skip) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Skipped = append(t.Skipped, sks...)
}

// Skips returns the run-wide reads that could not be made so far.
func (c *Collector) Skips() []report.Skip {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]report.Skip(nil), c.skips...)
}

// Snapshot reads what the rules need about the terminating objects found
// (all of them, for a preflight).
func (c *Collector) Snapshot(ctx context.Context, found []Found) *observed.Snapshot {
	s := observed.New(c.Now())
	var kept []Found // of each target
	for _, f := range found {
		if !f.Terminating() && !c.Preflight {
			continue
		}
		t := &observed.Target{Ref: f.Ref(), Object: f.Object, Whole: f.Whole, Forecast: !f.Terminating()}
		if t.Forecast {
			t.Cascade = c.Cascade
		}
		s.Targets = append(s.Targets, t)
		kept = append(kept, f)
	}
	var pods, namespaces, others []*observed.Target
	var otherGVRs []schema.GroupVersionResource
	for i, t := range s.Targets {
		gvr := kept[i].GVR
		switch {
		case gvr.Group == "" && gvr.Resource == "pods":
			pods = append(pods, t)
		case isNamespaces(gvr):
			namespaces = append(namespaces, t)
		default:
			others, otherGVRs = append(others, t), append(otherGVRs, gvr)
		}
	}
	// The readers below ask each target's needs: the scan worked out most.
	c.stageNeeds = listedNeeds(kept, s.Targets)
	c.rememberNeeds(s)
	reading := c.track("the terminating objects", 0)
	c.readPods(ctx, pods, c.podCounts())
	c.readNamespaceTargets(ctx, namespaces)
	c.readObjects(ctx, others, otherGVRs)
	reading.finish()
	c.readSources(ctx, s)
	s.Skipped = c.Skips()
	return s
}

// readNamespaceTargets reads terminating namespaces in full (their
// conditions): a GET each for a few, one list for many (the admission reader
// takes their labels from them); a namespace already read whole is converted.
func (c *Collector) readNamespaceTargets(ctx context.Context, targets []*observed.Target) {
	var toRead []*observed.Target
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		if t.Whole && fromUnstructured(t, new(corev1.Namespace), func(v *corev1.Namespace) { t.Namespace = v }) {
			continue
		}
		toRead, names = append(toRead, t), append(names, t.Ref.Name)
	}
	found, errs := c.namespaces(ctx, names)
	for _, t := range toRead {
		if err := errs[t.Ref.Name]; err != nil {
			c.skipTarget(t, skipOf(t.Ref.Resource+"/"+t.Ref.Name, err))
			fromUnstructured(t, new(corev1.Namespace), func(v *corev1.Namespace) { t.Namespace = v })
			continue
		}
		t.Namespace = found[t.Ref.Name]
	}
}

// namespaces reads the named namespaces in full (a GET each for a few, one
// list for many), unless the scan read them all (shared.go); a name not
// found has a NotFound error.
func (c *Collector) namespaces(ctx context.Context, names []string) (map[string]*corev1.Namespace, map[string]error) {
	nameOf := func(n *corev1.Namespace) string { return n.Name }
	var found map[string]*corev1.Namespace
	errs := map[string]error{}
	if all, ok := c.listedNamespaces(ctx); ok {
		found = pick(all, names, nameOf)
	} else {
		api := c.Clients.Typed.CoreV1().Namespaces()
		found, errs = getOrList(ctx, c, names, api.Get, pages(api.List), nameOf)
	}
	for _, n := range names {
		if errs[n] == nil && found[n] == nil {
			errs[n] = apierrors.NewNotFound(corev1.Resource("namespaces"), n)
		}
	}
	return found, errs
}

// fromUnstructured gives a target the typed form of what was already read
// (the metadata at least), and says whether it could.
func fromUnstructured[T any](t *observed.Target, into *T, set func(*T)) bool {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t.Object.Object, into); err != nil {
		return false
	}
	set(into)
	return true
}

// readNodes reads, once per node, the Node and its Lease for every pod
// target and every node another target names.
func (c *Collector) readNodes(ctx context.Context, s *observed.Snapshot) {
	byNode, names := c.targetsByNode(s, false)
	// One Node and one Lease read per node, shared by all its targets; the two
	// reads at once.
	var (
		nodes               map[string]*corev1.Node
		leases              map[string]*coordinationv1.Lease
		nodeErrs, leaseErrs map[string]error
	)
	nodeAPI := c.Clients.Typed.CoreV1().Nodes()
	leaseAPI := c.Clients.Typed.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	concurrently(
		func() {
			nodes, nodeErrs = getOrList(ctx, c, names, nodeAPI.Get,
				pages(nodeAPI.List),
				func(n *corev1.Node) string { return n.Name })
		},
		func() {
			leases, leaseErrs = getOrList(ctx, c, names, leaseAPI.Get,
				pages(leaseAPI.List),
				func(l *coordinationv1.Lease) string { return l.Name })
		},
	)
	for _, name := range names {
		skip := func(sk report.Skip) {
			for _, t := range byNode[name] {
				c.skipTarget(t, sk)
			}
		}
		switch node, err := nodes[name], nodeErrs[name]; {
		case err != nil:
			skip(skipOf("nodes/"+name, err))
			continue
		case node == nil:
			s.MissingNodes[name] = true
			continue
		default:
			s.Nodes[name] = node
		}
		if err := leaseErrs[name]; err != nil {
			skip(skipOf("leases/"+name, err))
		} else if l := leases[name]; l != nil {
			s.Leases[name] = l
		}
	}
}

// targetsByNode groups the targets that need their node's evidence by the
// node: a pod's spec.nodeName ("" for unscheduled pods) and, unless
// podsOnly, the nodes another object names (observed.NodeReferences); with
// the node names sorted.
func (c *Collector) targetsByNode(s *observed.Snapshot, podsOnly bool) (map[string][]*observed.Target, []string) {
	byNode := map[string][]*observed.Target{}
	for _, t := range c.needing(s, diagnose.NodeEvidence) {
		if t.Pod != nil {
			byNode[t.Pod.Spec.NodeName] = append(byNode[t.Pod.Spec.NodeName], t)
			continue
		}
		if podsOnly {
			continue
		}
		for _, ref := range observed.NodeReferences(t.Object) { // any other kind: the nodes it names
			if !slices.Contains(byNode[ref.Node], t) {
				byNode[ref.Node] = append(byNode[ref.Node], t)
			}
		}
	}
	names := make([]string, 0, len(byNode))
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	return byNode, names
}

// readEvents reads the events about each pod target (the kubelet's Killing,
// FailedKillPod, ExceededGracePeriod...), service target (the cloud
// controller's DeleteLoadBalancerFailed) and volume target (the
// provisioner's VolumeFailedDelete), matched by involvedObject.uid.
func (c *Collector) readEvents(ctx context.Context, s *observed.Snapshot) {
	c.readEventsOf(ctx, s, c.needing(s, diagnose.EventEvidence))
}

// readEventsOf reads the events about each of targets.
func (c *Collector) readEventsOf(ctx context.Context, s *observed.Snapshot, targets []*observed.Target) {
	byNS := map[string][]*observed.Target{}
	var namespaces []string
	for _, t := range targets {
		ns := eventNamespace(t)
		if byNS[ns] == nil {
			namespaces = append(namespaces, ns)
		}
		byNS[ns] = append(byNS[ns], t)
	}
	// A field selector cannot ask for several objects at once: one small
	// list per object, in parallel; or, for many objects in a namespace, one
	// (paginated) list of the namespace's events.
	var single []*observed.Target
	var whole []string // the namespaces whose events are one list
	for _, ns := range namespaces {
		// A namespace being deleted has few events left, and often many
		// targets in it (its held objects): one list for all of them (read
		// early, startEarlyEvents, it serves even one).
		if !c.eventsRead(ns) && len(byNS[ns]) <= batchThreshold && !(len(byNS[ns]) > 1 && terminatingNamespace(s, ns)) {
			single = append(single, byNS[ns]...)
			continue
		}
		whole = append(whole, ns)
	}
	inWhole, wholeErrs := c.eventsOfNamespaces(ctx, whole)
	for i, ns := range whole {
		for _, t := range byNS[ns] {
			if wholeErrs[i] != nil {
				c.skipTarget(t, skipOf("events", wholeErrs[i]))
				continue
			}
			s.Events[t.Object.GetUID()] = inWhole[i][t.Object.GetUID()]
		}
	}
	single = c.readKindEvents(ctx, s, single)
	events := make([][]corev1.Event, len(single))
	errs := make([]error, len(single))
	c.parallel(len(single), func(i int) { events[i], errs[i] = c.objectEvents(ctx, single[i]) })
	for i, t := range single {
		if errs[i] != nil {
			c.skipTarget(t, skipOf("events", errs[i]))
			continue
		}
		s.Events[t.Object.GetUID()] = events[i]
	}
}

// objectEvents lists the events about t (field selector
// involvedObject.uid), once per run: an object nested in several places
// (a pod in its namespace's contents and among its owner's dependents) is
// as many targets.
func (c *Collector) objectEvents(ctx context.Context, t *observed.Target) ([]corev1.Event, error) {
	ns, uid := eventNamespace(t), string(t.Object.GetUID())
	return readOnce(c, "events/"+ns+"/involvedObject.uid="+uid, func() ([]corev1.Event, error) {
		return listAll[corev1.Event](ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid}, pages(c.Clients.Typed.CoreV1().Events(ns).List))
	})
}

// readKindEvents reads, for the objects of one kind (pods aside) that are
// more than batchThreshold over several namespaces (configmaps held by a
// finalizer in a hundred namespaces), the events of that kind in every
// namespace at once (field selector involvedObject.kind: controllers record
// few events about anything but pods), matched by involvedObject.uid: one
// list, not one each. It returns the objects left to read one by one.
func (c *Collector) readKindEvents(ctx context.Context, s *observed.Snapshot, targets []*observed.Target) []*observed.Target {
	byKind := map[string][]*observed.Target{}
	var kinds []string
	for _, t := range targets {
		if t.Pod == nil && t.Ref.Kind != "Pod" {
			if byKind[t.Ref.Kind] == nil {
				kinds = append(kinds, t.Ref.Kind)
			}
			byKind[t.Ref.Kind] = append(byKind[t.Ref.Kind], t)
		}
	}
	kinds = slices.DeleteFunc(kinds, func(k string) bool { return len(byKind[k]) <= batchThreshold })
	events := make([][]corev1.Event, len(kinds))
	errs := make([]error, len(kinds))
	c.parallel(len(kinds), func(i int) {
		events[i], errs[i] = listAll[corev1.Event](ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kinds[i]},
			pages(c.Clients.Typed.CoreV1().Events(metav1.NamespaceAll).List))
	})
	read := map[*observed.Target]bool{}
	for i, k := range kinds {
		byUID := byInvolvedUID(events[i])
		for _, t := range byKind[k] {
			read[t] = true
			if errs[i] != nil {
				c.skipTarget(t, skipOf("events", errs[i]))
				continue
			}
			s.Events[t.Object.GetUID()] = byUID[t.Object.GetUID()]
		}
	}
	return slices.DeleteFunc(targets, func(t *observed.Target) bool { return read[t] })
}

// terminatingNamespace reports whether a run's target is the namespace ns.
func terminatingNamespace(s *observed.Snapshot, ns string) bool {
	return slices.ContainsFunc(s.Targets, func(t *observed.Target) bool { return t.Namespace != nil && t.Ref.Name == ns })
}

// eventNamespace is where the events about a target are: its namespace, or
// default for a cluster-scoped object (where both event recorders put them).
func eventNamespace(t *observed.Target) string {
	if t.Ref.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return t.Ref.Namespace
}

// namespaceEvents reads every event of a namespace, by involvedObject.uid:
// one list a run, shared by whoever asks (the targets' events and the
// blockers' are read at the same time; a terminating namespace's, early).
func (c *Collector) namespaceEvents(ctx context.Context, ns string) (map[types.UID][]corev1.Event, error) {
	return readOnce(c, namespaceEventsKey(ns), func() (map[types.UID][]corev1.Event, error) {
		events, err := listAll[corev1.Event](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.CoreV1().Events(ns).List))
		if err != nil {
			return nil, err
		}
		return byInvolvedUID(events), nil
	})
}

func namespaceEventsKey(ns string) string { return "events/" + ns }

// eventsRead: namespace ns's events are read or being read (early, by
// startEarlyEvents).
func (c *Collector) eventsRead(ns string) bool {
	_, started := c.reads.Load(namespaceEventsKey(ns))
	return started
}

// eventsOfNamespaces is namespaceEvents of each namespace, read at once
// (fifty terminating namespaces read one after another took longer than
// the scan of every type); for many namespaces that hold most of the
// cluster's events, as the scan counted them, one list of every event.
func (c *Collector) eventsOfNamespaces(ctx context.Context, namespaces []string) ([]map[types.UID][]corev1.Event, []error) {
	unread := slices.DeleteFunc(slices.Clone(namespaces), c.eventsRead)
	if len(unread) > batchThreshold && c.eventsMostlyIn(unread) {
		c.readEveryEvent(ctx, unread)
	}
	byUID := make([]map[types.UID][]corev1.Event, len(namespaces))
	errs := make([]error, len(namespaces))
	c.parallel(len(namespaces), func(i int) { byUID[i], errs[i] = c.namespaceEvents(ctx, namespaces[i]) })
	return byUID, errs
}

// eventsMostlyIn reports whether the run's scan counted few events in the
// cluster beside those of namespaces: all of them fit in one page of a
// list, or they are no more than four times those of namespaces. A
// cluster-wide list of events costs one request then, not one a namespace.
func (c *Collector) eventsMostlyIn(namespaces []string) bool {
	events := schema.GroupResource{Resource: "events"}
	all, counted := c.recordedCount(events, "")
	if !counted {
		return false
	}
	in := 0
	for _, ns := range namespaces {
		n, _ := c.recordedCount(events, ns)
		in += n
	}
	return all <= max(pageSize, 4*in)
}

// readEveryEvent reads the events of every namespace in one list and keeps
// those of namespaces as namespaceEvents would have read them; when the
// list fails, namespaceEvents reads each namespace's.
func (c *Collector) readEveryEvent(ctx context.Context, namespaces []string) {
	events, err := listAll[corev1.Event](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.CoreV1().Events(metav1.NamespaceAll).List))
	if err != nil {
		return
	}
	inNamespace := make(map[string][]corev1.Event, len(namespaces))
	for _, ns := range namespaces {
		inNamespace[ns] = nil
	}
	for _, e := range events {
		if _, kept := inNamespace[e.Namespace]; kept {
			inNamespace[e.Namespace] = append(inNamespace[e.Namespace], e)
		}
	}
	for _, ns := range namespaces { // as namespaceEvents keeps them, unless it already has
		_, _ = readOnce(c, namespaceEventsKey(ns), func() (map[types.UID][]corev1.Event, error) { return byInvolvedUID(inNamespace[ns]), nil })
	}
}

// byInvolvedUID indexes events by the object they are about.
func byInvolvedUID(events []corev1.Event) map[types.UID][]corev1.Event {
	byUID := map[types.UID][]corev1.Event{}
	for _, e := range events {
		byUID[e.InvolvedObject.UID] = append(byUID[e.InvolvedObject.UID], e)
	}
	return byUID
}

// concurrently runs the readers at once and waits for all of them.
func concurrently(readers ...func()) {
	bounded(len(readers), len(readers), func(i int) { readers[i]() })
}

// parallel runs fn(0..n-1) with at most scanConcurrency at once; each call
// writes only its own slot, and the caller merges the results in order.
func (c *Collector) parallel(n int, fn func(i int)) {
	bounded(scanConcurrency, n, fn)
}

// bounded runs fn(0..n-1) with at most limit at once; a panic in one
// reaches the caller (parallel.Run).
func bounded(limit, n int, fn func(i int)) {
	parallel.Run(collectorWork, limit, n, fn)
}

// collectorWork names the collector's goroutines in a panic raised again.
const collectorWork = "the collector"
