package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
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
	s := observed.New(time.Now())
	namespaces := []string{"a", "b", "c", "d"}
	for _, ns := range namespaces {
		s.Targets = append(s.Targets, &observed.Target{Ref: report.ObjectRef{Kind: "Namespace", Name: ns}, Namespace: &corev1.Namespace{}, Object: &unstructured.Unstructured{}})
		for _, name := range []string{"held-0", "held-1"} {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetUID(types.UID(ns + "-" + name))
			s.Targets = append(s.Targets, &observed.Target{Ref: report.ObjectRef{Kind: "Service", Namespace: ns, Name: name}, Object: u})
		}
	}
	c := &Collector{Clients: &kube.Clients{Typed: typed}}
	var targets []*observed.Target
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

// The events of many terminating namespaces are one list of every event
// when the scan counted few elsewhere (one page of them), a list each when
// most of the cluster's events are elsewhere; each event reaches the object
// it is about either way.
func TestEventsOfManyNamespacesInOneList(t *testing.T) {
	events := schema.GroupResource{Resource: "events"}
	for _, tc := range []struct {
		name      string
		elsewhere int
		requests  int
	}{{"few elsewhere", 3, 1}, {"most elsewhere", 2000, batchThreshold + 1}} {
		var objs []runtime.Object
		s := observed.New(time.Now())
		counts := map[string]map[schema.GroupResource]int{"default": {events: tc.elsewhere}}
		for i := range batchThreshold + 1 {
			ns := fmt.Sprintf("gone-%02d", i)
			counts[ns] = map[schema.GroupResource]int{events: 1}
			s.Targets = append(s.Targets, &observed.Target{Ref: report.ObjectRef{Kind: "Namespace", Name: ns}, Namespace: &corev1.Namespace{}, Object: &unstructured.Unstructured{}})
			for _, name := range []string{"held-0", "held-1"} {
				u := &unstructured.Unstructured{Object: map[string]any{}}
				u.SetUID(types.UID(ns + "-" + name))
				s.Targets = append(s.Targets, &observed.Target{Ref: report.ObjectRef{Kind: "Service", Namespace: ns, Name: name}, Object: u})
			}
			objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns},
				InvolvedObject: corev1.ObjectReference{UID: types.UID(ns + "-held-0")}, Reason: "FinalizerFailed"})
		}
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}, InvolvedObject: corev1.ObjectReference{UID: "gone-00-held-1"}})
		fake := kubefake.NewClientset(objs...)
		c := &Collector{Clients: &kube.Clients{Typed: fake}}
		c.record = &scanRecord{scope: Scope{AllNamespaces: true}, attempted: map[schema.GroupResource]schema.GroupVersionResource{events: {Version: "v1", Resource: "events"}}, counts: counts}
		var targets []*observed.Target
		for _, tg := range s.Targets {
			if tg.Namespace == nil {
				targets = append(targets, tg)
			}
		}
		c.readEventsOf(context.Background(), s, targets)
		if got := len(fake.Actions()); got != tc.requests {
			t.Errorf("%s: %d requests, want %d", tc.name, got, tc.requests)
		}
		for i := range batchThreshold + 1 {
			ns := fmt.Sprintf("gone-%02d", i)
			if ev := s.Events[types.UID(ns+"-held-0")]; len(ev) != 1 || ev[0].Namespace != ns {
				t.Errorf("%s: %s/held-0: events %+v", tc.name, ns, ev)
			}
			if ev, read := s.Events[types.UID(ns+"-held-1")]; !read || len(ev) != 0 {
				t.Errorf("%s: %s/held-1: events %+v (read %v), want none (an event of another namespace is not its)", tc.name, ns, ev, read)
			}
		}
	}
}

// An object nested in several places of a report (a pod in its namespace's
// contents and among its owner's dependents) is as many targets; its events
// are read once, and each of them has them.
func TestEventsOfAnObjectNestedTwiceAreReadOnce(t *testing.T) {
	s := observed.New(time.Now())
	for range 2 {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetUID("pod-uid")
		s.Targets = append(s.Targets, &observed.Target{Ref: report.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-0"}, Object: u})
	}
	fake := kubefake.NewClientset(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{UID: "pod-uid"}, Reason: "FailedKillPod"})
	c := &Collector{Clients: &kube.Clients{Typed: fake}}
	c.readEventsOf(context.Background(), s, s.Targets)
	if got := len(fake.Actions()); got != 1 {
		t.Errorf("%d requests, want 1: %v", got, fake.Actions())
	}
	if ev := s.Events["pod-uid"]; len(ev) != 1 || ev[0].Reason != "FailedKillPod" {
		t.Errorf("events %+v, want the pod's one", ev)
	}
}
