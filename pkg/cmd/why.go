package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func newWhyCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "why [TYPE/NAME ... | TYPE [NAME ...]]",
		Short: "Explain why objects are still Terminating, root cause first",
		Example: `  # Why is this pod still Terminating?
  kubectl terminating why pod/web-0 -n shop

  # Why is this namespace still Terminating?
  kubectl terminating why ns/shop

  # Every terminating object in the current namespace, as JSON for a runbook
  kubectl terminating why -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args, func(r report.Report, st report.Style) error { return report.WriteWhy(o.Out, r, st) })
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Treat named objects that do not exist as already deleted instead of failing.")
	o.registerCompletions(cmd)
	return cmd
}
