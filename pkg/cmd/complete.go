package cmd

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Shell completion through cobra's __complete, which kubectl (1.26+) calls
// through kubectl_complete-terminating: resource types, TYPE/NAME and
// TYPE NAME, namespaces, contexts, output formats, --kind and --group-by.
// Completions read the cluster with the user's kubeconfig and flags, bounded
// so that a TAB never hangs on a slow cluster.

// completionTimeout bounds the reads of one completion.
const completionTimeout = 5 * time.Second

// outputFormats are what -o takes.
var outputFormats = []string{"wide", "json", "yaml", "name", "jsonpath=", "jsonpath-as-json=", "go-template=", "go-template-file="}

// registerCompletions wires the completions of a command that takes
// objects, and of the flags it has.
func (o *Options) registerCompletions(cmd *cobra.Command) {
	cmd.ValidArgsFunction = o.completeObjects
	fixed := func(values []string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, v := range values {
				if strings.HasPrefix(v, toComplete) {
					out = append(out, v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	for name, fn := range map[string]cobra.CompletionFunc{
		"output":   fixed(outputFormats),
		"kind":     o.completeKinds,
		"group-by": fixed(report.GroupKinds),
		"cascade":  fixed(cascades),
	} {
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, fn)
		}
	}
}

// registerRootCompletions wires the kubeconfig flags every command shares.
func (o *Options) registerRootCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		clients, err := o.completionClients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.names(clients, mappingNamespaces, toComplete, ""), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var contexts []string
		for name := range raw.Contexts {
			contexts = append(contexts, name)
		}
		slices.Sort(contexts)
		return contexts, cobra.ShellCompDirectiveNoFileComp
	})
}

var mappingNamespaces = &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Scope: meta.RESTScopeRoot}

// completeObjects completes TYPE, TYPE/NAME, and NAME after a TYPE.
func (o *Options) completeObjects(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	clients, err := o.completionClients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	typeArg := ""
	switch {
	case strings.Contains(toComplete, "/"):
		typeArg, _, _ = strings.Cut(toComplete, "/")
	case len(args) > 0 && !strings.Contains(args[0], "/") && !strings.Contains(args[0], ","):
		typeArg = args[0]
	default:
		return o.types(clients, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	m, err := collect.Mapping(clients.Mapper, typeArg)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if strings.Contains(toComplete, "/") {
		_, namePrefix, _ := strings.Cut(toComplete, "/")
		return o.names(clients, m, namePrefix, typeArg+"/"), cobra.ShellCompDirectiveNoFileComp
	}
	return o.names(clients, m, toComplete, ""), cobra.ShellCompDirectiveNoFileComp
}

// completeKinds completes the last of --kind's comma-separated types.
func (o *Options) completeKinds(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	clients, err := o.completionClients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, t := range o.types(clients, last) {
		out = append(out, done+t)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completionClients are one TAB's clients: built once for it, each request
// bounded by completionTimeout unless --request-timeout says less.
func (o *Options) completionClients() (*kube.Clients, error) {
	if d, err := time.ParseDuration(*o.ConfigFlags.Timeout); err != nil || d == 0 || d > completionTimeout {
		*o.ConfigFlags.Timeout = completionTimeout.String()
	}
	return o.newClients()
}

// types lists the resource types that can be listed, as kubectl names them
// (pods, deployments.apps), starting with prefix.
func (o *Options) types(clients *kube.Clients, prefix string) []string {
	mappings, err := o.collector(clients).ListableMappings(collect.Scope{AllNamespaces: true})
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mappings {
		if name := collect.QualifiedResource(m.Resource); strings.HasPrefix(name, prefix) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// names lists the names of one type in the namespace in scope (all of them
// with -A, cluster-scoped types everywhere), starting with prefix, each
// written after lead.
func (o *Options) names(clients *kube.Clients, m *meta.RESTMapping, prefix, lead string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	var ri metadata.ResourceInterface = clients.Metadata.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace && !o.AllNamespaces {
		ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil
		}
		ri = clients.Metadata.Resource(m.Resource).Namespace(ns)
	}
	list, err := ri.List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		return nil
	}
	var out []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.Name, prefix) {
			out = append(out, lead+item.Name)
		}
	}
	return out
}
