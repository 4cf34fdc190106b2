package collect

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// Collector reads evidence through read-only clients.
type Collector struct {
	Clients *kube.Clients
	// Now is the clock the snapshot is taken at.
	Now func() time.Time

	mu    sync.Mutex
	skips []report.Skip

	// The run's discovery, read once (see discover).
	discovered bool
	resources  []*metav1.APIResourceList
}

// Skip records a run-wide read that could not be made.
func (c *Collector) Skip(s report.Skip) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skips = append(c.skips, s)
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
	for _, f := range found {
		if !f.Terminating() {
			continue
		}
		t := &snapshot.Target{Ref: f.Ref(), Object: f.Object}
		c.readObject(ctx, t, f.GVR)
		s.Targets = append(s.Targets, t)
	}
	c.readNamespaceContents(ctx, s)
	c.readDependents(ctx, s)
	c.readClaimUsers(ctx, s)
	c.readVolumeAttachments(ctx, s)
	c.readCRDs(ctx, s)
	c.readCRDInstances(ctx, s)
	c.readAPIServices(ctx, s)
	c.readNodes(ctx, s)
	c.readEvents(ctx, s)
	c.readAdmission(ctx, s)
	c.readVolumes(ctx, s)
	c.readDRA(ctx, s)
	c.readControllers(ctx, s)
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
	for _, name := range names {
		node, err := c.Clients.Typed.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s.MissingNodes[name] = true
			continue
		case err != nil:
			skipAll(podsByNode[name], skipOf("nodes/"+name, err))
			continue
		}
		s.Nodes[name] = node
		lease, err := c.Clients.Typed.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			skipAll(podsByNode[name], skipOf("leases/"+name, err))
		default:
			s.Leases[name] = lease
		}
	}
}

func skipAll(targets []*snapshot.Target, sk report.Skip) {
	for _, t := range targets {
		t.Skipped = append(t.Skipped, sk)
	}
}

// readEvents reads the events about each pod target (the kubelet's Killing,
// FailedKillPod, ExceededGracePeriod...) and service target (the cloud
// controller's DeleteLoadBalancerFailed), matched by involvedObject.uid.
func (c *Collector) readEvents(ctx context.Context, s *snapshot.Snapshot) {
	for _, t := range s.AllTargets() {
		if t.Pod == nil && t.Service == nil {
			continue
		}
		uid := t.Object.GetUID()
		list, err := c.Clients.Typed.CoreV1().Events(t.Ref.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(uid),
		})
		if err != nil {
			t.Skipped = append(t.Skipped, skipOf("events", err))
			continue
		}
		s.Events[uid] = list.Items
	}
}
