package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: prod
  context: {cluster: c, user: u}
- name: dev
  context: {cluster: c, user: u}
current-context: %s
`

// A context the kubeconfig does not have is said one way, whether --context
// or the kubeconfig's current-context named it, with the contexts it has.
func TestUnknownContextIsSaidOneWay(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	if err := os.WriteFile(config, []byte(strings.Replace(twoContexts, "%s", "gone", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"--context nope": `the kubeconfig has no context "nope" (--context); its contexts: dev, prod (kubectl config get-contexts; --context NAME)`,
		"":               `the kubeconfig has no context "gone" (its current-context); its contexts: dev, prod`,
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), append(append([]string{"--kubeconfig", config}, strings.Fields(args)...), "why", "pod/web-0")...)
		if ExitCode(err) != ExitError || !strings.Contains(Explain(err), want) {
			t.Errorf("%q: exit %d, %v; want %q", args, ExitCode(err), err, want)
		}
	}
}

// No kubeconfig names a cluster: said before any dial (client-go would try
// localhost:8080); --server gives one.
func TestNoKubeconfigIsSaid(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dialed := false
	useDefault := func(o *Options) {
		o.newClients = func() (*kube.Clients, error) { c, err := o.kubeClients(); dialed = err == nil; return c, err }
	}
	_, _, err := executeWith(t, nil, useDefault, "--kubeconfig", empty, "why", "pod/web-0")
	if ExitCode(err) != ExitError || Explain(err) != "no cluster to ask: --kubeconfig "+empty+" names none (--kubeconfig FILE, KUBECONFIG or --context; `make demo` runs a lab cluster)" || dialed {
		t.Errorf("exit %d, %q", ExitCode(err), Explain(err))
	}
	_, _, err = executeWith(t, nil, useDefault, "--kubeconfig", empty, "--server", "https://127.0.0.1:1", "--request-timeout", "1s", "why", "pod/web-0")
	if strings.Contains(Explain(err), "no cluster to ask") {
		t.Errorf("--server: %q", Explain(err))
	}
}
