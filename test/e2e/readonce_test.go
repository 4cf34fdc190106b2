package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A run reads each object once: the objects the user names are read whole
// by the resolve and not read again for their typed form (a pod, a
// namespace), and no other read repeats. Discovery (the API's own
// documents, which the REST mapper and the scan each ask for) is left out.
func TestEachObjectReadOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "read-once")
	heldByFinalizer(t, ns, "cache-0", "example.com/drain")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Finalizers: []string{"ledger.tidy.io/archive"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reads map[string]int
	p := startInterposer(t, func(_ int, _ []string, r *http.Request) {
		if r.Method != http.MethodGet || isDiscovery(r.URL.Path) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		reads[r.URL.RequestURI()]++
	}, func(int, *http.Request, int, []byte) {})
	kubeconfig := p.kubeconfig(t)
	for _, args := range [][]string{{"why", "pods", "cache-0", "-n", ns}, {"why", "ns/" + ns}, {"why", "-n", ns}} {
		mu.Lock()
		reads = map[string]int{}
		mu.Unlock()
		r, res := diagnoseIn(t, kubeconfig, args...)
		if res.code != 0 && res.code != 2 { // within the settle time, or stuck
			t.Errorf("%v: exit %d\n%s", args, res.code, res.stderr)
		}
		if args[1] == "pods" { // the checks read the pod's status: its typed form came from the resolve
			expectChecks(t, only(t, r), map[string]string{"containers stopped": "pass", "final delete admitted": "pass", "finalizers cleared": "fail"})
		}
		mu.Lock()
		for uri, n := range reads {
			if n > 1 {
				t.Errorf("%v: GET %s %d times", args, uri, n)
			}
		}
		t.Logf("%v: %d distinct reads", args, len(reads))
		mu.Unlock()
	}
}

// isDiscovery: /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION and
// the OpenAPI documents, which name no resource.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return strings.HasPrefix(path, "/openapi") || path == "/version"
}
