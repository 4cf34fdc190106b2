package cmd

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// kubeconfigError says what is wrong with the kubeconfig that loadErr
// reports, in its own terms and one way whichever way the context was
// chosen: a context it does not have, named by --context or by its
// current-context.
func (o *Options) kubeconfigError(loadErr error) error {
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if name, from := o.contextChoice(raw); name != "" {
		if _, ok := raw.Contexts[name]; !ok {
			return fmt.Errorf("the kubeconfig has no context %q (%s); %s", name, from, contextsOf(raw))
		}
	}
	return fmt.Errorf("reading the kubeconfig: %w", loadErr)
}

// kubeClients are the clients of the cluster the kubeconfig names.
func (o *Options) kubeClients() (*kube.Clients, error) {
	if err := o.noKubeconfig(); err != nil {
		return nil, err
	}
	return kube.New(o.ConfigFlags)
}

// noKubeconfig: no kubeconfig names a cluster, and neither --server nor a
// pod's service account gives one, where client-go would dial
// localhost:8080 and report a refused connection.
func (o *Options) noKubeconfig() error {
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil || len(raw.Clusters) > 0 || flagValue(o.ConfigFlags.APIServer) != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return nil // the clients say what is wrong, if anything
	}
	return fmt.Errorf("no cluster to ask: %s names none (--kubeconfig FILE, KUBECONFIG or --context; `make demo` runs a lab cluster)", o.kubeconfigFiles())
}

// contextChoice is the context a run would use and what chose it.
func (o *Options) contextChoice(raw clientcmdapi.Config) (name, from string) {
	if c := flagValue(o.ConfigFlags.Context); c != "" {
		return c, "--context"
	}
	return raw.CurrentContext, "its current-context"
}

// contextsOf names the contexts a kubeconfig has, the first few.
func contextsOf(raw clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	if len(names) == 0 {
		return "it has none"
	}
	slices.Sort(names)
	return "its contexts: " + report.FirstFew(names) + " (kubectl config get-contexts; --context NAME)"
}

// kubeconfigFiles names where the kubeconfig was looked for.
func (o *Options) kubeconfigFiles() string {
	if f := flagValue(o.ConfigFlags.KubeConfig); f != "" {
		return "--kubeconfig " + f
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return "KUBECONFIG=" + env
	}
	return strings.Replace(clientcmd.RecommendedHomeFile, os.Getenv("HOME"), "~", 1)
}

func flagValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
