package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func newListCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list [TYPE]",
		Aliases: []string{"ls"},
		Short:   "List objects that are Terminating, with their top cause",
		Example: `  # Everything stuck in the cluster, most severe first
  kubectl terminating list -A

  # Only what has been terminating for more than an hour
  kubectl terminating list -A --older-than 1h`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args, func(r report.Report, st report.Style) error { return report.WriteList(o.Out, r, st) })
		},
	}
	o.addFlags(cmd)
	return cmd
}
