package collect

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "dra", after: nesting, read: (*Collector).readDRA,
		permissions: []Permission{
			{Read: "`get` resourceclaims; `list` resourceslices (field selector `spec.nodeName`)", UsedFor: "the DRA claims of pods in state B'", Without: "`skipped` names the read; no `ResourceClaimCleanupPending`"},
		}})
}

// readDRA reads the ResourceClaims of the pods whose rules need them (the
// kubelet unprepares claims before it writes a terminal phase), and the
// ResourceSlices their nodes publish, in the version of resource.k8s.io the
// server prefers (v1alpha3 in 1.31 ... v1 from 1.34), converted to the v1
// types the rules read. Where the group is not served, DRA is off: not
// applicable, and no claim can be told deleted from a 404.
func (c *Collector) readDRA(ctx context.Context, s *observed.Snapshot) {
	targets := c.needing(s, diagnose.ResourceClaimEvidence)
	if len(targets) == 0 {
		return
	}
	claims, slices, err := c.draResources()
	if err != nil {
		if meta.IsNoMatchError(err) {
			s.AddNotServed("resourceclaims", "resource.k8s.io is not served: Dynamic Resource Allocation is off on this server")
			return
		}
		for _, t := range targets {
			c.skipTarget(t, skipOf("resource.k8s.io discovery", err))
		}
		return
	}
	for _, t := range targets {
		p := t.Pod
		for _, name := range observed.PodClaimNames(p) {
			key := types.NamespacedName{Namespace: p.Namespace, Name: name}
			if _, done := s.DRA.Claims[key]; done {
				continue
			}
			u, err := c.Clients.Dynamic.Resource(claims).Namespace(p.Namespace).Get(ctx, name, metav1.GetOptions{})
			claim := &resourcev1.ResourceClaim{}
			if err == nil {
				err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, claim)
			}
			switch {
			case apierrors.IsNotFound(err):
				s.DRA.Claims[key] = nil
			case err != nil:
				c.skipTarget(t, skipOf("resourceclaims/"+name, err))
			default:
				s.DRA.Claims[key] = claim
			}
		}
		node := p.Spec.NodeName
		if _, done := s.DRA.Slices[node]; done || node == "" {
			continue
		}
		items, err := listAll[unstructured.Unstructured](ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorNodeName + "=" + node},
			pages(c.Clients.Dynamic.Resource(slices).List))
		if err != nil {
			c.skipTarget(t, skipOf("resourceslices of node "+node, err))
			continue
		}
		converted := make([]resourcev1.ResourceSlice, len(items))
		for i := range items {
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, &converted[i]); err != nil {
				break
			}
		}
		if err != nil {
			c.skipTarget(t, skipOf("resourceslices of node "+node, err))
			continue
		}
		s.DRA.Slices[node] = converted
	}
}

// draResources finds the claims and slices in the version of
// resource.k8s.io that discovery prefers.
func (c *Collector) draResources() (claims, slices schema.GroupVersionResource, err error) {
	for _, r := range []struct {
		kind string
		into *schema.GroupVersionResource
	}{{"ResourceClaim", &claims}, {"ResourceSlice", &slices}} {
		m, err := c.Clients.Mapper.RESTMapping(schema.GroupKind{Group: resourcev1.GroupName, Kind: r.kind})
		if err != nil {
			return claims, slices, err
		}
		*r.into = m.Resource
	}
	return claims, slices, nil
}
