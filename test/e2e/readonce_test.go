package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// A run reads each object once: the objects the user names are read whole
// by the resolve and not read again for their typed form (a pod, a
// namespace), and no other read repeats but one: `why -n` lists the
// namespace's events twice, their metadata in its scan and the events
// whole, for the objects' rules (the scan does not share that list yet).
// Discovery (the API's own documents, which the REST mapper and the scan
// each ask for) is left out.
func TestEachObjectReadOnce(t *testing.T) {
	t.Parallel()
	ns := heldNamespace(t, env, "read-once")
	heldByFinalizer(t, ns, "cache-0", "example.com/drain")
	deleteNamespace(t, env, ns)
	reads := countReads(t, theLab.Server)
	for _, args := range [][]string{{"why", "pods", "cache-0", "-n", ns}, {"why", "ns/" + ns}, {"why", "-n", ns}} {
		reads.reset()
		r, res := diagnoseIn(t, reads.kubeconfig, args...)
		if res.code != 0 && res.code != 2 { // within the settle time, or stuck
			t.Errorf("%v: exit %d\n%s", args, res.code, res.stderr)
		}
		if args[1] == "pods" { // the checks read the pod's status: its typed form came from the resolve
			expectChecks(t, only(t, r), map[string]string{"containers stopped": "pass", "final delete admitted": "pass", "finalizers cleared": "fail"})
		}
		scanned := args[1] == "-n"
		reads.expectOnce(t, fmt.Sprint(args), func(read string) bool {
			return scanned && strings.HasPrefix(read, "/api/v1/namespaces/"+ns+"/events?")
		})
	}
}

// list -A lists each type once. The types a source reads whole whatever
// the targets (the workloads, the RBAC grants, the admission
// configurations, the APIServices, the CRDs' names) are read by one list the
// scan shares with the source once a target found has started it, and the
// namespaces, whose terminating ones are read whole, by one list of them
// all. Only the nodes and the events, which the diagnosis reads whole after
// the scan, by one list when many are needed (a GET or a list of a
// namespace for a few), may be listed twice: the scan lists their metadata,
// and reading every event whole to spare that list would cost far more than
// it saves. On a lab of its own: in the shared one, other tests' targets
// are read whole after the scan too (a kind's objects, terminating CRDs,
// CSI drivers and volume attachments; the events of a nested target, once
// for each place it is nested), which this test is not about.
func TestListAllListsEachTypeOnce(t *testing.T) {
	t.Parallel()
	own, env2 := ownLab(t)
	ns := heldNamespace(t, env2, "list-once")
	// A pod held by a third-party finalizer, on a node that is not there:
	// its rules read the controllers and admission, as a held pod's do.
	ctx := context.Background()
	pod := scenario.PodSpec(ns, "cache-0", "gone")
	pod.Finalizers = []string{"example.com/drain"}
	if _, err := env2.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env2.Client.CoreV1().Pods(ns).Delete(ctx, "cache-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteNamespace(t, env2, ns)
	reads := countReads(t, own.Server)
	res := runWith(t, "--kubeconfig", reads.kubeconfig, "list", "-A", "-o", "json")
	if res.code != 0 && res.code != 2 {
		t.Fatalf("list -A: exit %d\n%s", res.code, res.stderr)
	}
	reads.expectOnce(t, "list -A", readWholeAfterTheScan)
}

// readWholeAfterTheScan: uri lists every node or event, which the
// diagnosis reads whole after the scan's metadata list when many are needed.
func readWholeAfterTheScan(uri string) bool {
	path, _, _ := strings.Cut(uri, "?")
	return path == "/api/v1/nodes" || path == "/api/v1/events"
}

// heldNamespace makes namespace name in the lab of e with a ConfigMap held
// by a third-party finalizer (whose rules read the controllers and
// admission).
func heldNamespace(t *testing.T, e *scenario.Env, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := e.Namespace(ctx, name); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Finalizers: []string{"ledger.tidy.io/archive"}}}
	if _, err := e.Client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// deleteNamespace deletes namespace ns: held, it stays Terminating.
func deleteNamespace(t *testing.T, e *scenario.Env, ns string) {
	t.Helper()
	if err := e.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readCounts counts the reads (GETs) made through an interposer, by what
// they read: the path and the query but for the timeout parameter, which
// the metadata and dynamic clients send and the typed clients do not (the
// same list, whatever the client).
type readCounts struct {
	kubeconfig string
	mu         sync.Mutex
	reads      map[string]int
}

func countReads(t *testing.T, server string) *readCounts {
	t.Helper()
	c := &readCounts{reads: map[string]int{}}
	p := startInterposerTo(t, server, func(_ int, _ []string, r *http.Request) {
		if r.Method != http.MethodGet || isDiscovery(r.URL.Path) {
			return
		}
		q := r.URL.Query()
		q.Del("timeout")
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reads[r.URL.Path+"?"+q.Encode()]++
	}, func(int, *http.Request, int, []byte) {})
	c.kubeconfig = p.kubeconfig(t)
	return c
}

func (c *readCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = map[string]int{}
}

// expectOnce fails for each read made more than once, unless allowed.
func (c *readCounts) expectOnce(t *testing.T, run string, allowed func(string) bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for read, n := range c.reads {
		if n > 1 && !allowed(read) {
			t.Errorf("%s: GET %s %d times", run, read, n)
		}
	}
	t.Logf("%s: %d distinct reads", run, len(c.reads))
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
