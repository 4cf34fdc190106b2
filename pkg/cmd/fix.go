package cmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/fix"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// FixUserAgentSuffix ends the user agent of fix's requests, the only ones
// that may write.
const FixUserAgentSuffix = "fix"

// fixOptions are fix's own flags.
type fixOptions struct {
	maxRisk             string
	allowLiveController bool
	confirm             string
	dryRun              string
	settle              time.Duration
}

func newFixCommand(o *Options) *cobra.Command {
	f := &fixOptions{}
	cmd := &cobra.Command{
		Use:   "fix TYPE/NAME... [--max-risk=low] [--confirm=DIGEST]",
		Short: "Carry out the remediation the diagnosis plans, one verified step at a time (the only command that writes)",
		Long: `Plan the remediation steps of the diagnosis that are API requests the plugin
can send itself (remove one named finalizer, delete an orphaned webhook
configuration or APIService), up to --max-risk, and carry them out one at a
time: each on a fresh read (a JSON patch that tests the object's uid,
resourceVersion and the finalizer's index), each followed by a new diagnosis.
An object that is not stuck is left alone; a finalizer whose controller looks
alive is not removed (--allow-live-controller); a step needing a person ends
the object's plan. The plan says, before anything runs, what each step leaves
behind.

On a terminal the plan is shown and applied after a y/N prompt. Without one,
nothing is applied unless --confirm repeats the digest printed with the plan:
a runbook applies exactly the plan a person reviewed, and a cluster that
changed since refuses it. After y, the objects are planned again: a plan
that changed while the prompt waited is shown and asked again.

Every step is sent only if a fresh diagnosis, just before it, still plans
it within the same limits, for the same object (uid) at the version it was
decided on (resourceVersion): a node revived or recreated, a controller
come back, a webhook configuration recreated or changed stops the fix.

Exit 0: every object gone, or no longer stuck and finishing by itself;
2: some still held (the prompt answered no included); 1: an error, a
refused or failed request, a plan not confirmed off a terminal, or a partial
diagnosis that cannot say nothing is stuck.`,
		Example: `  # Review the plan for an object whose operator was uninstalled (nothing is applied)
  kubectl terminating fix widgets.example.com/w1 -n shop --max-risk high < /dev/null

  # Apply exactly that plan, in a runbook
  kubectl terminating fix widgets.example.com/w1 -n shop --max-risk high --confirm 3f9c0a1b2c3d4e5f -o json

  # Let the apiserver check every request without changing anything
  kubectl terminating fix ns/shop --max-risk high --dry-run=server`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.fix(cmd, args, f)
		},
	}
	cmd.Flags().StringVar(&f.maxRisk, "max-risk", "low", "The riskiest step planned: none, low, high or destructive.")
	cmd.Flags().BoolVar(&f.allowLiveController, "allow-live-controller", false, "Also remove a finalizer whose controller looks alive (it may be about to finish its cleanup).")
	cmd.Flags().StringVar(&f.confirm, "confirm", "", "Apply without a prompt, only if the plan's digest is this one.")
	cmd.Flags().StringVar(&f.dryRun, "dry-run", "none", `"server": send every request as a server-side dry run (nothing changes); "none": apply.`)
	cmd.Flags().DurationVar(&f.settle, "settle", 15*time.Second, "How long each step is given to take effect before the object is judged again.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "Bound the whole fix (reads, requests, waits); must be positive.")
	cmd.Flags().StringVarP(o.PrintFlags.OutputFormat, "output", "o", "", "Output format: json or yaml (the record: plan, requests sent, answers, outcomes).")
	cmd.Flags().BoolVar(&o.NoColor, "no-color", false, "Never colour the output.")
	o.registerCompletions(cmd)
	return cmd
}

func (o *Options) fix(cmd *cobra.Command, args []string, f *fixOptions) error {
	o.command = "why"
	maxRisk, err := fix.ParseRisk(f.maxRisk)
	if err != nil {
		return err
	}
	if f.dryRun != "none" && f.dryRun != "server" {
		return fmt.Errorf("--dry-run %q: none or server", f.dryRun)
	}
	format := *o.PrintFlags.OutputFormat
	if format != "" && format != "json" && format != "yaml" {
		return fmt.Errorf("-o %q: fix prints json or yaml", format)
	}
	*o.PrintFlags.OutputFormat = "" // Validate knows the report's formats, not the record's
	// Audit logs tell fix's requests from the read-only commands' by the
	// user agent's suffix: kubectl-terminating/VERSION fix.
	if wrap := o.ConfigFlags.WrapConfigFn; wrap != nil {
		o.ConfigFlags.WrapConfigFn = func(c *rest.Config) *rest.Config {
			c = wrap(c)
			c.UserAgent += " " + FixUserAgentSuffix
			return c
		}
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive: fix writes, and a write is bounded")
	}
	sig, ctx, bound, stop, err := o.start(cmd, args, false)
	if err != nil {
		return err
	}
	defer stop()

	limits := fix.Limits{MaxRisk: maxRisk, AllowLiveController: f.allowLiveController}
	human := format == ""
	var rec fix.Record
	var diagnosis report.Report
	err = o.settle(sig, ctx, bound, 0, func() error {
		// plan diagnoses the objects again and plans within the limits.
		plan := func() (fix.Plan, error) {
			var err error
			diagnosis, err = o.Diagnose(ctx)
			return fix.MakePlan(diagnosis, limits), err
		}
		p, err := plan()
		if err != nil {
			return err
		}
		if human {
			if err := fix.WritePlan(o.Out, p, o.width()); err != nil {
				return err
			}
		}
		confirmed, p, err := o.confirmFix(p, f, plan, human)
		if errors.Is(err, errDeclined) { // no error: fix exits as the objects stand (2: still held)
			fmt.Fprintln(o.ErrOut, "Nothing applied: the answer was not y.")
			if rec = fix.NotConfirmed(p); !human {
				return writeRecord(o.Out, rec, format)
			}
			return nil
		}
		if err != nil {
			if !human { // the plan and its digest, for the runbook to review and confirm
				if werr := writeRecord(o.Out, fix.NotConfirmed(p), format); werr != nil {
					return werr
				}
			}
			return err
		}
		clients, err := o.newClients()
		if err != nil {
			return err
		}
		o.IgnoreNotFound = true // an object the fix deleted is gone, not an error
		runner := fix.Runner{
			Sender:   fix.Sender{Dynamic: clients.Dynamic, DryRun: f.dryRun == "server", Now: o.now},
			Limits:   limits,
			Diagnose: o.Diagnose,
			Settle:   f.settle, Poll: time.Second,
		}
		rec = runner.Run(ctx, p, confirmed)
		if human {
			fmt.Fprintln(o.Out)
			return fix.WriteRecord(o.Out, rec, o.width())
		}
		return writeRecord(o.Out, rec, format)
	})
	if err != nil {
		return err
	}
	return fixExit(rec, diagnosis.Incomplete())
}

// errDeclined: the person at the prompt did not answer y.
var errDeclined = errors.New("the plan was not confirmed")

// confirmFix returns how the plan was confirmed, and the plan confirmed: on
// a terminal by a y/N answer, after which the objects are planned again
// (replan) and a plan that changed while the prompt waited is shown and
// asked again; else by --confirm naming its digest; "" with a plan that
// sends nothing. A plan not confirmed is an error (errDeclined: a person
// answered no): nothing is sent.
func (o *Options) confirmFix(p fix.Plan, f *fixOptions, replan func() (fix.Plan, error), human bool) (string, fix.Plan, error) {
	switch {
	case f.confirm != "" && f.confirm != p.Digest:
		return "", p, fmt.Errorf("nothing applied: the plan's digest is %s, not %s: the cluster changed since the plan was reviewed; review the new plan", p.Digest, report.Safe(f.confirm))
	case p.Steps() == 0:
		return "", p, nil
	case f.confirm != "":
		return "digest", p, nil
	case f.dryRun == "server":
		return "dry run", p, nil
	}
	in, ok := o.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) || !o.isTerminal(o.ErrOut) {
		return "", p, fmt.Errorf("nothing applied: without a terminal, fix applies a plan only with --confirm %s (its digest, printed above)", p.Digest)
	}
	answers := bufio.NewReaderSize(in, 64) // an answer is a short line: a longer one is no
	for {
		fmt.Fprintf(o.ErrOut, "Apply plan %s (%s)? [y/N] ", p.Digest, report.Count(p.Steps(), "request"))
		answer, _ := answers.ReadSlice('\n')
		if a := strings.ToLower(strings.TrimSpace(string(answer))); a != "y" && a != "yes" {
			return "", p, errDeclined
		}
		fresh, err := replan()
		if err != nil {
			return "", p, err
		}
		if fresh.Digest == p.Digest {
			return "terminal", p, nil
		}
		fmt.Fprintf(o.ErrOut, "The cluster changed while the plan waited for an answer: plan %s is now plan %s.\n", p.Digest, fresh.Digest)
		out := o.Out
		if !human {
			out = o.ErrOut
		}
		if err := fix.WritePlan(out, fresh, o.width()); err != nil {
			return "", p, err
		}
		if fresh.Steps() == 0 {
			return "", fresh, nil
		}
		p = fresh
	}
}

func writeRecord(w io.Writer, rec fix.Record, format string) error {
	data, err := json.MarshalIndent(rec, "", "    ")
	if err == nil && format == "yaml" {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, strings.TrimRight(string(data), "\n"))
	return err
}

// fixExit: 1 when a request failed or a step was refused; 2 when some
// object is still held; 0 when every object is gone, or no longer stuck
// and finishing by itself, as why's 0, which a partial diagnosis cannot
// say (1, as why).
func fixExit(rec fix.Record, missing []report.Skip) error {
	held, progressing := false, false
	for _, out := range rec.Outcomes {
		switch out.Result {
		case fix.Failed, fix.Refused:
			return &ExitCodeError{Code: ExitError}
		case fix.Gone:
		case fix.Progressing:
			progressing = true
		default:
			held = true
		}
	}
	switch {
	case held:
		stuck := &ExitCodeError{Code: ExitStuck}
		if len(missing) > 0 {
			stuck.Warning = partial(missing)
		}
		return stuck
	case progressing && len(missing) > 0:
		return &PartialError{Missing: missing}
	}
	return nil
}
