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
)

// wait succeeds when the object goes away, and on timeout prints the
// diagnosis of what is still there and exits 2.
func TestWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "waiting")
	cms := env.Client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"goes", "stays"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"hold.tidy.io/flush"}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

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
