package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/fix"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// On a terminal, fix shows the plan and asks: anything but y applies
// nothing, says so without an error and exits as the objects stand (2);
// y sends the plan's request. Off a terminal, without --confirm, nothing is
// applied and the digest to repeat is named (exit 1).
func TestFixAsksOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		writes int
		exit   int
		said   string
	}{{"n\n", 0, ExitStuck, "Nothing applied: the answer was not y."}, {"\n", 0, ExitStuck, "Nothing applied"}, {"y\n", 1, ExitStuck, "sent: taint node/dead"}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			var dyn *dynamicfake.FakeDynamicClient
			clients := fakes(t, cluster(), func(_ *kubefake.Clientset, c *kube.Clients) { dyn = c.Dynamic.(*dynamicfake.FakeDynamicClient) })
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			var screen bytes.Buffer
			copied := make(chan struct{})
			go func() { _, _ = io.Copy(&screen, ptmx); close(copied) }()
			if _, err := ptmx.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			err = executeOn(t, genericiooptions.IOStreams{In: tty, Out: tty, ErrOut: tty}, clients, func(*Options) {},
				"fix", "pod/web-0", "-n", "shop", "--max-risk", "destructive", "--settle", "0s")
			tty.Close()
			<-copied
			var ec *ExitCodeError
			if got := ExitCode(err); got != tc.exit || !errors.As(err, &ec) || ec.Warning != "" {
				t.Errorf("exit %d (%v), want %d and no other line", got, err, tc.exit)
			}
			if !strings.Contains(screen.String(), tc.said) {
				t.Errorf("no %q on the screen:\n%s", tc.said, screen.String())
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
	// With -o json, the record of the plan not confirmed: its digest is
	// printed, as the error says (stdout was empty).
	out, _, err = execute(t, fakes(t, cluster(), nil), "fix", "pod/web-0", "-n", "shop", "--max-risk", "destructive", "-o", "json")
	var rec fix.Record
	if jerr := json.Unmarshal([]byte(out), &rec); jerr != nil || ExitCode(err) != ExitError || rec.Plan.Digest == "" || rec.Confirmed != "" || len(rec.Sent) != 0 ||
		!strings.Contains(err.Error(), "--confirm "+rec.Plan.Digest) || len(rec.Outcomes) != 1 || rec.Outcomes[0].Result != fix.NotApplied {
		t.Errorf("-o json: exit %d (%v), %v:\n%s", ExitCode(err), err, jerr, out)
	}
}

// The prompt plans again after y: a node recreated under the same name
// while the prompt waited makes a new plan, shown and asked again; n then
// applies nothing, y applies the new plan (the node now there).
func TestFixPromptPlansAgain(t *testing.T) {
	for _, tc := range []struct {
		answers string
		writes  int
		exit    int
	}{{"y\nn\n", 0, ExitStuck}, {"y\ny\n", 1, ExitStuck}} {
		t.Run(strings.ReplaceAll(tc.answers, "\n", " "), func(t *testing.T) {
			var dyn *dynamicfake.FakeDynamicClient
			reads := 0
			recreated := func(typed *kubefake.Clientset, c *kube.Clients) {
				dyn = c.Dynamic.(*dynamicfake.FakeDynamicClient)
				typed.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.(k8stesting.GetAction).GetName() != "dead" {
						return false, nil, nil
					}
					if reads++; reads == 2 { // after the first plan: replaced, for every client
						nodes := corev1.SchemeGroupVersion.WithResource("nodes")
						node, err := typed.Tracker().Get(nodes, "", "dead")
						if err != nil {
							return true, nil, err
						}
						other := node.(*corev1.Node).DeepCopy()
						other.UID, other.ResourceVersion = "uid-dead-2", "90"
						u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(other)
						if err != nil {
							return true, nil, err
						}
						if err := typed.Tracker().Update(nodes, other, ""); err != nil {
							return true, nil, err
						}
						if err := dyn.Tracker().Update(nodes, &unstructured.Unstructured{Object: u}, ""); err != nil {
							return true, nil, err
						}
					}
					return false, nil, nil
				})
			}
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			var screen bytes.Buffer
			copied := make(chan struct{})
			go func() { _, _ = io.Copy(&screen, ptmx); close(copied) }()
			if _, err := ptmx.Write([]byte(tc.answers)); err != nil {
				t.Fatal(err)
			}
			err = executeOn(t, genericiooptions.IOStreams{In: tty, Out: tty, ErrOut: tty}, fakes(t, cluster(), recreated), func(*Options) {},
				"fix", "pod/web-0", "-n", "shop", "--max-risk", "destructive", "--settle", "0s")
			tty.Close() // the reader drains what is left, then ends
			<-copied
			if got := ExitCode(err); got != tc.exit {
				t.Errorf("exit %d (%v), want %d", got, err, tc.exit)
			}
			if got := writes(dyn.Actions()); len(got) != tc.writes {
				t.Errorf("writes %v, want %d", got, tc.writes)
			}
			text := strings.Join(strings.Fields(screen.String()), " ")
			if !strings.Contains(text, "The cluster changed while the plan waited for an answer") || strings.Count(text, "[y/N]") != 2 ||
				!strings.Contains(text, "on: uid uid-dead-2, resourceVersion 90") {
				t.Errorf("screen:\n%s", screen.String())
			}
		})
	}
}

// A stale --confirm is refused even when the new plan sends nothing.
func TestFixStaleDigestWithNothingToSend(t *testing.T) {
	_, _, err := execute(t, fakes(t, cluster(), nil), "fix", "pod/web-0", "-n", "shop", "--confirm", "0123456789abcdef")
	if ExitCode(err) != ExitError || !strings.Contains(err.Error(), "nothing applied: the plan's digest is ") {
		t.Errorf("exit %d (%v)", ExitCode(err), err)
	}
}

// fix writes, so it is always bounded: --timeout 0 is refused before any
// read (it used to be a deadline already passed).
func TestFixTimeoutMustBePositive(t *testing.T) {
	_, _, err := execute(t, fakes(t, cluster(), nil), "fix", "pod/web-0", "-n", "shop", "--timeout", "0s")
	if ExitCode(err) != ExitError || err == nil || !strings.Contains(err.Error(), "--timeout must be positive") {
		t.Errorf("exit %d (%v)", ExitCode(err), err)
	}
}

// fix's exit codes, as docs/runbooks.md states them.
func TestFixExitCodes(t *testing.T) {
	missing := []report.Skip{{Check: "nodes/dead", Reason: "Forbidden"}}
	for _, tc := range []struct {
		results []string
		missing []report.Skip
		exit    int
		warning bool
	}{
		{[]string{fix.Gone}, nil, ExitOK, false},
		{[]string{fix.Gone}, missing, ExitOK, false}, // gone is read, not judged
		{[]string{fix.Progressing}, nil, ExitOK, false},
		{[]string{fix.Progressing}, missing, ExitError, false}, // a partial diagnosis cannot say "not stuck"
		{[]string{fix.Gone, fix.StillStuck}, nil, ExitStuck, false},
		{[]string{fix.NotApplied}, missing, ExitStuck, true},
		{[]string{fix.DryRunOnly, fix.Changed}, nil, ExitStuck, false},
		{[]string{fix.StillStuck, fix.Refused}, nil, ExitError, false},
		{[]string{fix.Failed}, nil, ExitError, false},
	} {
		var rec fix.Record
		for _, r := range tc.results {
			rec.Outcomes = append(rec.Outcomes, fix.Outcome{Result: r})
		}
		err := fixExit(rec, tc.missing)
		var ec *ExitCodeError
		warned := errors.As(err, &ec) && strings.Contains(ec.Warning, "could not read nodes/dead (Forbidden)")
		if ExitCode(err) != tc.exit || warned != tc.warning {
			t.Errorf("%v, partial %v: exit %d (%v), warning %v", tc.results, tc.missing != nil, ExitCode(err), err, warned)
		}
	}
}

// A stuck report that is also partial exits 2 and says on stderr, in one
// line, what it could not read.
func TestPartialStuckReportWarns(t *testing.T) {
	r := report.Report{Items: []report.Item{{Stuck: true}}, Skipped: []report.Skip{{Check: "events", Reason: "Timeout"}}}
	var errOut bytes.Buffer
	if code := finish(&errOut, exitFor(r, false)); code != ExitStuck || errOut.String() != "warning: the report is partial: could not read events (Timeout); the report lists them under skipped\n" {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
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
