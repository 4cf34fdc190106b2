package cmd

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Each command's help shows its own flags and examples; the global flags
// (kubeconfig, -n, -v...) are listed once, by `options`, as kubectl does.
func TestHelpLeavesGlobalFlagsToOptions(t *testing.T) {
	t.Setenv("COLUMNS", "200") // its lines whole (TestEveryScreenOnATerminal wraps them)
	for _, command := range []string{"why", "list", "wait", "explain", "version", "options"} {
		out, _, err := execute(t, nil, command, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", command, err)
		}
		if command == "options" {
			if out != optionsOut(t) {
				t.Errorf("options --help differs from options:\n%s", out)
			}
			continue
		}
		if strings.Contains(out, "--kubeconfig") || strings.Contains(out, "Global Flags") || strings.Contains(out, "--as-group") {
			t.Errorf("%s --help lists the global flags:\n%s", command, out)
		}
		if !strings.Contains(out, "Examples:\n  ") {
			t.Errorf("%s --help has no examples:\n%s", command, out)
		}
		if !strings.HasSuffix(out, "\n\nUse \"kubectl terminating options\" for a list of global command-line options (applies to all commands).\n") {
			t.Errorf("%s --help does not end with where the global flags are:\n%s", command, out)
		}
	}
	if out, _, _ := execute(t, nil, "why", "--help"); strings.Count(out, "\n") > 40 {
		t.Errorf("why --help is %d lines, want at most 40:\n%s", strings.Count(out, "\n"), out)
	}
	out := optionsOut(t)
	if !strings.HasPrefix(out, "The following options can be passed to any command:\n\n") {
		t.Fatalf("options:\n%s", out)
	}
	for _, flag := range []string{"--kubeconfig string", "--context string", "-n, --namespace string", "--request-timeout string", "-v, --v Level", "--as string"} {
		if !strings.Contains(out, flag) {
			t.Errorf("options does not list %s:\n%s", flag, out)
		}
	}
	for _, local := range []string{"--timeout", "--output", "--snapshot"} {
		if strings.Contains(out, local) {
			t.Errorf("options lists %s, a command's own flag:\n%s", local, out)
		}
	}
}

func optionsOut(t *testing.T) string {
	t.Helper()
	out, _, err := execute(t, nil, "options")
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	return out
}

// Every command line of the examples runs a command that exists with flags
// it takes (up to the shell's next command: &&, |, ;).
func TestExamplesParse(t *testing.T) {
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), func(*Options) {})
	for _, c := range root.Commands() {
		for _, line := range strings.Split(c.Example, "\n") {
			_, cmdline, ok := strings.Cut(line, "kubectl terminating ")
			if !ok {
				continue
			}
			cmdline, _, _ = strings.Cut(cmdline, "#")
			if i := strings.IndexAny(cmdline, "&|;"); i >= 0 { // the rest of a shell line is another command
				cmdline = cmdline[:i]
			}
			args := strings.Fields(cmdline)
			found, rest, err := root.Find(args)
			if err == nil {
				err = found.ParseFlags(rest)
			}
			if err != nil || found == root {
				t.Errorf("%s's example %q: %v", c.Name(), line, err)
			}
		}
	}
}

// The wait example's text says what its command does: the pods of one node.
func TestWaitExampleAgrees(t *testing.T) {
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), func(*Options) {})
	wait, _, _ := root.Find([]string{"wait"})
	if !strings.Contains(wait.Example, "The pods of node-1 in namespace shop") || !strings.Contains(wait.Example, "wait pods -n shop --field-selector spec.nodeName=node-1") {
		t.Errorf("wait's example:\n%s", wait.Example)
	}
}

// A mistake on the command line says where help is, in one line, exit 1.
func TestUsageErrorsPointToHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"why", "--no-such-flag"}, "unknown flag: --no-such-flag (see 'kubectl terminating why --help')"},
		{[]string{"list", "--timeout", "soon"}, `invalid argument "soon" for "--timeout" flag`},
		{[]string{"list", "a", "b"}, "accepts at most 1 arg(s), received 2 (see 'kubectl terminating list --help')"},
		{[]string{"wait"}, "requires at least 1 arg(s), only received 0 (see 'kubectl terminating wait --help')"},
		{[]string{"version", "x"}, "(see 'kubectl terminating version --help')"},
		{[]string{"preflight", "ns/a", "--cascade", "sideways"}, `invalid argument "sideways" for "--cascade" flag: must be one of background, foreground, orphan`},
		{[]string{"list", "-o", "xml"}, `unknown output format "xml": -o takes wide, json, yaml, name, jsonpath=..., `},
	} {
		_, _, err := execute(t, fakes(t, cluster(), nil), tc.args...)
		if ExitCode(err) != ExitError || !strings.Contains(Explain(err), tc.want) || strings.Contains(Explain(err), "\n") {
			t.Errorf("%v: exit %d, error %v; want 1 and one line with %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}
