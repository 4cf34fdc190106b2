package collect

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// readTyped reads the full object of a target (a scan only has its
// metadata); when it cannot, it falls back to what was already read. A
// target read whole already is converted, not read again.
func readTyped[T any](ctx context.Context, t *observed.Target, get func(context.Context, string, metav1.GetOptions) (*T, error), set func(*T)) {
	if t.Whole && fromUnstructured(t, new(T), set) {
		return
	}
	v, err := get(ctx, t.Ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Skipped = append(t.Skipped, skipOf(t.Ref.Resource+"/"+t.Ref.Name, err))
		fromUnstructured(t, new(T), set)
		return
	}
	set(v)
}

// typedReaders read the full object of the targets whose rules need more
// than metadata, by resource; a source that needs another kind registers
// its reader in its own file (registerTyped).
var typedReaders = map[schema.GroupResource]func(c *Collector, ctx context.Context, t *observed.Target){}

func registerTyped(gr schema.GroupResource, read func(c *Collector, ctx context.Context, t *observed.Target)) {
	typedReaders[gr] = read
}

// Pods, and the kinds behind the storage and load-balancer finalizers.
func init() {
	registerTyped(corev1.Resource("pods"), func(c *Collector, ctx context.Context, t *observed.Target) {
		readTyped(ctx, t, c.Clients.Typed.CoreV1().Pods(t.Ref.Namespace).Get, func(v *corev1.Pod) { t.Pod = v })
	})
	registerTyped(corev1.Resource("persistentvolumeclaims"), func(c *Collector, ctx context.Context, t *observed.Target) {
		readTyped(ctx, t, c.Clients.Typed.CoreV1().PersistentVolumeClaims(t.Ref.Namespace).Get, func(v *corev1.PersistentVolumeClaim) { t.Claim = v })
	})
	registerTyped(corev1.Resource("persistentvolumes"), func(c *Collector, ctx context.Context, t *observed.Target) {
		readTyped(ctx, t, c.Clients.Typed.CoreV1().PersistentVolumes().Get, func(v *corev1.PersistentVolume) { t.Volume = v })
	})
	registerTyped(corev1.Resource("services"), func(c *Collector, ctx context.Context, t *observed.Target) {
		readTyped(ctx, t, c.Clients.Typed.CoreV1().Services(t.Ref.Namespace).Get, func(v *corev1.Service) { t.Service = v })
	})
	registerTyped(storagev1.Resource("volumeattachments"), func(c *Collector, ctx context.Context, t *observed.Target) {
		readTyped(ctx, t, c.Clients.Typed.StorageV1().VolumeAttachments().Get, func(v *storagev1.VolumeAttachment) { t.Attachments = []storagev1.VolumeAttachment{*v} })
	})
}

// readObject reads the typed form of a target whose kind has a typed
// reader, and any other in full when its rules need its status.
func (c *Collector) readObject(ctx context.Context, t *observed.Target, gvr schema.GroupVersionResource) {
	if _, typed := typedReaders[gvr.GroupResource()]; typed || c.needs(t).Has(diagnose.ObjectEvidence) {
		c.readInFull(ctx, t, gvr)
	}
}

// readObjects is readObject for each target. The objects of one type read
// in full for their status (not a typed reader's) that are many, and a good
// part of that type's objects in their scope as the run's scan counted them
// (thousands of an operator's objects its controller wrote since their
// deletion), are one paginated list of the type in full, not a GET each.
func (c *Collector) readObjects(ctx context.Context, targets []*observed.Target, gvrs []schema.GroupVersionResource) {
	type batch struct {
		gvr     schema.GroupVersionResource
		ns      string // "" when they are in several namespaces, or cluster-scoped
		indices []int  // of its objects in targets
	}
	var single []int
	batches := map[schema.GroupVersionResource]*batch{}
	var order []*batch
	for i, t := range targets {
		gvr := gvrs[i]
		if _, typed := typedReaders[gvr.GroupResource()]; typed || t.Whole || metadataOnly[gvr.GroupResource()] || !c.needs(t).Has(diagnose.ObjectEvidence) {
			single = append(single, i)
			continue
		}
		b := batches[gvr]
		if b == nil {
			b = &batch{gvr: gvr, ns: t.Ref.Namespace}
			batches[gvr], order = b, append(order, b)
		}
		if b.ns != t.Ref.Namespace {
			b.ns = ""
		}
		b.indices = append(b.indices, i)
	}
	var lists []*batch
	for _, b := range order {
		if n, counted := c.recordedCount(b.gvr.GroupResource(), b.ns); len(b.indices) > batchThreshold && counted && n <= 4*len(b.indices) {
			lists = append(lists, b)
			continue
		}
		single = append(single, b.indices...)
	}
	var again []*observed.Target
	var againGVRs []schema.GroupVersionResource
	var mu sync.Mutex
	c.parallel(len(lists), func(i int) {
		b := lists[i]
		items, err := listAll[unstructured.Unstructured](ctx, metav1.ListOptions{}, pages(c.Clients.Dynamic.Resource(b.gvr).Namespace(b.ns).List))
		byUID := make(map[types.UID]*unstructured.Unstructured, len(items))
		for j := range items {
			byUID[items[j].GetUID()] = &items[j]
		}
		mu.Lock()
		defer mu.Unlock()
		for _, j := range b.indices {
			t := targets[j]
			if u := byUID[t.Object.GetUID()]; err == nil && u != nil {
				t.Object = u
				continue
			}
			again, againGVRs = append(again, t), append(againGVRs, b.gvr) // the list failed, or the object is gone: its GET says which
		}
	})
	c.parallel(len(single), func(i int) { c.readObject(ctx, targets[single[i]], gvrs[single[i]]) })
	c.parallel(len(again), func(i int) { c.readWhole(ctx, again[i], againGVRs[i]) })
}

// readInFull reads a target in full: its typed form, or its unstructured
// one, but a Secret's or a ConfigMap's data (metadataOnly).
func (c *Collector) readInFull(ctx context.Context, t *observed.Target, gvr schema.GroupVersionResource) {
	if read, ok := typedReaders[gvr.GroupResource()]; ok {
		read(c, ctx, t)
		return
	}
	if !metadataOnly[gvr.GroupResource()] && !t.Whole {
		c.readWhole(ctx, t, gvr)
	}
}

// readWhole reads in full an object a scan found (its metadata only), for
// its status; when it cannot, the metadata stays. Never a Secret or a
// ConfigMap (metadataOnly): their data is not read.
func (c *Collector) readWhole(ctx context.Context, t *observed.Target, gvr schema.GroupVersionResource) {
	u, err := c.get(ctx, &meta.RESTMapping{Resource: gvr}, t.Ref.Namespace != "", t.Ref.Namespace, t.Ref.Name)
	switch {
	case err != nil:
		c.skipTarget(t, skipOf(t.Ref.Resource+"/"+t.Ref.Name, err))
	case u.GetUID() == t.Object.GetUID():
		t.Object = u
	}
}

// readPod reads a pod target in full.
func (c *Collector) readPod(ctx context.Context, t *observed.Target) {
	c.readObject(ctx, t, schema.GroupVersionResource{Version: "v1", Resource: "pods"})
}

// readPods reads pod targets in full. In a namespace where many pods are
// terminating and they are a good part of its pods (podCounts, from a scan),
// one paginated list of the namespace's pods replaces a GET of each.
func (c *Collector) readPods(ctx context.Context, targets []*observed.Target, podCounts map[string]int) {
	byNS := map[string][]*observed.Target{}
	var namespaces []string
	var single []*observed.Target
	for _, t := range targets {
		if t.Whole {
			single = append(single, t) // converted, not read again
			continue
		}
		if byNS[t.Ref.Namespace] == nil {
			namespaces = append(namespaces, t.Ref.Namespace)
		}
		byNS[t.Ref.Namespace] = append(byNS[t.Ref.Namespace], t)
	}
	for _, ns := range namespaces {
		ts := byNS[ns]
		if len(ts) <= batchThreshold || podCounts[ns] == 0 || podCounts[ns] > 4*len(ts) {
			single = append(single, ts...)
			continue
		}
		all, err := c.namespacePods(ctx, ns)
		for _, t := range ts {
			if p := all[t.Object.GetUID()]; err == nil && p != nil {
				t.Pod = p
				continue
			}
			single = append(single, t) // the list failed, or the pod is gone: its GET says which
		}
	}
	c.parallel(len(single), func(i int) { c.readPod(ctx, single[i]) })
}

// namespacePods lists a namespace's pods in full, by UID.
func (c *Collector) namespacePods(ctx context.Context, ns string) (map[types.UID]*corev1.Pod, error) {
	pods, err := listAll[corev1.Pod](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.CoreV1().Pods(ns).List))
	out := make(map[types.UID]*corev1.Pod, len(pods))
	for i := range pods {
		out[pods[i].UID] = &pods[i]
	}
	return out, err
}

// readVolumeAttachments gives each PersistentVolume target the
// VolumeAttachments of that volume (external-attacher finalizers).
func (c *Collector) readVolumeAttachments(ctx context.Context, s *observed.Snapshot) {
	needing := c.topNeeding(s, diagnose.AttachmentEvidence)
	c.attachVolumes(ctx, needing)
	c.readAttacherLeases(ctx, s, needing)
}

// attachVolumes gives each volume target its VolumeAttachments.
func (c *Collector) attachVolumes(ctx context.Context, needing []*observed.Target) {
	var volumes []*observed.Target
	for _, t := range needing {
		if t.Volume != nil {
			volumes = append(volumes, t)
		}
	}
	if len(volumes) == 0 {
		return
	}
	attachments, err := listAll[storagev1.VolumeAttachment](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.StorageV1().VolumeAttachments().List))
	if err != nil {
		for _, t := range volumes {
			c.skipTarget(t, skipOf("list volumeattachments", err))
		}
		return
	}
	for _, t := range volumes {
		for _, va := range attachments {
			if pv := va.Spec.Source.PersistentVolumeName; pv != nil && *pv == t.Volume.Name {
				t.Attachments = append(t.Attachments, va)
			}
		}
	}
}

// readAttacherLeases reads, for each CSI driver whose attachments the
// targets have, its external-attacher's leader-election Lease, wherever the
// attacher runs: one list of every namespace by the Lease's name. A live
// attacher renews it every few seconds.
func (c *Collector) readAttacherLeases(ctx context.Context, s *observed.Snapshot, needing []*observed.Target) {
	drivers := map[string][]*observed.Target{}
	for _, t := range needing {
		for _, va := range t.Attachments {
			drivers[va.Spec.Attacher] = append(drivers[va.Spec.Attacher], t)
		}
	}
	for driver, targets := range drivers {
		if driver == "" {
			continue
		}
		lease, failed := c.leaderLease(ctx, observed.AttacherLeaseName(driver))
		if failed != nil {
			for _, t := range targets {
				c.skipTarget(t, *failed)
			}
			continue
		}
		s.AttacherLeases[driver] = lease
	}
}

// leaderLease finds a leader-election Lease by its name in every namespace
// (one list, by field selector), reduced to what the rules read: where it
// is, and its spec. Nil when there is none; the read that failed, if it did.
func (c *Collector) leaderLease(ctx context.Context, name string) (*coordinationv1.Lease, *report.Skip) {
	leases, err := c.Clients.Typed.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		failed := skipOf("list leases named "+name, err)
		return nil, &failed
	}
	if len(leases.Items) == 0 {
		return nil, nil
	}
	l := leases.Items[0]
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace}, Spec: l.Spec}, nil
}

// readClaimUsers finds, for each claim target and each claim a namespace's
// scan found held, the pods that reference it (what the PVC protection
// controller waits for): one pod list per namespace. It reads the targets
// and their scans only: the other nesting sources of its stage write the
// rest of the graph.
func (c *Collector) readClaimUsers(ctx context.Context, s *observed.Snapshot) {
	pods := map[string][]corev1.Pod{}
	for _, t := range targetsAndHeld(s) {
		if t.Ref.Resource != "persistentvolumeclaims" || t.ClaimUsers != nil || !c.needs(t).Has(diagnose.ClaimUserEvidence) {
			continue
		}
		ns := t.Ref.Namespace
		if _, read := pods[ns]; !read {
			list, err := listAll[corev1.Pod](ctx, metav1.ListOptions{}, pages(c.Clients.Typed.CoreV1().Pods(ns).List))
			if err != nil {
				c.skipTarget(t, skipOf("list pods in namespace "+ns, err))
				continue
			}
			pods[ns] = list
		}
		t.ClaimUsers = []*observed.Target{}
		for i := range pods[ns] {
			if p := &pods[ns][i]; usesClaim(p, t.Ref.Name) {
				t.ClaimUsers = append(t.ClaimUsers, podTarget(p))
			}
		}
	}
}

// targetsAndHeld are the targets and the objects their scans found held by
// a finalizer: what a nesting source after the scans reads about (the
// other nesting sources of its stage write the rest of the graph).
func targetsAndHeld(s *observed.Snapshot) []*observed.Target {
	var out []*observed.Target
	for _, t := range s.Targets {
		out = append(out, t)
		if t.Contents != nil {
			for _, f := range slices.Sorted(maps.Keys(t.Contents.Held)) {
				out = append(out, t.Contents.Held[f]...)
			}
		}
	}
	return out
}

// usesClaim reports whether a pod references the claim, directly or as the
// claim generated for one of its ephemeral volumes.
func usesClaim(p *corev1.Pod, claim string) bool {
	return slices.Contains(claimNames(p), claim)
}

// podTarget makes a nested target of a pod read in full.
func podTarget(p *corev1.Pod) *observed.Target {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		m = map[string]any{}
	}
	obj := &unstructured.Unstructured{Object: m}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	obj.SetName(p.Name)
	obj.SetNamespace(p.Namespace)
	return &observed.Target{Ref: Found{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Object: obj}.Ref(), Object: obj, Pod: p}
}

// owned is an object that names an owner in its ownerReferences.
type owned struct {
	item    *metav1.PartialObjectMetadata
	mapping *meta.RESTMapping
}

// readDependents finds, for each target whose rules need them (held by
// foregroundDeletion or orphan), the objects whose ownerReferences name it,
// as the garbage collector would: every listable type in the owner's
// namespace (every namespace for a cluster-scoped owner), metadata only, one
// scan per scope, or none when the run's scan already listed every type there
// (list -A, why -A, -n NS: its record kept the dependents; only the types it
// could not list are listed again, in the owner's scope). A dependent that
// itself waits on its own dependents gets them too, from the same scan,
// depth-bounded and cycle-safe.
func (c *Collector) readDependents(ctx context.Context, s *observed.Snapshot) {
	owners := map[string][]*observed.Target{} // by namespace; "" is cluster-wide
	for _, t := range c.topNeeding(s, diagnose.DependentEvidence) {
		owners[t.Ref.Namespace] = append(owners[t.Ref.Namespace], t)
	}
	var pods []*observed.Target // terminating dependents, to read in full
	for ns, targets := range owners {
		scope := Scope{Namespace: ns, AllNamespaces: ns == ""}
		mappings, err := c.ListableMappings(scope)
		if err != nil {
			for _, t := range targets {
				c.skipTarget(t, skipOf("discovery", err))
			}
			continue
		}
		if ns != "" {
			mappings = slices.DeleteFunc(mappings, func(m *meta.RESTMapping) bool { return m.Scope.Name() != meta.RESTScopeNameNamespace })
		}
		children, unread, recorded := c.recordedDependents(ns, mappings, targets)
		if !recorded {
			children, unread = map[types.UID][]owned{}, mappings
		}
		var skips []report.Skip
		if len(unread) > 0 {
			skips = c.eachObject(ctx, scope, "for dependents", unread, func(m *meta.RESTMapping, item *metav1.PartialObjectMetadata) {
				if len(item.OwnerReferences) == 0 {
					return
				}
				kept := keepOwned(item, m) // the page is not kept
				for _, ref := range item.OwnerReferences {
					children[ref.UID] = append(children[ref.UID], kept)
				}
			})
		}
		for _, deps := range children {
			sortOwned(deps)
		}
		for _, t := range targets {
			c.skipTarget(t, skips...)
			pods = append(pods, c.attachDependents(ctx, t, children, len(skips) == 0, 0, map[types.UID]bool{t.Object.GetUID(): true})...)
		}
	}
	c.readDependentPods(ctx, s, pods)
}

// readDependentPods reads in full the pods found as dependents that are
// terminating, or that a foreground forecast would delete.
// A pod the run already read as a target of its own (list -A, why -A: every
// terminating pod is one) is not read again; the others are read as pod
// targets are, a list of their namespace for many.
func (c *Collector) readDependentPods(ctx context.Context, s *observed.Snapshot, pods []*observed.Target) {
	read := map[types.UID]*corev1.Pod{}
	c.mu.Lock() // skips are written under it
	for _, t := range s.Targets {
		if t.Pod != nil && !slices.ContainsFunc(t.Skipped, func(sk report.Skip) bool { return sk.Check == t.Ref.Resource+"/"+t.Ref.Name }) {
			read[t.Object.GetUID()] = t.Pod // its read did not fail
		}
	}
	c.mu.Unlock()
	var unread []*observed.Target
	for _, d := range pods {
		if p := read[d.Object.GetUID()]; p != nil {
			d.Pod = p
			continue
		}
		unread = append(unread, d)
	}
	c.readPods(ctx, unread, c.podCounts())
}

// attachDependents gives t its dependents from the scan, and recurses into
// those that wait on their own dependents. It returns the terminating pods
// among them, which the caller reads in full.
func (c *Collector) attachDependents(ctx context.Context, t *observed.Target, children map[types.UID][]owned, complete bool, depth int, visited map[types.UID]bool) (pods []*observed.Target) {
	if !complete {
		return nil // not read: a partial list of dependents could blame the wrong ones
	}
	t.Dependents = []*observed.Target{}
	for _, o := range children[t.Object.GetUID()] {
		d := metadataTarget(o.item, o.mapping)
		t.Dependents = append(t.Dependents, d)
		if t.Forecast && t.Cascade == metav1.DeletePropagationForeground && d.Object.GetDeletionTimestamp() == nil && d.BlocksOwnerDeletion(t.Object.GetUID()) {
			// What the forecast owner would wait for: the garbage collector
			// deletes it in the foreground too.
			d.Forecast, d.Cascade = true, metav1.DeletePropagationForeground
		}
		if d.Ref.Resource == "pods" && (d.Object.GetDeletionTimestamp() != nil || d.Forecast) {
			pods = append(pods, d)
		}
		uid := d.Object.GetUID()
		if visited[uid] || !c.needs(d).Has(diagnose.DependentEvidence) {
			continue
		}
		if depth+1 >= observed.MaxDepth {
			c.skipTarget(d, report.Skip{Check: "dependents of " + QualifiedResource(o.mapping.Resource) + "/" + d.Ref.Name, Reason: observed.SkipDepth,
				Detail: fmt.Sprintf("the chain of owners waiting on their dependents is deeper than %d levels: not followed from here", observed.MaxDepth)})
			continue
		}
		visited[uid] = true
		pods = append(pods, c.attachDependents(ctx, d, children, complete, depth+1, visited)...)
	}
	return pods
}

// sortOwned orders dependents by type, namespace and name: the order of a
// type's list, whichever of the lists, run at once, ended first.
func sortOwned(deps []owned) {
	slices.SortStableFunc(deps, func(a, b owned) int {
		return cmp.Or(strings.Compare(QualifiedResource(a.mapping.Resource), QualifiedResource(b.mapping.Resource)),
			strings.Compare(a.item.Namespace, b.item.Namespace), strings.Compare(a.item.Name, b.item.Name))
	})
}
