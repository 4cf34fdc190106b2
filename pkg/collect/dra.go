package collect

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

func init() {
	register(source{name: "dra", after: nesting, read: (*Collector).readDRA})
}

// readDRA reads the ResourceClaims of the pods whose rules need them (the
// kubelet unprepares claims before it writes a terminal phase), and the
// ResourceSlices their nodes publish.
func (c *Collector) readDRA(ctx context.Context, s *snapshot.Snapshot) {
	api := c.Clients.Typed.ResourceV1()
	for _, t := range needing(s, diagnose.ResourceClaimEvidence) {
		p := t.Pod
		for _, name := range snapshot.PodClaimNames(p) {
			key := types.NamespacedName{Namespace: p.Namespace, Name: name}
			if _, done := s.DRA.Claims[key]; done {
				continue
			}
			claim, err := api.ResourceClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{})
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
		slices, err := listAll[resourcev1.ResourceSlice](ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorNodeName + "=" + node},
			pages(api.ResourceSlices().List))
		if err != nil {
			c.skipTarget(t, skipOf("resourceslices of node "+node, err))
			continue
		}
		s.DRA.Slices[node] = slices
	}
}
