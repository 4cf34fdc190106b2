package cmd

import (
	"fmt"
	"strings"
	"text/template"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// usageTemplate is cobra's, without the ~20 global flags (kubeconfig, -n,
// -v...) that made every command's help mostly the same: they are listed by
// `kubectl terminating options`, as kubectl does. Its prose is wrapped to
// the output's width at word boundaries (helpFuncs); commands are kept whole.
const usageTemplate = `Usage:{{if .Runnable}}
{{useLine .}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{examples .Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
{{commandRow .}}{{end}}{{end}}{{end}}{{if .LocalNonPersistentFlags.HasAvailableFlags}}

Flags:
{{flagUsages .LocalNonPersistentFlags | trimTrailingWhitespaces}}{{end}}

{{if .HasAvailableSubCommands}}{{wrapped (printf "Use \"%s [command] --help\" for more information about a command." .CommandPath)}}
{{end}}{{wrapped (printf "Use \"%s options\" for a list of global command-line options (applies to all commands)." .Root.CommandPath)}}
`

// helpTemplate is cobra's, its description wrapped.
const helpTemplate = `{{with (or .Long .Short)}}{{wrapped . | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}` + usageTemplate + `{{end}}`

// optionsTemplate is the help of `options`: the flags every command takes.
const optionsTemplate = `The following options can be passed to any command:

{{flagUsages .InheritedFlags | trimTrailingWhitespaces}}
`

// setHelp makes the command's help, and its subcommands', tmpl rendered
// by writeHelp.
func setHelp(cmd *cobra.Command, tmpl string) {
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if err := writeHelp(c, tmpl); err != nil {
			c.PrintErrln(err)
		}
	})
}

// writeHelp renders a help template for c on its output, wrapped to that
// output's width. It is rendered here rather than by cobra, which renders
// the usage into a buffer of its own: the width of the terminal is known
// only from the output itself.
func writeHelp(c *cobra.Command, tmpl string) error {
	out := c.OutOrStdout()
	width := knownWidth(out, isTerminal)
	if width == 0 {
		width = report.DefaultWidth
	}
	t, err := template.New("help").Funcs(helpFuncs(width)).Parse(tmpl)
	if err != nil {
		return err
	}
	return t.Execute(out, c)
}

// helpFuncs are the help templates' functions, for a help of that width.
func helpFuncs(width int) template.FuncMap {
	return template.FuncMap{
		"trimTrailingWhitespaces": func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
		// wrapped is prose reflowed: each paragraph's lines joined, then
		// broken at spaces.
		"wrapped": func(text string) string { return reflow(text, width) },
		// flagUsages are pflag's, wrapped by pflag.
		"flagUsages": func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(width) },
		// useLine is the synopsis, its continuation lines indented.
		"useLine": func(c *cobra.Command) string {
			return strings.Join(report.WrapHanging("  ", "      ", c.UseLine(), width), "\n")
		},
		// commandRow is a subcommand's line, its summary wrapped under itself.
		"commandRow": func(sub *cobra.Command) string {
			name := "  " + sub.Name() + strings.Repeat(" ", max(sub.NamePadding()-len(sub.Name()), 0)) + " "
			return strings.Join(report.WrapHanging(name, strings.Repeat(" ", len(name)), sub.Short, width), "\n")
		},
		// examples are kept whole but for their comments, wrapped as
		// comments: a command is pasted as it is.
		"examples": func(example string) string {
			lines := strings.Split(example, "\n")
			for i, l := range lines {
				if body := strings.TrimLeft(l, " "); strings.HasPrefix(body, "# ") {
					lead := l[:len(l)-len(body)] + "# "
					lines[i] = strings.Join(report.WrapHanging(lead, lead, body[2:], width), "\n")
				}
			}
			return strings.Join(lines, "\n")
		},
	}
}

// reflow wraps each paragraph of text (lines between blank lines) to width.
func reflow(text string, width int) string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		out = append(out, strings.Join(report.WrapHanging("", "", strings.Join(strings.Fields(para), " "), width), "\n"))
	}
	return strings.Join(out, "\n\n")
}

func newOptionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "options",
		Short: "Print the list of flags inherited by all commands",
		Example: `  # The kubeconfig, namespace, impersonation and logging flags every command takes
  kubectl terminating options`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return writeHelp(cmd, optionsTemplate) },
	}
	setHelp(cmd, optionsTemplate)
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
