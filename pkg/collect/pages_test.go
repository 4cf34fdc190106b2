package collect

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pagedServer serves n objects pageSize at a time, as the apiserver does,
// and can expire its continue token after a page.
type pagedServer struct {
	n, expireAfter int
	requests       []metav1.ListOptions
}

func (s *pagedServer) list(_ context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	s.requests = append(s.requests, o)
	from := 0
	if o.Continue != "" {
		from, _ = strconv.Atoi(o.Continue)
		if s.expireAfter > 0 && from >= s.expireAfter {
			return nil, apierrors.NewResourceExpired("the continue token expired")
		}
	}
	l := &metav1.PartialObjectMetadataList{}
	for i := from; i < s.n && i < from+int(o.Limit); i++ {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}})
	}
	if to := from + int(o.Limit); to < s.n {
		l.Continue = strconv.Itoa(to)
	}
	return l, nil
}

// The scan visits every page once, in order, pageSize objects a page, with
// the caller's selectors on every request; an expired continue token is an
// error, never a second full list that would visit the first pages again.
func TestEachPageVisitsEveryPageOnce(t *testing.T) {
	srv := &pagedServer{n: 2*pageSize + 7}
	var seen, pages int
	err := eachPage(context.Background(), metav1.ListOptions{LabelSelector: "a=b"}, srv.list, func(p *metav1.PartialObjectMetadataList) error {
		if p.Items[0].Name != strconv.Itoa(seen) {
			t.Errorf("page %d starts at %s, want %d", pages, p.Items[0].Name, seen)
		}
		seen += len(p.Items)
		pages++
		return nil
	})
	if err != nil || seen != srv.n || pages != 3 {
		t.Fatalf("visited %d objects in %d pages (err %v), want %d in 3", seen, pages, err, srv.n)
	}
	for _, o := range srv.requests {
		if o.Limit != pageSize || o.LabelSelector != "a=b" {
			t.Errorf("request %+v: want limit %d and the selector", o, pageSize)
		}
	}

	expiring := &pagedServer{n: 3 * pageSize, expireAfter: pageSize}
	seen = 0
	err = eachPage(context.Background(), metav1.ListOptions{}, expiring.list, func(p *metav1.PartialObjectMetadataList) error {
		seen += len(p.Items)
		return nil
	})
	if !apierrors.IsResourceExpired(err) || seen != pageSize || len(expiring.requests) != 2 {
		t.Errorf("expired token: err %v, %d objects visited in %d requests; want the error after one page", err, seen, len(expiring.requests))
	}
}
