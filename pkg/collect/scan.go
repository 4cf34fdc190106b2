package collect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Scope is where to look.
type Scope struct {
	Namespace     string
	AllNamespaces bool
	LabelSelector string
	// FieldSelector is passed to the server, for the types that support it
	// (spec.nodeName for pods).
	FieldSelector string
}

// filtered says whether the scope sees only part of what it lists.
func (s Scope) filtered() bool { return s.LabelSelector != "" || s.FieldSelector != "" }

const (
	// scanConcurrency bounds the lists in flight during a scan.
	scanConcurrency = 16
	// pageSize is the list page size; the apiserver serves large pages from
	// its watch cache cheaply, and paging bounds our memory.
	pageSize = 500
)

// ListableMappings lists every resource type in scope that supports list.
// Groups that fail discovery are recorded as skips, not returned as an error:
// the scan carries on with what could be discovered.
func (c *Collector) ListableMappings(scope Scope) ([]*meta.RESTMapping, error) {
	lists, err := c.discover()
	if err != nil {
		return nil, err
	}
	var out []*meta.RESTMapping
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			isNamespaces := gv.Group == "" && r.Name == "namespaces"
			if !r.Namespaced && !scope.AllNamespaces && !isNamespaces {
				continue
			}
			scopeName := meta.RESTScopeRoot
			if r.Namespaced {
				scopeName = meta.RESTScopeNamespace
			}
			out = append(out, &meta.RESTMapping{
				Resource:         gv.WithResource(r.Name),
				GroupVersionKind: gv.WithKind(r.Kind),
				Scope:            scopeName,
			})
		}
	}
	return out, nil
}

// discover reads the server's preferred resources once per run: invalidated
// first (the on-disk cache lies), failing groups recorded once as skips.
func (c *Collector) discover() ([]*metav1.APIResourceList, error) {
	c.discoverMu.Lock()
	defer c.discoverMu.Unlock()
	if c.discovered {
		return c.resources, nil
	}
	defer c.track("the server's types (discovery)", 0).finish()
	c.Clients.Discovery.Invalidate()
	lists, err := c.Clients.Discovery.ServerPreferredResources()
	if err != nil {
		failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err)
		if !ok {
			return nil, err
		}
		var skips []report.Skip
		for gv, gerr := range failed {
			skips = append(skips, report.Skip{Check: "discovery " + gv.String(), Reason: report.SkipDiscovery, Detail: gerr.Error()})
		}
		sort.Slice(skips, func(i, j int) bool { return skips[i].Check < skips[j].Check })
		for _, sk := range skips {
			c.Skip(sk)
		}
	}
	c.discovered, c.resources = true, lists
	return lists, nil
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// Scan lists the given types in scope with the metadata client (paginated,
// concurrent) and keeps the objects that have a deletionTimestamp. Types that
// cannot be listed become skips on the collector; if none can be, it fails.
func (c *Collector) Scan(ctx context.Context, scope Scope, mappings []*meta.RESTMapping) ([]Found, error) {
	var (
		mu       sync.Mutex
		found    []Found
		failed   []report.Skip
		listed   int
		firstErr error
	)
	phase := "the cluster"
	if !scope.AllNamespaces {
		phase = "namespace " + scope.Namespace
	}
	tr := c.track(phase, len(mappings))
	defer tr.finish()
	c.recordScanStart(scope, mappings)
	mappings = scanOrder(mappings, scope)
	// A type that cannot be listed is a skip: nothing cancels the others.
	c.parallel(len(mappings), func(i int) {
		m := mappings[i]
		items, err := c.listTerminating(ctx, m, scope, tr)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			sk := skipOf("list "+QualifiedResource(m.Resource), err)
			sk.Resource = m.Resource
			c.Skip(sk)
			failed = append(failed, sk)
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		listed++
		found = append(found, items...)
	})
	if listed == 0 && firstErr != nil {
		// Nothing could be read: saying "nothing stuck" would be a lie.
		return nil, fmt.Errorf("could not list any of the %d resource types in scope: %w", len(mappings), firstErr)
	}
	sortByNamespaceAndName(found)
	c.recordScan(scope, mappings, failed, found)
	return found, nil
}

func (c *Collector) listTerminating(ctx context.Context, m *meta.RESTMapping, scope Scope, tr *tracker) ([]Found, error) {
	var out []Found
	gr := m.Resource.GroupResource()
	ref := typeRefOf(m)
	defer c.recordListed(scope, m)
	err := c.listEach(ctx, m, scope, tr, func(items []metav1.PartialObjectMetadata) error {
		c.recordPage(scope, gr, countPage(items))
		c.recordOwners(scope, m, items)
		for i := range items {
			if items[i].DeletionTimestamp == nil && !c.Preflight { // a preflight forecasts the deletion of every one
				continue
			}
			f := Found{GVR: m.Resource, Object: metadataToUnstructured(&items[i], ref)}
			if items[i].DeletionTimestamp != nil {
				if !isNamespaces(m.Resource) {
					f.listed = listedOf(ref.of(&items[i]), f.Object)
				}
				c.startEarly(ctx, f)
			}
			out = append(out, f)
		}
		return nil
	})
	if err == nil && isNamespaces(m.Resource) {
		c.startEarlyEvents(ctx, out)
	}
	return out, err
}

// isNamespaces: the resource is the core group's namespaces.
func isNamespaces(gvr schema.GroupVersionResource) bool {
	return gvr.Group == "" && gvr.Resource == "namespaces"
}

// listEach lists one type in scope with the metadata client, page by page,
// and visits every page; of a type a source lists too, it visits that list
// instead (shared.go), unless that list failed other than by being refused.
// A type that went away lists as empty.
func (c *Collector) listEach(ctx context.Context, m *meta.RESTMapping, scope Scope, tr *tracker, visit func([]metav1.PartialObjectMetadata) error) error {
	if l := c.sharedList(m, scope); l != nil {
		items, err := l.metadata(c, ctx)
		switch {
		case err == nil:
			tr.page(len(items))
			return typeListed(tr, visit(items))
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return typeListed(tr, err) // the same list, asked again, would be refused again
		}
	}
	ri := c.Clients.Metadata.Resource(m.Resource)
	opts := metav1.ListOptions{LabelSelector: scope.LabelSelector, FieldSelector: scope.FieldSelector}
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	if isNamespaces(m.Resource) && !scope.AllNamespaces {
		// In one namespace, the namespace itself is in scope.
		opts.FieldSelector = strings.TrimSuffix("metadata.name="+scope.Namespace+","+scope.FieldSelector, ",")
	}
	err := eachPage(ctx, opts, func(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		if namespaced && !scope.AllNamespaces {
			return ri.Namespace(scope.Namespace).List(ctx, o)
		}
		return ri.List(ctx, o)
	}, func(page *metav1.PartialObjectMetadataList) error {
		tr.page(len(page.Items))
		return visit(page.Items)
	})
	return typeListed(tr, err)
}

// typeListed ends a type's list: a type that went away, or does not really
// list, listed as empty.
func typeListed(tr *tracker, err error) error {
	tr.typeDone()
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return nil
	}
	return err
}

// metadataToUnstructured keeps a listed object for diagnosis, with who
// wrote it and when but not the fields each manager owns (writersOnly). It
// fills the object's maps directly, in the form Unstructured's setters
// give (an empty field left out, times in RFC 3339): neither the reflecting
// converter (runtime.DefaultUnstructuredConverter), which was a tenth of
// list -A's CPU over thousands of held objects, nor the setters, which walk
// the path and copy each value. The accessors read back what the
// converter's object gives (TestMetadataToUnstructuredAsTheConverterDoes).
func metadataToUnstructured(p *metav1.PartialObjectMetadata, r typeRef) *unstructured.Unstructured {
	// metadata is made at its full size: grown key by key, it was rehashed
	// three times per object.
	md := make(map[string]any, 16)
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": md, "apiVersion": r.apiVersion, "kind": r.kind}}
	for _, v := range [...]struct{ key, value string }{
		{"name", p.Name}, {"generateName", p.GenerateName}, {"namespace", p.Namespace},
		{"uid", string(p.UID)}, {"resourceVersion", p.ResourceVersion},
	} {
		if v.value != "" {
			md[v.key] = v.value
		}
	}
	if p.Generation != 0 {
		md["generation"] = p.Generation
	}
	if ts := p.CreationTimestamp.ToUnstructured(); ts != nil { // RFC 3339, as writersField's times
		md["creationTimestamp"] = ts
	}
	if p.DeletionTimestamp != nil {
		if ts := p.DeletionTimestamp.ToUnstructured(); ts != nil {
			md["deletionTimestamp"] = ts
		}
	}
	if p.DeletionGracePeriodSeconds != nil {
		md["deletionGracePeriodSeconds"] = *p.DeletionGracePeriodSeconds
	}
	if p.Labels != nil { // the setters copy the maps and convert the references
		u.SetLabels(p.Labels)
	}
	if p.Annotations != nil {
		u.SetAnnotations(p.Annotations)
	}
	if p.OwnerReferences != nil {
		u.SetOwnerReferences(p.OwnerReferences)
	}
	// The lists are made here for u alone: set as they are, not deep-copied
	// as SetFinalizers and SetNestedSlice do (a third of the conversion).
	if len(p.Finalizers) > 0 {
		finalizers := make([]any, len(p.Finalizers))
		for i, f := range p.Finalizers {
			finalizers[i] = f
		}
		md["finalizers"] = finalizers
	}
	if len(p.ManagedFields) > 0 {
		md["managedFields"] = writersField(p.ManagedFields)
	}
	return u
}

// writersOnly keeps of managedFields who wrote the object and when
// (manager, operation, subresource, time), which the rules read, without
// the field sets, which are most of a metadata object's size and of its
// conversion's time.
func writersOnly(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if len(entries) == 0 {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		out[i] = metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource, Time: e.Time}
	}
	return out
}

// writersField is writersOnly in an Unstructured's form, as the converter
// writes a ManagedFieldsEntry (empty fields left out, the time in RFC 3339).
func writersField(entries []metav1.ManagedFieldsEntry) []any {
	out := make([]any, len(entries))
	for i, e := range entries {
		m := make(map[string]any, 4)
		if e.Manager != "" {
			m["manager"] = e.Manager
		}
		if e.Operation != "" {
			m["operation"] = string(e.Operation)
		}
		if e.Subresource != "" {
			m["subresource"] = e.Subresource
		}
		if e.Time != nil && !e.Time.IsZero() {
			m["time"] = e.Time.ToUnstructured()
		}
		out[i] = m
	}
	return out
}

// sortByNamespaceAndName orders what a scan found by namespace, then name,
// then type, each read once (a comparison that read them from the objects'
// maps took a twentieth of list -A's CPU on 3,000 held objects). The type
// makes the order total, so an unstable sort gives one order whatever the
// order the lists ended in (a stable one, moving 88-byte entries, took
// about 7 ms after the scan of 3,000 held objects).
func sortByNamespaceAndName(found []Found) {
	type keyed struct {
		namespace, name string
		f               Found
	}
	keys := make([]keyed, len(found))
	for i, f := range found {
		keys[i] = keyed{f.Object.GetNamespace(), f.Object.GetName(), f}
	}
	slices.SortFunc(keys, func(a, b keyed) int {
		return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name),
			strings.Compare(a.f.GVR.Group, b.f.GVR.Group), strings.Compare(a.f.GVR.Resource, b.f.GVR.Resource),
			strings.Compare(a.f.GVR.Version, b.f.GVR.Version))
	})
	for i, k := range keys {
		found[i] = k.f
	}
}
