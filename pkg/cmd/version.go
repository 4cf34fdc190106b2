package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/version"
)

// versionInfo is what `version -o json|yaml` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Example: `  # The version, commit and build date, for a bug report
  kubectl terminating version

  # The same with the Go version and platform, for a script
  kubectl terminating version -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			info := versionInfo{Version: version.String(), Commit: orUnknown(version.Commit), Date: orUnknown(version.Date),
				GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			var out []byte
			var err error
			switch output {
			case "":
				out = fmt.Appendf(nil, "kubectl-terminating %s (commit %s, built %s)\n", info.Version, info.Commit, info.Date)
			case "json":
				out, err = json.MarshalIndent(info, "", "  ")
				out = append(out, '\n')
			case "yaml":
				out, err = yaml.Marshal(info)
			default:
				return fmt.Errorf("--output must be json or yaml, got %q", output)
			}
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml; a line of text without it.")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
