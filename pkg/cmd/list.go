package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// listOptions are list's own flags: how its rows are sorted, grouped and
// headed, and -w.
type listOptions struct {
	NoHeaders bool
	SortBy    string
	GroupBy   string
	// Watch (list -w) follows the listed objects and prints a row as each changes or goes.
	Watch bool
}

func (l *listOptions) validate(o *Options) error {
	if l.SortBy != "" {
		if err := report.SortBy(nil, l.SortBy); err != nil {
			return err
		}
	}
	if !report.ValidGroupBy(l.GroupBy) {
		return fmt.Errorf("--group-by must be one of %s, got %q", strings.Join(report.GroupKinds, ", "), l.GroupBy)
	}
	if !l.Watch {
		return nil
	}
	if o.Replay != "" {
		return fmt.Errorf("--watch follows the cluster; a snapshot does not change")
	}
	if f := *o.PrintFlags.OutputFormat; f != "" && f != "wide" {
		return fmt.Errorf("--watch prints tables (default or -o wide), not -o %s: for a script, wait for the objects with `kubectl terminating wait`", f)
	}
	if l.GroupBy != "" {
		return fmt.Errorf("--watch prints a row per object, not --group-by")
	}
	return nil
}

func newListCommand(o *Options) *cobra.Command {
	l := &listOptions{}
	o.list = l
	cmd := &cobra.Command{
		Use:     "list [TYPE]",
		Aliases: []string{"ls"},
		Short:   "List objects that are Terminating, with their top cause",
		Example: `  # Everything stuck in the cluster, most severe first
  kubectl terminating list -A

  # Only what has been terminating for more than an hour
  kubectl terminating list -A --older-than 1h

  # Thousands of leftovers: one row per finalizer that holds them
  kubectl terminating list -n preview-42 --group-by finalizer

  # Follow them: a row each time one's diagnosis changes, and as each goes
  kubectl terminating list -n preview-42 -w`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args, func(r report.Report, st report.Style) error { return report.WriteList(o.Out, r, st) })
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&l.NoHeaders, "no-headers", false, "Print the rows only: no header line, no summary (tables only).")
	cmd.Flags().StringVar(&l.SortBy, "sort-by", "", "Sort the rows by a JSONPath into each item of the JSON report ('.overdueSeconds', '{.causes[0].code}'). Default: most severe first.")
	cmd.Flags().StringVar(&l.GroupBy, "group-by", "", "Fold the rows into one per "+strings.Join(report.GroupKinds, ", ")+" (with counts and examples); tables only.")
	cmd.Flags().BoolVarP(&l.Watch, "watch", "w", false, "Then follow them: a row as one's verdict changes or it goes; ends when all are gone (exit 0), or at --timeout if given (the exit code of what is left).")
	o.registerCompletions(cmd)
	return cmd
}
