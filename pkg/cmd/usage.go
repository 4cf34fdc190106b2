package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// usageTemplate is cobra's, without the ~20 global flags (kubeconfig, -n,
// -v...) that made every command's help mostly the same: they are listed by
// `kubectl terminating options`, as kubectl does.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .LocalNonPersistentFlags.HasAvailableFlags}}

Flags:
{{.LocalNonPersistentFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

{{if .HasAvailableSubCommands}}Use "{{.CommandPath}} [command] --help" for more information about a command.
{{end}}Use "{{.Root.CommandPath}} options" for a list of global command-line options (applies to all commands).
`

// optionsTemplate is the help of `options`: the flags every command takes.
const optionsTemplate = `The following options can be passed to any command:

{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}
`

func newOptionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "options",
		Short: "Print the list of flags inherited by all commands",
		Example: `  # The kubeconfig, namespace, impersonation and logging flags every command takes
  kubectl terminating options`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), cmd.UsageString())
			return err
		},
	}
	cmd.SetUsageTemplate(optionsTemplate)
	cmd.SetHelpTemplate("{{.UsageString}}")
	return cmd
}

// usageError is a mistake on the command line (an unknown flag, a bad value,
// too many arguments), as one line that says where help is: exit 1.
func usageError(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())
}

// usageArgs makes an argument count check's error a usageError.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError(cmd, err)
		}
		return nil
	}
}
