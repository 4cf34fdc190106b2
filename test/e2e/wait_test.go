package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// wait succeeds when the object goes away, and on timeout prints the
// diagnosis of what is still there and exits 2.
func TestWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "waiting")
	cms := heldConfigMaps(t, ns, "goes", "stays")

	// The finalizer of "goes" is removed while wait runs.
	cmd := exec.Command(plugin, "--kubeconfig", theLab.Kubeconfig, "wait", "configmap/goes", "-n", ns, "--timeout", "1m")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if _, err := cms.Patch(ctx, "goes", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil || out.String() != "configmap/goes deleted\n" || time.Since(start) > 30*time.Second {
		t.Errorf("wait on an object that goes: %v after %s; stdout %q stderr %q", err, time.Since(start), out.String(), errOut.String())
	}

	// "stays" keeps its finalizer: timeout, diagnosis, exit 2.
	res := run(t, "wait", "configmap/stays", "-n", ns, "--timeout", "3s", "-o", "json")
	var r report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("exit %d, stdout is not a report: %v\n%s\n%s", res.code, err, res.stdout, res.stderr)
	}
	if res.code != 2 || len(r.Items) != 1 || codesOf(r.Items[0])[0] != "FinalizerPending" || !strings.Contains(res.stderr, "timed out after 3s") {
		t.Errorf("wait on an object that stays: exit %d, items %+v, stderr %q", res.code, r.Items, res.stderr)
	}
}

// list -w prints the table, then a row as each object goes, and exits 0 once
// all are gone; a bounded run exits as list would for what is left.
func TestListWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "listwatch")
	cms := heldConfigMaps(t, ns, "first", "second")
	res := run(t, "list", "configmaps", "-n", ns, "-w", "--timeout", "3s")
	if plain := run(t, "list", "configmaps", "-n", ns); res.code != plain.code || strings.Count(res.stdout, "FinalizerPending") != 2 || strings.Contains(res.stdout, "deleted") {
		t.Errorf("list -w on objects that stay: exit %d (list: %d)\n%s\n%s", res.code, plain.code, res.stdout, res.stderr)
	}

	cmd := exec.Command(plugin, "--kubeconfig", theLab.Kubeconfig, "list", "configmaps", "-n", ns, "-w", "--timeout", "1m")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		time.Sleep(3 * time.Second)
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := cmd.Wait()
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if err != nil || len(lines) != 5 {
		t.Fatalf("list -w until all are gone: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	for i, want := range []string{"NAME", "configmap/first", "configmap/second", "configmap/first", "configmap/second"} {
		if !strings.HasPrefix(lines[i], want) || (i >= 3) != strings.HasSuffix(lines[i], "deleted") {
			t.Errorf("line %d: %q, want %s (a deletion row from the 4th)\n%s", i, lines[i], want, out.String())
		}
	}
}

// heldConfigMaps creates ConfigMaps held by a finalizer nobody removes and
// deletes them: they stay Terminating until the test removes it.
func heldConfigMaps(t *testing.T, ns string, names ...string) typedcorev1.ConfigMapInterface {
	t.Helper()
	ctx := context.Background()
	cms := env.Client.CoreV1().ConfigMaps(ns)
	for _, name := range names {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"hold.tidy.io/flush"}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cms
}

// An object wait never saw (a typo) is an error, exit 1; --ignore-not-found
// counts it as deleted, as kubectl wait --for=delete does.
func TestWaitOnAnObjectThatDoesNotExist(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "wait-typo")
	res := run(t, "wait", "configmap/no-such-thing", "-n", ns, "--timeout", "30s")
	if res.code != 1 || !strings.Contains(res.stderr, "configmap/no-such-thing not found") || res.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and not found", res.code, res.stdout, res.stderr)
	}
	res = run(t, "wait", "configmap/no-such-thing", "-n", ns, "--timeout", "30s", "--ignore-not-found")
	if res.code != 0 || res.stdout != "configmap/no-such-thing deleted\n" {
		t.Errorf("--ignore-not-found: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// list -w diagnoses again when a verdict lapses with time alone: a
// controller seen writing to the object after its deletion is at work
// (progressing) only while its write is recent; once the controller stops
// writing, the row turns stuck, although nothing changed in the cluster.
func TestListWatchSeesAControllerStopWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "watch-lapse")
	// A kind no other test has: a plural shared with another group makes a
	// short TYPE ambiguous for the tests that name it (restores).
	op := scenario.Operator{Group: "lapse.e2e.example.com", Kind: "Replication", Plural: "replications",
		Manager: "replication-server", Finalizer: "lapse.e2e.example.com/cleanup"}
	adopted(t, op, ns, "r", map[string]any{"phase": "InProgress"})
	deleted := time.Now()
	if err := env.Delete(ctx, op, ns, "r"); err != nil {
		t.Fatal(err)
	}
	// Its one write after the deletion, past the settle time of the
	// deadline: from there on only the write's age changes the verdict.
	time.Sleep(time.Until(deleted.Add(32 * time.Second)))
	if err := env.OperatorWrites(ctx, op, ns, "r", map[string]any{"phase": "InProgress", "progress": map[string]any{"itemsRestored": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	res := run(t, "list", op.Plural+"."+op.Group, "-n", ns, "-w", "--timeout", "50s")
	var rows []string
	for _, l := range strings.Split(res.stdout, "\n") {
		if strings.HasPrefix(l, "replication/r ") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	if res.code != 2 || len(rows) != 2 || !strings.Contains(rows[0], " info ") || strings.Contains(rows[1], " info ") {
		t.Errorf("exit %d, rows %q: want the row at work (info), then stuck, exit 2\n%s\n%s", res.code, rows, res.stdout, res.stderr)
	}
}
