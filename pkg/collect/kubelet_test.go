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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// An apiserver whose node proxy answers for node-1 as a kubelet would,
// refuses node-2 (no nodes/proxy) and cannot reach node-3's kubelet.
func fakeNodeProxy(t *testing.T) (*kube.Clients, *[]string) {
	t.Helper()
	var asked []string
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	note := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked = append(asked, r.URL.Path)
			mu.Unlock()
			h(w, r)
		}
	}
	mux.HandleFunc("/api/v1/nodes/node-1/proxy/pods", note(func(w http.ResponseWriter, r *http.Request) {
		pods := corev1.PodList{Items: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "shop", UID: "uid-held"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "shop", UID: "uid-other"}},
		}}
		_ = json.NewEncoder(w).Encode(pods)
	}))
	mux.HandleFunc("/api/v1/nodes/node-1/proxy/stats/summary", note(func(w http.ResponseWriter, r *http.Request) {
		summary := statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{
			{PodRef: statsv1alpha1.PodReference{Name: "held", Namespace: "shop", UID: "uid-held"}, CPU: &statsv1alpha1.CPUStats{},
				VolumeStats: []statsv1alpha1.VolumeStats{{Name: "data", PVCRef: &statsv1alpha1.PVCReference{Name: "data-held", Namespace: "shop"}}}},
			{PodRef: statsv1alpha1.PodReference{Name: "other", Namespace: "shop", UID: "uid-other"}, CPU: &statsv1alpha1.CPUStats{}},
		}}
		_ = json.NewEncoder(w).Encode(summary)
	}))
	status := func(code int, reason metav1.StatusReason, msg string) http.HandlerFunc {
		return note(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
		})
	}
	mux.HandleFunc("/api/v1/nodes/node-2/proxy/", status(http.StatusForbidden, metav1.StatusReasonForbidden, `nodes "node-2" is forbidden: User "viewer" cannot get resource "nodes/proxy"`))
	mux.HandleFunc("/api/v1/nodes/node-3/proxy/", status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "error trying to reach service: dial tcp 198.18.0.2:10250: connect: connection refused"))
	mux.HandleFunc("/api/v1/nodes/node-4/proxy/", status(http.StatusBadRequest, metav1.StatusReasonBadRequest, "address not allowed"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	typed, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &kube.Clients{Typed: typed}, &asked
}

func TestReadKubelets(t *testing.T) {
	clients, asked := fakeNodeProxy(t)
	s := observed.New(time.Now())
	pod := func(name, node string) *observed.Target {
		return podTarget(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), DeletionTimestamp: &metav1.Time{}},
			Spec: corev1.PodSpec{NodeName: node}})
	}
	s.Targets = []*observed.Target{pod("held", "node-1"), pod("gone", "node-1"), pod("hidden", "node-2"), pod("far", "node-3"), pod("loop", "node-4")}
	c := &Collector{Clients: clients, Now: time.Now, Kubelet: true}
	c.readKubelets(context.Background(), s)

	k := s.Kubelets["node-1"]
	if k == nil || !k.PodsRead || !k.SummaryRead || len(k.Pods) != 1 {
		t.Fatalf("node-1: %+v", k)
	}
	held := k.Pods["uid-held"]
	if !held.Managed || !held.Cgroup || len(held.Containers) != 1 || len(held.Volumes) != 1 || held.Volumes[0].Claim != "data-held" {
		t.Errorf("held: %+v", held)
	}
	if _, ok := s.Kubelets["node-2"]; ok {
		t.Error("node-2's kubelet refused: no view")
	}
	for target, want := range map[int]string{2: "Forbidden", 3: "Unreachable", 4: "Unreachable"} {
		sk := s.Targets[target].Skipped
		if len(sk) != 2 || string(sk[0].Reason) != want || !strings.HasPrefix(sk[0].Check, "nodes/node-") {
			t.Errorf("%s: skipped %+v, want the two reads as %s", s.Targets[target].Ref.Name, sk, want)
		}
	}
	// A node address the proxy will not dial (loopback): said so.
	if sk := s.Targets[4].Skipped; len(sk) == 0 || !strings.Contains(sk[0].Detail, "refuses the node's address") {
		t.Errorf("loop: skipped %+v, want the refused address explained", sk)
	}
	if len(*asked) != 8 {
		t.Errorf("one request per endpoint per node, got %v", *asked)
	}

	// Without --kubelet, nothing is asked.
	*asked = nil
	s.Kubelets = nil
	(&Collector{Clients: clients, Now: time.Now}).readKubelets(context.Background(), s)
	if len(*asked) != 0 || s.Kubelets != nil {
		t.Errorf("asked %v without --kubelet", *asked)
	}
}
