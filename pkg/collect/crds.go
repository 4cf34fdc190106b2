package collect

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "crds", after: []string{"namespace contents"}, read: (*Collector).readCRDs,
		permissions: []Permission{
			{Read: "`list` customresourcedefinitions (full)", UsedFor: "a terminating CRD; the CRD behind a conversion webhook error", Without: "`CRDInstancesRemaining`/`ConversionWebhookFailing` fall back to the generic finalizer cause or the condition's text"},
		}})
	register(source{name: "crd instances", after: []string{"crds"}, read: (*Collector).readCRDInstances,
		permissions: []Permission{
			{Read: "`list` the instances of a terminating CRD (metadata, all namespaces)", UsedFor: "`CRDInstancesRemaining` counts and examples", Without: "the scan's failure is in the evidence"},
		}})
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// readCRDs reads the CustomResourceDefinitions when a rule needs them (a
// CRD's cleanup; a namespace whose content deletion failed, a conversion
// webhook may be why), and the endpoints of the conversion webhooks that
// concern the targets.
func (c *Collector) readCRDs(ctx context.Context, s *observed.Snapshot) {
	// The run's own targets (CRDs, namespaces): the nesting sources of this
	// stage write the rest of the graph meanwhile.
	concerned := c.topNeeding(s, diagnose.CRDEvidence)
	if len(concerned) == 0 {
		return
	}
	items, err := listAll[unstructured.Unstructured](ctx, metav1.ListOptions{}, pages(c.Clients.Dynamic.Resource(crdResource).List))
	if err != nil {
		c.Skip(skipOf("list customresourcedefinitions", err))
		return
	}
	for i := range items {
		crd := crdOf(&items[i])
		s.CRDs[crd.Name] = crd
		if crd.ConversionService == "" || !slices.ContainsFunc(concerned, func(t *observed.Target) bool { return diagnose.ReadsConversionOf(s, t, crd) }) {
			continue
		}
		ns, name, _ := strings.Cut(crd.ConversionService, "/")
		ready, err := c.readyEndpoints(ctx, ns, name)
		if err != nil {
			c.Skip(skipOf("endpointslices of service "+crd.ConversionService, err))
			continue
		}
		crd.ConversionServiceEndpoints = &ready
	}
}

// crdOf reduces a CustomResourceDefinition to what the rules read.
func crdOf(u *unstructured.Unstructured) *observed.CRD {
	str := func(fields ...string) string { v, _, _ := unstructured.NestedString(u.Object, fields...); return v }
	crd := &observed.CRD{
		Name:               u.GetName(),
		Group:              str("spec", "group"),
		Kind:               str("spec", "names", "kind"),
		Plural:             str("spec", "names", "plural"),
		Namespaced:         str("spec", "scope") == "Namespaced",
		ConversionStrategy: str("spec", "conversion", "strategy"),
		ConversionURL:      str("spec", "conversion", "webhook", "clientConfig", "url"),
	}
	if name := str("spec", "conversion", "webhook", "clientConfig", "service", "name"); name != "" {
		crd.ConversionService = str("spec", "conversion", "webhook", "clientConfig", "service", "namespace") + "/" + name
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); served {
			crd.Served = append(crd.Served, name)
		}
		if storage, _ := m["storage"].(bool); storage {
			crd.StorageVersion = name
		}
	}
	crd.StoredVersions, _, _ = unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] != "Terminating" {
			continue
		}
		cond := &metav1.Condition{Type: "Terminating"}
		cond.Status = metav1.ConditionStatus(stringOf(m["status"]))
		cond.Reason, cond.Message = stringOf(m["reason"]), stringOf(m["message"])
		_ = cond.LastTransitionTime.UnmarshalQueryParameter(stringOf(m["lastTransitionTime"]))
		crd.Terminating = cond
	}
	return crd
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// readCRDInstances scans, for each terminating CRD, its remaining instances
// in every namespace (metadata only, paginated), counted by namespace, with a
// few examples of those each finalizer holds.
func (c *Collector) readCRDInstances(ctx context.Context, s *observed.Snapshot) {
	for _, t := range c.topNeeding(s, diagnose.InstanceEvidence) {
		crd := s.CRDs[t.Ref.Name]
		if crd == nil || len(crd.Served) == 0 {
			continue
		}
		version := crd.Served[0]
		if slices.Contains(crd.Served, crd.StorageVersion) {
			version = crd.StorageVersion // no conversion needed to list it
		}
		scope := meta.RESTScopeRoot
		if crd.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		m := &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: crd.Group, Version: version, Resource: crd.Plural},
			GroupVersionKind: schema.GroupVersionKind{Group: crd.Group, Version: version, Kind: crd.Kind},
			Scope:            scope,
		}
		t.Contents = c.scanContents(ctx, Scope{AllNamespaces: true}, "of CRD "+crd.Name, []*meta.RESTMapping{m})
		c.skipTarget(t, t.Contents.Skipped...)
	}
}
