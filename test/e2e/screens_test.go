package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Issue 39, item 2, on the lab: list's table fits the terminal's width
// ($COLUMNS) at 60 and 80 columns, its long cells cut with an ellipsis, and
// help wraps to it; long built-in kinds are printed by kubectl's short
// names, each one the lab apiserver's own short name for that resource and
// one why takes back.
func TestScreensFitTheTerminal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "a-namespace-with-a-long-name-for-screens")
	claims, accounts := env.Client.CoreV1().PersistentVolumeClaims(ns), env.Client.CoreV1().ServiceAccounts(ns)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Finalizers: []string{"screens.example.com/hold"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot-with-a-name-longer-than-a-narrow-column", Finalizers: []string{"screens.example.com/hold"}}}
	if _, err := accounts.Create(ctx, account, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release(env.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}).Namespace(ns), "data")
		release(env.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace(ns), account.Name)
	})
	deleted := time.Now()
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := accounts.Delete(ctx, account.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, deleted)

	// Whole: the short kinds, each the apiserver's.
	whole := atColumns(t, 0, "list", "-n", ns)
	resources, err := env.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	for resource, name := range map[string]string{"persistentvolumeclaims": "data", "serviceaccounts": account.Name} {
		i := slices.IndexFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
		printed := ""
		for _, f := range strings.Fields(whole.stdout) {
			if strings.HasSuffix(f, "/"+name) {
				printed = strings.TrimSuffix(f, "/"+name)
			}
		}
		if i < 0 || !slices.Contains(resources.APIResources[i].ShortNames, printed) {
			t.Errorf("%s/%s is printed as %q/%s, not by one of the apiserver's short names:\n%s", resource, name, printed, name, whole.stdout)
			continue
		}
		if res := run(t, "why", printed+"/"+name, "-n", ns); res.code != 2 {
			t.Errorf("why %s/%s: exit %d, %s", printed, name, res.code, res.stderr)
		}
	}
	for _, cols := range []int{60, 80} {
		res := atColumns(t, cols, "list", "-A")
		table, _, _ := strings.Cut(res.stdout, "\n\n") // the footer is prose
		for line := range strings.Lines(table) {
			if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > cols {
				t.Errorf("list -A at %d columns: a line of %d: %q", cols, n, line)
			}
		}
		if !strings.Contains(table, "…") || !strings.Contains(table, "a-name") {
			t.Errorf("list -A at %d columns, nothing cut:\n%s", cols, table)
		}
		for _, command := range []string{"why", "fix", "list"} {
			help := atColumns(t, cols, command, "--help")
			for line := range strings.Lines(help.stdout) {
				if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > cols && !strings.HasPrefix(strings.TrimSpace(line), "kubectl ") {
					t.Errorf("%s --help at %d columns: a line of %d: %q", command, cols, n, line)
				}
			}
		}
	}
}

// atColumns runs the plugin against the lab with $COLUMNS set (0: unset).
func atColumns(t *testing.T, cols int, args ...string) result {
	t.Helper()
	return runColumns(t, cols, append([]string{"--kubeconfig", theLab.Kubeconfig}, args...)...)
}
