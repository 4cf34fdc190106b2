package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const (
	// progressInterval is how often wait diagnoses what is left, for the
	// progress line on a terminal.
	progressInterval = 5 * time.Second
)

// waitCommand is the command that waits for objects to go.
const waitCommand = "wait"

func newWaitCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait TYPE/NAME... [--timeout=5m]",
		Short: "Wait until objects are gone; on timeout, explain what is still there",
		Long: `Wait until the named objects are deleted: the runbook step after
'kubectl delete --wait=false'. Each object that goes is printed as "TYPE/NAME deleted".
On timeout the diagnosis of what is still there is printed (as 'why' would; its
reads have 10s more) and the exit code is 2. On a terminal, stderr shows what it waits on and the current
top cause as it changes, below it the time spent and left of --timeout, every second. An object asked for by name that does not exist is an
error (exit 1): a typo must not look like success. With --ignore-not-found it
counts as deleted and is printed so, as kubectl wait --for=delete does (for a
delete that may already have finished).`,
		Example: `  # Delete a namespace and wait up to 5 minutes, with the root cause if it sticks
  # (--ignore-not-found: the namespace may be gone before wait starts)
  kubectl delete ns shop --wait=false && kubectl terminating wait ns/shop --timeout=5m --ignore-not-found

  # The pods of node-1 in namespace shop, after a drain; as JSON on timeout
  kubectl terminating wait pods -n shop --field-selector spec.nodeName=node-1 --timeout=2m -o json`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.command = cmd.Name()
			// --timeout bounds everything from here (finding the objects,
			// the wait); the diagnosis made at the timeout has its own
			// finalRead past it.
			sig, run, bound, stop, err := o.start(cmd, args, false)
			if err != nil {
				return err
			}
			defer stop()
			return o.settle(sig, run, bound, finalRead, func() error { return o.wait(sig, run, bound) })
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long to wait before printing the diagnosis of what is left and exiting 2.")
	cmd.Flags().StringVarP(&o.LabelSelector, "selector", "l", "", "Label selector, for a TYPE without names.")
	cmd.Flags().BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Count an object asked for by name that does not exist as deleted (kubectl wait's behaviour) instead of an error.")
	o.addFieldSelectorFlag(cmd)
	o.addSaveSnapshotFlag(cmd)
	o.addOutputFlags(cmd)
	o.registerCompletions(cmd)
	return cmd
}

// wait watches the objects until they are gone or the timeout passes. run
// is ctx bounded by --timeout: it bounds finding the objects; the wait
// itself ends at the options' clock's timer, set to the same deadline.
func (o *Options) wait(ctx, run context.Context, bound string) error {
	start := o.clock.Now()
	var (
		c     *collect.Collector
		found []collect.Found
	)
	err := o.settle(ctx, run, bound, 0, func() error {
		clients, err := o.newClients()
		if err != nil {
			return err
		}
		c = o.collector(clients)
		defer o.showProgress(c.Progress)()
		found, err = c.Resolve(run, o.requests, collect.Scope{Namespace: o.namespace, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector}, true)
		if err != nil {
			return err
		}
		gone := o.alreadyGone(clients, found)
		if len(gone) > 0 && !o.IgnoreNotFound {
			return fmt.Errorf("%s not found (--ignore-not-found counts an object that does not exist as deleted)", report.Safe(strings.Join(gone, ", ")))
		}
		for _, name := range gone {
			fmt.Fprintf(o.status().above(o.Out), "%s deleted\n", report.Safe(name))
		}
		found, err = o.beingDeleted(found)
		return err
	})
	if err != nil {
		return err
	}
	pending := map[string]collect.Found{}
	for _, f := range found {
		pending[waitKey(f)] = f
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan collect.Change)
	go c.Follow(ctx, found, o.sleep, changes)

	deadline := o.clock.NewTimer(max(o.Timeout-o.clock.Since(start), 0))
	defer deadline.Stop()
	// On a terminal: the cause of what is left, each time it changes, and
	// below it a status line with the time spent and left, every second.
	line, out := o.status(), o.status().above(o.Out)
	defer line.clear()
	var tick, second <-chan time.Time
	if line != nil {
		ticker, seconds := o.clock.NewTicker(progressInterval), o.clock.NewTicker(time.Second)
		defer ticker.Stop()
		defer seconds.Stop()
		tick, second = ticker.C(), seconds.C()
	}
	showTimes := func() {
		// Never past the timeout: a redraw that runs late (a busy
		// machine) would say "4s elapsed" of a 3s wait just before
		// "timed out after 3s".
		elapsed := min(o.clock.Since(start), o.Timeout)
		line.show(fmt.Sprintf("waiting for %s: %s elapsed, %s left (%s)", report.Count(len(pending), "object"),
			report.HumanDuration(elapsed), report.HumanDuration(max(o.Timeout-elapsed, 0)), bound))
	}
	stillPending := func() []collect.Found {
		still := make([]collect.Found, 0, len(pending))
		for _, f := range found { // in the order they were asked for
			if p, ok := pending[waitKey(f)]; ok {
				still = append(still, p)
			}
		}
		return still
	}
	readPending := func() *observed.Snapshot { return reread(ctx, c, stillPending()) }
	retrying, lastCause := retryNotice{out: o.stderr(), until: " until the timeout"}, ""
	sayCause := func() {
		if cause := progressLine(diagnose.Diagnose(readPending())); cause != lastCause {
			fmt.Fprintln(o.stderr(), report.Wrap(report.Safe(cause), o.width()))
			lastCause = cause
		}
		showTimes()
	}
	if line != nil && len(pending) > 0 {
		sayCause()
	}
	for len(pending) > 0 {
		select {
		case ch := <-changes:
			switch {
			case ch.Err != nil:
				// An apiserver restart or a blip: keep waiting, say so once.
				if err := retrying.failed(ch); err != nil {
					return err
				}
			case ch.Gone:
				delete(pending, waitKey(ch.Found))
				fmt.Fprintf(out, "%s deleted\n", report.Safe(report.Name(ch.Found.Ref())))
			default:
				pending[waitKey(ch.Found)] = ch.Found
				retrying.recovered()
			}
		case <-tick:
			sayCause()
		case <-second:
			showTimes()
		case <-deadline.C():
			// The diagnosis of what is left has its own budget past the
			// timeout (docs/runbooks.md): reads not made by then are
			// reported under skipped.
			final, cancel := context.WithTimeout(ctx, finalRead)
			defer cancel()
			snap := reread(final, c, stillPending())
			if ctx.Err() != nil {
				return ctx.Err() // interrupted, or the apiserver is not ready
			}
			if final.Err() != nil {
				if h := o.monitor.Health(ctx); h.NotReady() {
					return &kube.NotReadyError{Health: h}
				}
			}
			if err := o.save(snap); err != nil {
				return err
			}
			r := diagnose.Diagnose(snap)
			line.clear()
			fmt.Fprintf(o.ErrOut, "timed out after %s: %s still there\n", o.Timeout, report.Count(len(pending), "object"))
			if err := o.Print(r, func(r report.Report, st report.Style) error { return report.WriteWhy(o.Out, r, st) }); err != nil {
				return err
			}
			return &ExitCodeError{Code: ExitStuck}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// waitKey identifies an object wait follows.
func waitKey(f collect.Found) string {
	return collect.QualifiedResource(f.GVR) + "/" + f.Object.GetNamespace() + "/" + f.Object.GetName()
}

// beingDeleted keeps the objects wait can see go: those with a
// deletionTimestamp. One asked for by name that is not being deleted is an
// error at once (nothing would ever remove it); among those a type or a
// selector found, the others are left out, and stderr says so.
func (o *Options) beingDeleted(found []collect.Found) ([]collect.Found, error) {
	named := map[string]bool{}
	for _, r := range o.requests {
		for _, n := range r.Names {
			named[n] = true
		}
	}
	var out []collect.Found
	for _, f := range found {
		if f.Terminating() {
			out = append(out, f)
			continue
		}
		name := report.Safe(report.Name(f.Ref()))
		if named[f.Object.GetName()] {
			return nil, fmt.Errorf("%s is not being deleted (no metadata.deletionTimestamp): nothing would remove it; delete it first", name)
		}
		fmt.Fprintf(o.stderr(), "%s is not being deleted: not waiting for it\n", name)
	}
	return out, nil
}

// alreadyGone names the objects asked for by name that were not found.
func (o *Options) alreadyGone(clients *kube.Clients, found []collect.Found) []string {
	there := map[string]bool{}
	for _, f := range found {
		there[report.Name(f.Ref())] = true
	}
	var out []string
	for _, r := range o.requests {
		m, err := collect.Mapping(clients.Mapper, r.Resource)
		if err != nil {
			continue // Resolve has already accepted every type
		}
		for _, n := range r.Names {
			name := report.Name(report.ObjectRef{APIVersion: m.GroupVersionKind.GroupVersion().String(), Kind: m.GroupVersionKind.Kind, Name: n})
			if !there[name] {
				out = append(out, name)
			}
		}
	}
	return out
}

// progressLine says what wait waits on and the top cause of the first object.
func progressLine(r report.Report) string {
	line := "waiting for " + report.Count(len(r.Items), "object")
	if len(r.Items) > 0 && len(r.Items[0].Causes) > 0 {
		it := r.Items[0]
		line += fmt.Sprintf("; %s: %s (%s): %s", report.Name(it.Object), it.Causes[0].Code, it.Causes[0].Severity, it.Causes[0].Summary)
	}
	return line
}

// sleep waits d on the options' clock, or less if ctx ends.
func (o *Options) sleep(ctx context.Context, d time.Duration) error {
	t := o.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
