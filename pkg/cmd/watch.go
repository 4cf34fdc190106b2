package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// settle is how long list -w gathers the changes of a burst (a namespace
// controller updating its conditions, a pod's containers stopping one by
// one) before it diagnoses the objects again.
const settle = time.Second

// finalRead bounds the reads past --timeout that decide the exit code.
const finalRead = 10 * time.Second

// watchList is list -w: the table, then a row each time a listed object's
// diagnosis changes (severity, top cause, stuck), whether an object changed
// or time alone changed it (its deadline, its settle time passing), and one
// when it goes, as kubectl get -w. It follows the objects listed at the start through
// watches (collect.Follow) and ends when all of them are gone (exit 0); at
// --timeout it ends with the exit code of what is left.
func (o *Options) watchList(ctx context.Context, st report.Style) error {
	r, found, c, err := o.diagnose(ctx)
	if err != nil {
		return err
	}
	if len(r.Items) == 0 {
		fmt.Fprintln(o.ErrOut, o.nothingFound())
	}
	table, err := report.NewWatchTable(o.Out, r, st)
	if err != nil {
		return err
	}
	shown := map[string]report.Item{} // by UID: the row last printed
	for _, it := range r.Items {
		shown[it.Object.UID] = it
	}
	var followed []collect.Found
	latest := map[string]collect.Found{} // by UID: the last state seen
	for _, f := range found {
		if _, ok := shown[string(f.Object.GetUID())]; ok {
			followed = append(followed, f)
			latest[string(f.Object.GetUID())] = f
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan collect.Change)
	go c.Follow(ctx, followed, o.sleep, changes)

	changed := map[string]collect.Found{}
	var settled <-chan time.Time
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	retrying := retryNotice{out: o.ErrOut}
	// Time alone changes verdicts (an object past its deadline and its
	// settle time becomes stuck): the next such time wakes the loop.
	var due <-chan time.Time
	var dueTimer clock.Timer
	rearm := func() {
		if dueTimer != nil {
			dueTimer.Stop()
		}
		due, dueTimer = nil, nil
		if next := nextVerdictTime(shown, o.now()); !next.IsZero() {
			dueTimer = o.clock.NewTimer(next.Sub(o.now()) + time.Second)
			due = dueTimer.C()
		}
	}
	defer func() {
		if dueTimer != nil {
			dueTimer.Stop()
		}
	}()
	rearm()
	for len(shown) > 0 {
		select {
		case <-due:
			if err := o.printChanged(ctx, c, latest, shown, table); err != nil {
				return err
			}
			rearm()
		case ch := <-changes:
			uid := string(ch.Found.Object.GetUID())
			switch {
			case ch.Err != nil:
				if err := retrying.failed(ch); err != nil {
					return err
				}
			case ch.Gone:
				delete(changed, uid)
				delete(latest, uid)
				if err := table.Gone(shown[uid]); err != nil {
					return err
				}
				delete(shown, uid)
				rearm()
			case ch.Found.Object.GetResourceVersion() == latest[uid].Object.GetResourceVersion():
				retrying.recovered() // a relist: nothing new
			default:
				retrying.recovered()
				latest[uid] = ch.Found
				changed[uid] = ch.Found
				if settled == nil {
					timer = o.clock.NewTimer(settle)
					settled = timer.C()
				}
			}
		case <-settled:
			settled = nil
			if err := o.printChanged(ctx, c, changed, shown, table); err != nil {
				return err
			}
			clear(changed)
			rearm()
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			// What is left, as it is now (time alone makes an object stuck).
			left := make([]collect.Found, 0, len(latest))
			for _, f := range latest {
				left = append(left, f)
			}
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalRead)
			defer cancel()
			return exitFor(rediagnose(final, c, left), true)
		}
	}
	return nil
}

// printChanged diagnoses the objects that changed and prints the rows whose
// verdict differs from the one shown.
func (o *Options) printChanged(ctx context.Context, c *collect.Collector, changed map[string]collect.Found, shown map[string]report.Item, table *report.WatchTable) error {
	objects := make([]collect.Found, 0, len(changed))
	for _, f := range changed {
		objects = append(objects, f)
	}
	var rows []report.Item
	for _, it := range rediagnose(ctx, c, objects).Items {
		before, ok := shown[it.Object.UID]
		if !ok {
			continue
		}
		shown[it.Object.UID] = it
		if verdict(before) != verdict(it) {
			rows = append(rows, it)
		}
	}
	return table.Changed(rows)
}

// nextVerdictTime is the soonest time a shown row's verdict may change with
// time alone; zero when none will.
func nextVerdictTime(shown map[string]report.Item, now time.Time) time.Time {
	var next time.Time
	for _, it := range shown {
		if at := diagnose.NextVerdictTime(it, now); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// verdict is what a row of list -w says beyond the time that passes.
func verdict(it report.Item) string {
	top := ""
	if len(it.Causes) > 0 {
		top = it.Causes[0].Code
	}
	return fmt.Sprintf("%s/%s/%t", it.Severity, top, it.Stuck)
}

// reread reads again what the rules need about objects already found (their
// latest state from a watch) with a fresh collector: the run's scan record
// describes the cluster as it was.
func reread(ctx context.Context, c *collect.Collector, found []collect.Found) *observed.Snapshot {
	return c.Fresh().Snapshot(ctx, found)
}

// rediagnose is the verdicts of what reread reads: list -w prints rows.
func rediagnose(ctx context.Context, c *collect.Collector, found []collect.Found) report.Report {
	return diagnose.Verdicts(reread(ctx, c, found))
}

// retryNotice says once, until the follow recovers, that a list or watch
// failed and is retried; any other failure ends the command.
type retryNotice struct {
	out   io.Writer
	until string // how long it retries, in the warning's words
	shown bool
}

// failed handles a Change carrying an error: nil when the follow retries.
func (n *retryNotice) failed(ch collect.Change) error {
	if !ch.Retrying {
		return ch.Err
	}
	if !n.shown {
		fmt.Fprintf(n.out, "warning: %s; retrying%s\n", report.Safe(Explain(ch.Err)), n.until)
	}
	n.shown = true
	return nil
}

// recovered: the next failure is said again.
func (n *retryNotice) recovered() { n.shown = false }
