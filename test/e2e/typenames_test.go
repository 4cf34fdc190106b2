package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every name of every core type the server serves (plural, singular, kind,
// short names) reaches the URL in the plugin that it reaches in kubectl,
// whose mapper reads discovery: the plugin answers the builtins without
// discovery (pkg/kube/builtin.go), and its table must say what the server
// says. Each reads an object that does not exist, through the interposer,
// and the first GET of that name is compared.
func TestTypeNamesResolveAsKubectlDoes(t *testing.T) {
	t.Parallel()
	const missing = "no-such-object-for-names"
	resources, err := env.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var first string
	p := startInterposer(t, func(_ int, _ []string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet && first == "" && strings.HasSuffix(r.URL.Path, "/"+missing) {
			first = r.URL.Path
		}
	}, func(int, *http.Request, int, []byte) {})
	kubeconfig := p.kubeconfig(t)
	reached := func(run func()) string {
		mu.Lock()
		first = ""
		mu.Unlock()
		run()
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	cacheDir := t.TempDir()
	compared := 0
	for _, r := range resources.APIResources {
		if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "get") {
			continue
		}
		for _, name := range append([]string{r.Name, r.SingularName, r.Kind}, r.ShortNames...) {
			want := reached(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "--cache-dir", cacheDir, "get", name, missing, "-n", "default")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				_ = cmd.Run() // not found: the request is what is compared
			})
			got := reached(func() {
				if res := runWith(t, "--kubeconfig", kubeconfig, "why", name, missing, "-n", "default"); res.code != 1 {
					t.Errorf("why %s %s: exit %d, want 1 (not found)\n%s", name, missing, res.code, res.stderr)
				}
			})
			if want == "" || got != want {
				t.Errorf("%s: kubectl read %q, the plugin %q", name, want, got)
			}
			compared++
		}
	}
	t.Logf("%d names of %d core types compared", compared, len(resources.APIResources))
}
