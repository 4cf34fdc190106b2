package scenario

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BulkKind is one of the CRDs Bulk creates.
type BulkKind struct{ Group, Kind, Plural string }

// Resource is the kind's qualified resource, as the plugin reports it.
func (k BulkKind) Resource() string { return k.Plural + "." + k.Group }

// BulkKinds names n CRDs, each in an API group of its own.
func BulkKinds(prefix string, n int) []BulkKind {
	kinds := make([]BulkKind, n)
	for i := range kinds {
		kinds[i] = BulkKind{Group: fmt.Sprintf("%s%02d.e2e.example.com", prefix, i), Kind: fmt.Sprintf("Part%02d", i), Plural: fmt.Sprintf("parts%02d", i)}
	}
	return kinds
}

// Bulk creates the kinds' CRDs, then perKind objects of each kind in ns;
// every object carries finalizers(i), i counting objects from 0.
func (e *Env) Bulk(ctx context.Context, ns string, kinds []BulkKind, perKind int, finalizers func(i int) []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, k := range kinds {
		g.Go(func() error { return e.CRD(gctx, k.Group, k.Kind, k.Plural) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(32)
	for ki, k := range kinds {
		for j := range perKind {
			i := ki*perKind + j
			g.Go(func() error {
				return e.CustomResource(gctx, k.Group, k.Kind, k.Plural, ns, fmt.Sprintf("p%04d", i), finalizers(i)...)
			})
		}
	}
	return g.Wait()
}

// ReleaseBulk removes the finalizers Bulk set, so the namespace can go.
func (e *Env) ReleaseBulk(ctx context.Context, ns string, kinds []BulkKind) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, k := range kinds {
		ri := e.Dynamic.Resource(schema.GroupVersionResource{Group: k.Group, Version: "v1", Resource: k.Plural}).Namespace(ns)
		list, err := ri.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, o := range list.Items {
			g.Go(func() error {
				_, err := ri.Patch(gctx, o.GetName(), "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				return err
			})
		}
	}
	return g.Wait()
}
