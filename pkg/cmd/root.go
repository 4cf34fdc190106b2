// Package cmd holds the cobra commands; the work happens in collect,
// diagnose and report.
package cmd

import (
	"flag"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/version"
)

// NewRoot builds `kubectl terminating`.
func NewRoot(streams genericiooptions.IOStreams) *cobra.Command {
	return newRoot(streams, func(*Options) {})
}

// addVerbosityFlag adds kubectl's -v: client-go logs each request on stderr
// from -v=6 (method, URL, status, time), its headers and bodies above. klog
// is silent otherwise (main): the plugin reports what matters itself.
func addVerbosityFlag(root *cobra.Command, errOut io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := fs.Lookup("v")
	v.Usage = "Log level on stderr: 6 logs each request to the apiserver (method, URL, status, time), 8 their bodies too."
	root.PersistentFlags().AddGoFlag(v)
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if f := cmd.Flags().Lookup("v"); f != nil && f.Changed && f.Value.String() != "0" {
			klog.SetOutput(errOut)
		}
	}
}

// newRoot lets tests swap the clients and the clock of both commands.
func newRoot(streams genericiooptions.IOStreams, customize func(*Options)) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	kube.Tune(flags, version.UserAgent())
	opts := func() *Options {
		o := newOptions(flags, streams)
		customize(o)
		return o
	}
	root := &cobra.Command{
		Use:   "kubectl-terminating",
		Short: "Explain why Kubernetes objects are stuck Terminating",
		Long: `Explain why pods, namespaces and other objects stay Terminating, with the
evidence read from the cluster and remediation ordered from safe to risky.
It only reads from the cluster.

Exit codes: 0 nothing stuck (wait: everything gone), 2 at least one stuck
object (wait: timed out), 1 the tool failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl terminating",
		},
	}
	flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Lookup("request-timeout").Usage = kube.RequestTimeoutUsage
	addVerbosityFlag(root, streams.ErrOut)
	// cobra's own `completion` command writes a script for the binary, not
	// for `kubectl terminating`: kubectl completes plugins through
	// kubectl_complete-terminating, which calls __complete.
	root.CompletionOptions.HiddenDefaultCmd = true
	opts().registerRootCompletions(root)
	root.AddCommand(
		newWhyCommand(opts()),
		newListCommand(opts()),
		newWaitCommand(opts()),
		newExplainCommand(streams),
		newVersionCommand(streams),
	)
	return root
}
