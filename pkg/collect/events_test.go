package collect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// The events of several terminating namespaces, each one list, are read at
// once, not one namespace after another (fifty took longer than the scan of
// every type): a server that answers a list only once a second one is in
// flight, or after a while, sees two at once.
func TestEventsOfManyNamespacesAreReadAtOnce(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	together := make(chan struct{}) // closed when two lists are in flight
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/")
		ns, ok2 := strings.CutSuffix(ns, "/events")
		if !ok || !ok2 {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight >= 2 {
			once.Do(func() { close(together) })
		}
		mu.Unlock()
		select {
		case <-together:
		case <-time.After(500 * time.Millisecond):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		list := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: []corev1.Event{{
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{UID: types.UID(ns + "-held-0")}, Reason: "FinalizerFailed"}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	typed, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot.New(time.Now())
	namespaces := []string{"a", "b", "c", "d"}
	for _, ns := range namespaces {
		s.Targets = append(s.Targets, &snapshot.Target{Ref: report.ObjectRef{Kind: "Namespace", Name: ns}, Namespace: &corev1.Namespace{}, Object: &unstructured.Unstructured{}})
		for _, name := range []string{"held-0", "held-1"} {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetUID(types.UID(ns + "-" + name))
			s.Targets = append(s.Targets, &snapshot.Target{Ref: report.ObjectRef{Kind: "Service", Namespace: ns, Name: name}, Object: u})
		}
	}
	c := &Collector{Clients: &kube.Clients{Typed: typed}}
	var targets []*snapshot.Target
	for _, tg := range s.Targets {
		if tg.Namespace == nil {
			targets = append(targets, tg)
		}
	}
	c.readEventsOf(context.Background(), s, targets)
	if most < 2 {
		t.Errorf("at most %d list in flight: the namespaces were read one after another", most)
	}
	for _, ns := range namespaces {
		if ev := s.Events[types.UID(ns+"-held-0")]; len(ev) != 1 || ev[0].Namespace != ns {
			t.Errorf("%s/held-0: events %+v", ns, ev)
		}
		if ev, read := s.Events[types.UID(ns+"-held-1")]; !read || len(ev) != 0 {
			t.Errorf("%s/held-1: events %+v (read %v), want none read", ns, ev, read)
		}
	}
}
