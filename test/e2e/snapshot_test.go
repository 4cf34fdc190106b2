package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// A run saved with --save-snapshot and replayed with --snapshot where no
// cluster can be reached prints the same report, byte for byte (the JSON
// marked as a replay), with the same exit code and a banner on stderr: a namespace held by a pod on a dead node, the pod, a CRD held by
// its instances, and everything terminating in the lab (-A).
func TestSnapshotReplaysWithoutTheCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "snap-ns")
	const group, crd = "snap.e2e.example.com", "gizmos.snap.e2e.example.com"
	podOnDeadNode(t, ns, "web-0", "dead-snap")
	if err := env.CRD(ctx, group, "Gizmo", "gizmos"); err != nil {
		t.Fatal(err)
	}
	if err := env.CustomResource(ctx, group, "Gizmo", "gizmos", ns, "g1", group+"/teardown"); err != nil {
		t.Fatal(err)
	}
	if err := env.DeleteNamespace(ctx, ns, corev1.NamespaceDeletionContentFailure); err != nil {
		t.Fatal(err)
	}
	if err := env.DeleteCRD(ctx, crd, "InstanceDeletionInProgress"); err != nil {
		t.Fatal(err)
	}
	// A webhook on the gizmos' finalizer removal, scoped by a
	// namespaceSelector that matches no namespace here: live, the namespace's
	// labels rule it out; a replay must too, though the snapshot keeps only
	// the label keys selectors use (issue 35: it reported
	// AdmissionWebhookDenied where the live run did not).
	elsewhere := "snap-elsewhere-" + ns
	if err := env.DownWebhookFor(ctx, elsewhere, scenario.Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Group: group, Resource: "gizmos", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": elsewhere}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), elsewhere, metav1.DeleteOptions{})
	})
	pastDeadline(t, ns, "web-0")

	// The replay's kubeconfig names a server that counts who dials it.
	kubeconfig, dials := unreachableKubeconfig(t)
	dir := t.TempDir()
	for i, args := range [][]string{
		{"why", "ns/" + ns},
		{"why", "pod/web-0", "-n", ns},
		{"why", "crd/" + crd},
		{"why", "-A"},
		{"list", "-A"},
	} {
		for _, format := range []string{"json", ""} {
			file := filepath.Join(dir, fmt.Sprintf("run-%d%s.json.gz", i, format))
			live := run(t, append(args, "-o", format, "--save-snapshot", file)...)
			replay := runOffline(t, kubeconfig, append(args, "-o", format, "--snapshot", file)...)
			// A replay says so: on stderr, and in its JSON report, its last field.
			if !strings.HasPrefix(replay.stderr, "replaying a snapshot taken ") || !strings.Contains(replay.stderr, `, context "lab", plugin `) {
				t.Errorf("%v -o %q: the replay's stderr %q, want its banner", args, format, replay.stderr)
			}
			if format == "json" {
				marked := replayMark.MatchString(replay.stdout)
				if replay.stdout = replayMark.ReplaceAllString(replay.stdout, ""); !marked || strings.Contains(live.stdout, `"replay"`) {
					t.Errorf("%v: the replay's report is not marked as one, or the live one is", args)
				}
			}
			if live.stdout != replay.stdout || live.code != replay.code || live.code == 1 {
				t.Errorf("%v -o %q: live exit %d, replay exit %d\n--- live\n%s\n--- replay\n%s%s", args, format, live.code, replay.code, live.stdout, replay.stdout, replay.stderr)
			}
			if format == "json" && !strings.Contains(live.stdout, `"code"`) {
				t.Errorf("%v: no cause in the live report:\n%s", args, live.stdout)
			}
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("the replays dialled the kubeconfig's server %d time(s)", n)
	}
}

// replayMark is the replay field of a -o json report, its last, and what
// it holds: when, which context, which plugin saved the snapshot.
var replayMark = regexp.MustCompile(`,\n    "replay": \{\n        "takenAt": "[^"]+",\n        "context": "lab",\n        "pluginVersion": "[^"]+"\n    \}`)

// unreachableKubeconfig writes a kubeconfig whose server is a local listener
// that only counts connections.
func unreachableKubeconfig(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var dials atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://%s"}}]
users: [{name: nobody, user: {token: nothing}}]
contexts: [{name: gone, context: {cluster: gone, user: nobody, namespace: elsewhere}}]
current-context: gone
`, l.Addr())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &dials
}

// runOffline runs the plugin with KUBECONFIG naming an unreachable server.
func runOffline(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	cmd := exec.Command(plugin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "NO_COLOR=", "KUBECONFIG="+kubeconfig)
	return resultOf(t, cmd.Run(), &out, &errOut, args)
}

// list's table shows each object's verdict alone, and judges no more
// (diagnose.Verdicts): on everything terminating in the lab (here at least
// a namespace held by a pod on a dead node and a ConfigMap held by a
// third-party finalizer, each nested in it and a target too), it prints what
// the whole diagnosis of the same snapshot prints, row for row. --sort-by
// reads the whole report, so it diagnoses whole; .forecast is missing from
// every item of a diagnosis, and a stable sort by it keeps the default order.
func TestListTableIsTheWholeDiagnosisTable(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "verdicts")
	podOnDeadNode(t, ns, "web-0", "dead-verdicts")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Finalizers: []string{"ledger.tidy.io/archive"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller waits for the pod, whose node is gone.
	if err := env.DeleteNamespace(context.Background(), ns, corev1.NamespaceDeletionContentFailure); err != nil {
		t.Fatal(err)
	}
	pastDeadline(t, ns, "web-0")
	file := filepath.Join(t.TempDir(), "list.json.gz")
	live := run(t, "list", "-A", "-o", "wide", "--save-snapshot", file)
	kubeconfig, _ := unreachableKubeconfig(t)
	whole := runOffline(t, kubeconfig, "list", "-A", "-o", "wide", "--snapshot", file, "--sort-by", ".forecast")
	if live.stdout != whole.stdout || live.code != whole.code || !strings.Contains(live.stdout, "pod/web-0") || !strings.Contains(live.stdout, "configmap/ledger") {
		t.Errorf("list -A -o wide: exit %d, whole diagnosis's exit %d\n--- list\n%s\n--- whole\n%s%s", live.code, whole.code, live.stdout, whole.stdout, whole.stderr)
	}
	// -o name judges verdicts alone too; --stuck-only filters by them.
	names := runOffline(t, kubeconfig, "list", "-A", "-o", "name", "--stuck-only", "--snapshot", file)
	wholeNames := runOffline(t, kubeconfig, "list", "-A", "-o", "name", "--stuck-only", "--snapshot", file, "--sort-by", ".forecast")
	if names.stdout != wholeNames.stdout || names.code != wholeNames.code || !strings.Contains(names.stdout, "pod/web-0") {
		t.Errorf("list -A -o name --stuck-only: exit %d, whole diagnosis's exit %d\n--- list\n%s\n--- whole\n%s%s", names.code, wholeNames.code, names.stdout, wholeNames.stdout, wholeNames.stderr)
	}
}
