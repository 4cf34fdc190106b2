package cmd

import (
	"io"
	"strings"
	"testing"

	"github.com/creack/pty"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

// On a terminal, fix shows the plan and asks: anything but y applies
// nothing; y sends the plan's request. Off a terminal, without --confirm,
// nothing is applied and the digest to repeat is named.
func TestFixAsksOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		writes int
		exit   int
	}{{"n\n", 0, ExitError}, {"\n", 0, ExitError}, {"y\n", 1, ExitStuck}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			var dyn *dynamicfake.FakeDynamicClient
			clients := fakes(t, cluster(), func(_ *kubefake.Clientset, c *kube.Clients) { dyn = c.Dynamic.(*dynamicfake.FakeDynamicClient) })
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			go func() { _, _ = io.Copy(io.Discard, ptmx) }() // the screen
			if _, err := ptmx.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			err = executeOn(t, genericiooptions.IOStreams{In: tty, Out: tty, ErrOut: tty}, clients, func(*Options) {},
				"fix", "pod/web-0", "-n", "shop", "--max-risk", "destructive", "--settle", "0s")
			tty.Close()
			if got := ExitCode(err); got != tc.exit {
				t.Errorf("exit %d (%v), want %d", got, err, tc.exit)
			}
			if got := writes(dyn.Actions()); len(got) != tc.writes {
				t.Errorf("writes %v, want %d", got, tc.writes)
			}
		})
	}
	// Off a terminal: the plan, and how to apply exactly it.
	out, _, err := execute(t, fakes(t, cluster(), nil), "fix", "pod/web-0", "-n", "shop", "--max-risk", "destructive")
	if ExitCode(err) != ExitError || !strings.Contains(err.Error(), "nothing applied: without a terminal, fix applies a plan only with --confirm ") ||
		!strings.Contains(out, "taint node/dead node.kubernetes.io/out-of-service=nodeshutdown:NoExecute") {
		t.Errorf("exit %d (%v):\n%s", ExitCode(err), err, out)
	}
}

func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource)
		}
	}
	return out
}
