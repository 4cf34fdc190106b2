package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const (
	// pollInterval is how often wait reads the objects again.
	pollInterval = time.Second
	// progressInterval is how often wait diagnoses what is left, for the
	// progress line on a terminal.
	progressInterval = 5 * time.Second
)

func newWaitCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait TYPE/NAME... [--timeout=5m]",
		Short: "Wait until objects are gone; on timeout, explain what is still there",
		Long: `Wait until the named objects are deleted: the runbook step after
'kubectl delete --wait=false'. Each object that goes is printed as "TYPE/NAME deleted".
On timeout the diagnosis of what is still there is printed (as 'why' would) and
the exit code is 2. On a terminal, stderr shows what it waits on and the current
top cause as it changes. Objects that do not exist count as deleted (and are
printed so).`,
		Example: `  # Delete a namespace and wait up to 5 minutes, with the root cause if it sticks
  kubectl delete ns shop --wait=false && kubectl terminating wait ns/shop --timeout=5m

  # Every pod of a drained node, as JSON on timeout
  kubectl terminating wait pods -l app=web --timeout=2m -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if o.Timeout <= 0 {
				return fmt.Errorf("--timeout must be positive")
			}
			return o.wait(cmd.Context())
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long to wait before printing the diagnosis of what is left and exiting 2.")
	cmd.Flags().StringVarP(&o.LabelSelector, "selector", "l", "", "Label selector, for a TYPE without names.")
	o.addOutputFlags(cmd)
	return cmd
}

// wait polls the objects until they are gone or the timeout passes.
func (o *Options) wait(ctx context.Context) error {
	clients, err := o.newClients()
	if err != nil {
		return err
	}
	c := o.collector(clients)
	found, err := c.Resolve(ctx, o.requests, collect.Scope{Namespace: o.namespace, LabelSelector: o.LabelSelector}, true)
	if err != nil {
		return err
	}
	for _, name := range o.alreadyGone(clients, found) {
		fmt.Fprintf(o.Out, "%s deleted\n", report.Safe(name))
	}
	deadline := o.now().Add(o.Timeout)
	var lastProgress time.Time
	lastLine := ""
	for {
		var gone []collect.Found
		if found, gone, err = c.Refresh(ctx, found); err != nil {
			return err
		}
		for _, g := range gone {
			fmt.Fprintf(o.Out, "%s deleted\n", report.Safe(report.Name(g.Ref())))
		}
		if len(found) == 0 {
			return nil
		}
		now := o.now()
		if !now.Before(deadline) {
			break
		}
		if o.isTerminal(o.ErrOut) && now.Sub(lastProgress) >= progressInterval {
			lastProgress = now
			if line := progressLine(diagnose.Diagnose((&collect.Collector{Clients: clients, Now: o.now}).Snapshot(ctx, found))); line != lastLine {
				fmt.Fprintln(o.ErrOut, report.Safe(line))
				lastLine = line
			}
		}
		if err := o.sleep(ctx, min(pollInterval, deadline.Sub(now))); err != nil {
			return err
		}
	}
	r := diagnose.Diagnose((&collect.Collector{Clients: clients, Now: o.now}).Snapshot(ctx, found))
	fmt.Fprintf(o.ErrOut, "timed out after %s: %d object(s) still there\n", o.Timeout, len(found))
	if err := o.Print(r, func(r report.Report, st report.Style) error { return report.WriteWhy(o.Out, r, st) }); err != nil {
		return err
	}
	return &ExitCodeError{Code: ExitStuck}
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
	line := fmt.Sprintf("waiting for %d object(s)", len(r.Items))
	if len(r.Items) > 0 && len(r.Items[0].Causes) > 0 {
		it := r.Items[0]
		line += fmt.Sprintf("; %s: %s (%s): %s", report.Name(it.Object), it.Causes[0].Code, it.Causes[0].Severity, it.Causes[0].Summary)
	}
	return line
}

// sleepContext waits d, or less if ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
