package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func newExplainCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain [CODE]",
		Short: "Explain a cause code: what it means, why it blocks, what to do; without CODE, list the codes",
		Example: `  # Every cause code, with a few words each
  kubectl terminating explain

  # A code's signal, evidence, why it blocks, remediation and risks
  kubectl terminating explain NodeUnreachable`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, c := range catalog.Codes() {
				if len(args) == 0 && strings.HasPrefix(string(c), toComplete) {
					out = append(out, string(c))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				rows := make([][]string, 0, len(catalog.Codes()))
				for _, c := range catalog.Codes() {
					e, _ := catalog.Lookup(c)
					rows = append(rows, []string{string(c), e.Title})
				}
				return report.WriteProseTable(o.Out, []string{"CODE", "MEANING"}, rows, o.width())
			}
			code, suggestions := catalog.Find(args[0])
			e, ok := catalog.Describe(code)
			if !ok {
				hint := "`kubectl terminating explain` lists them"
				if len(suggestions) > 0 {
					names := make([]string, 0, len(suggestions))
					for _, c := range suggestions[:min(len(suggestions), 3)] {
						names = append(names, string(c))
					}
					hint = "did you mean " + strings.Join(names, ", ") + "? " + hint
				}
				return fmt.Errorf("unknown cause code %q: %s", args[0], hint)
			}
			return report.WriteExplanation(o.Out, e, report.Style{Color: o.colour(), Width: min(o.width(), report.ExplainWidth)})
		},
	}
	o.addNoColorFlag(cmd)
	return cmd
}
