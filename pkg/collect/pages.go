package collect

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// Every list the collector makes goes through client-go's pager, pageSize
// objects a page.

// listAll reads every page of a list with opts' selectors (the pager also
// lists again in full when a continue token expires).
func listAll[T any](ctx context.Context, opts metav1.ListOptions, list pager.ListPageFunc) ([]T, error) {
	out := []T{}
	p := pager.New(list)
	p.PageSize = pageSize
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		out = append(out, *any(obj).(*T))
		return nil
	})
	return out, err
}

// pages adapts a typed client's List to the pager.
func pages[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) pager.ListPageFunc {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }
}

// eachPage lists page by page and hands each page to visit as it arrives,
// keeping none: a scan of every object in a large cluster holds one page at
// a time. The page function visits and gives the pager back the page
// without its items, so the pager's own list stays empty. An expired
// continue token is an error (a full list again would visit the first pages
// twice).
func eachPage[L any, PL interface {
	*L
	runtime.Object
	metav1.ListInterface
}](ctx context.Context, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (PL, error), visit func(PL) error) error {
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		page, err := list(ctx, o)
		if err != nil {
			return nil, err
		}
		if err := visit(page); err != nil {
			return nil, err
		}
		var empty L
		PL(&empty).SetContinue(page.GetContinue())
		PL(&empty).SetResourceVersion(page.GetResourceVersion())
		return PL(&empty), nil
	})
	p.PageSize = pageSize
	p.FullListIfExpired = false
	_, _, err := p.List(ctx, opts)
	return err
}
