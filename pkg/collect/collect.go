package collect

import (
	"context"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// Collector reads evidence through read-only clients.
type Collector struct {
	Clients *kube.Clients
	// Now is the clock the snapshot is taken at.
	Now func() time.Time
	// Progress, when set, hears about scans that take more than a second.
	Progress func(ScanProgress)

	mu    sync.Mutex
	skips []report.Skip

	// The run's discovery, read once (see discover).
	discoverMu sync.Mutex
	discovered bool
	resources  []*metav1.APIResourceList
}

// Skip records a run-wide read that could not be made.
func (c *Collector) Skip(s report.Skip) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skips = append(c.skips, s)
}

// skipTarget records reads about one target that could not be made; the
// collector's readers run concurrently.
func (c *Collector) skipTarget(t *snapshot.Target, sks ...report.Skip) {
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

// Snapshot reads what the rules need about the terminating objects found.
func (c *Collector) Snapshot(ctx context.Context, found []Found) *snapshot.Snapshot {
	s := snapshot.New(c.Now())
	var gvrs []schema.GroupVersionResource
	for _, f := range found {
		if !f.Terminating() {
			continue
		}
		s.Targets = append(s.Targets, &snapshot.Target{Ref: f.Ref(), Object: f.Object})
		gvrs = append(gvrs, f.GVR)
	}
	c.parallel(len(s.Targets), func(i int) { c.readObject(ctx, s.Targets[i], gvrs[i]) })
	// First what nests more targets (a namespace's pods, an owner's
	// dependents, a claim's pods, a CRD's instances), then what the rules read
	// about all of them. The readers of a stage run at once: each writes its
	// own part of the snapshot (targets' skips go through skipTarget).
	concurrently(
		func() { c.readNamespaceContents(ctx, s) },
		func() { c.readDependents(ctx, s) },
		func() { c.readClaimUsers(ctx, s) },
	)
	c.readCRDs(ctx, s) // after the namespace scan: its errors name the CRDs to read
	concurrently(
		func() { c.readCRDInstances(ctx, s) },
		func() { c.readVolumeAttachments(ctx, s) },
		func() { c.readAPIServices(ctx, s) },
	)
	concurrently(
		func() { c.readNodes(ctx, s) },
		func() { c.readEvents(ctx, s) },
		func() { c.readAdmission(ctx, s) },
		func() { c.readVolumes(ctx, s) },
		func() { c.readDRA(ctx, s) },
		func() { c.readControllers(ctx, s) },
	)
	s.Skipped = c.Skips()
	return s
}

// fromUnstructured falls back to what was already read (the metadata at least).
func fromUnstructured[T any](t *snapshot.Target, into *T, set func(*T)) {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t.Object.Object, into); err == nil {
		set(into)
	}
}

// readNodes reads, once per node, the Node and its Lease for every pod target.
// nodeRead is what was read about one node.
type nodeRead struct {
	node  *corev1.Node
	lease *coordinationv1.Lease
	skips []report.Skip
}

// nodeListThreshold: above this many nodes, listing all Nodes and Leases
// (paginated) costs fewer requests than a GET of each.
const nodeListThreshold = 8

// listNodes fills reads (one per name) from a list of every Node and Lease.
func (c *Collector) listNodes(ctx context.Context, names []string, reads []nodeRead) {
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	skipAllReads := func(sk report.Skip) {
		for i := range reads {
			reads[i].skips = append(reads[i].skips, sk)
		}
	}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		nodes, err := c.Clients.Typed.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			skipAllReads(skipOf("list nodes", err))
			return
		}
		for i := range nodes.Items {
			if j, ok := index[nodes.Items[i].Name]; ok {
				reads[j].node = &nodes.Items[i]
			}
		}
		if opts.Continue = nodes.Continue; opts.Continue == "" {
			break
		}
	}
	opts = metav1.ListOptions{Limit: pageSize}
	for {
		leases, err := c.Clients.Typed.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, opts)
		if err != nil {
			skipAllReads(skipOf("list leases in "+corev1.NamespaceNodeLease, err))
			return
		}
		for i := range leases.Items {
			if j, ok := index[leases.Items[i].Name]; ok {
				reads[j].lease = &leases.Items[i]
			}
		}
		if opts.Continue = leases.Continue; opts.Continue == "" {
			return
		}
	}
}

func (c *Collector) readNodes(ctx context.Context, s *snapshot.Snapshot) {
	podsByNode := map[string][]*snapshot.Target{}
	for _, t := range s.AllTargets() {
		if t.Pod != nil && t.Pod.Spec.NodeName != "" {
			podsByNode[t.Pod.Spec.NodeName] = append(podsByNode[t.Pod.Spec.NodeName], t)
		}
	}
	names := make([]string, 0, len(podsByNode))
	for n := range podsByNode {
		names = append(names, n)
	}
	sort.Strings(names)
	// One Node and one Lease read per node, shared by all its pods: a GET
	// each, in parallel, or for many nodes one list of each.
	reads := make([]nodeRead, len(names))
	if len(names) > nodeListThreshold {
		c.listNodes(ctx, names, reads)
	} else {
		c.parallel(len(names), func(i int) {
			r := &reads[i]
			node, err := c.Clients.Typed.CoreV1().Nodes().Get(ctx, names[i], metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return
			case err != nil:
				r.skips = append(r.skips, skipOf("nodes/"+names[i], err))
				return
			}
			r.node = node
			lease, err := c.Clients.Typed.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, names[i], metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				r.skips = append(r.skips, skipOf("leases/"+names[i], err))
			default:
				r.lease = lease
			}
		})
	}
	for i, name := range names {
		r := reads[i]
		for _, sk := range r.skips {
			for _, t := range podsByNode[name] {
				c.skipTarget(t, sk)
			}
		}
		switch {
		case r.node != nil:
			s.Nodes[name] = r.node
			if r.lease != nil {
				s.Leases[name] = r.lease
			}
		case len(r.skips) == 0:
			s.MissingNodes[name] = true
		}
	}
}

// readEvents reads the events about each pod target (the kubelet's Killing,
// FailedKillPod, ExceededGracePeriod...) and service target (the cloud
// controller's DeleteLoadBalancerFailed), matched by involvedObject.uid.
func (c *Collector) readEvents(ctx context.Context, s *snapshot.Snapshot) {
	var targets []*snapshot.Target
	for _, t := range s.AllTargets() {
		if t.Pod != nil || t.Service != nil {
			targets = append(targets, t)
		}
	}
	// A field selector cannot ask for several objects at once: one small list
	// per object, in parallel.
	events := make([][]corev1.Event, len(targets))
	errs := make([]error, len(targets))
	c.parallel(len(targets), func(i int) {
		list, err := c.Clients.Typed.CoreV1().Events(targets[i].Ref.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(targets[i].Object.GetUID()),
		})
		if err != nil {
			errs[i] = err
			return
		}
		events[i] = list.Items
	})
	for i, t := range targets {
		if errs[i] != nil {
			c.skipTarget(t, skipOf("events", errs[i]))
			continue
		}
		s.Events[t.Object.GetUID()] = events[i]
	}
}

// concurrently runs the readers at once and waits for all of them.
func concurrently(readers ...func()) {
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(r)
	}
	wg.Wait()
}

// parallel runs fn(0..n-1) with at most scanConcurrency at once; each call
// writes only its own slot, and the caller merges the results in order.
func (c *Collector) parallel(n int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(scanConcurrency)
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	_ = g.Wait()
}
