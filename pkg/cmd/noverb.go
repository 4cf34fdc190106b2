package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Issue 39: a first word that is no command is answered, not only refused.
// The verb forgotten before an object (`kubectl terminating pod/web-0 -n
// shop`) is the commonest: the answer is the command with `why`, flags
// included; a misspelt verb gets cobra's suggestions.

// rootArgs takes the place of cobra's check of the root's words: it still
// refuses them, with the command that was likely meant.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	word := args[0]
	if strings.Contains(word, "/") && !strings.HasPrefix(word, "-") {
		return fmt.Errorf("unknown command %q: did you mean %q? (an object comes after a verb: why, list, wait, fix)",
			word, "kubectl terminating "+strings.Join(append([]string{"why"}, append(args, changedFlags(cmd.Flags())...)...), " "))
	}
	msg := fmt.Sprintf("unknown command %q", word)
	if suggestions := cmd.SuggestionsFor(word); len(suggestions) > 0 {
		msg += fmt.Sprintf(": did you mean %s?", orList(suggestions))
	}
	return fmt.Errorf("%s (kubectl terminating --help lists the commands)", msg)
}

// changedFlags are the flags given, as --name=value.
func changedFlags(flags *pflag.FlagSet) []string {
	var out []string
	flags.Visit(func(f *pflag.Flag) {
		out = append(out, fmt.Sprintf("--%s=%s", f.Name, f.Value))
	})
	return out
}
