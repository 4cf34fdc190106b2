package fix

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// The record's schema: versioned apart from the report's.
const (
	RecordAPIVersion = "terminating.kubectl.io/v1alpha1"
	RecordKind       = "FixRecord"
)

// Record is what a fix did, for the ticket: the plan, how it was
// confirmed, every request sent with the server's answer, and what became
// of each object.
type Record struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plan       Plan   `json:"plan"`
	// Confirmed says how the plan was confirmed ("terminal", "digest",
	// "dry run"); empty: it was not, and nothing was sent.
	Confirmed string    `json:"confirmed"`
	Sent      []Sent    `json:"sent"`
	Outcomes  []Outcome `json:"outcomes"`
}

// The results of an Outcome.
const (
	Gone        = "gone"         // the object is deleted
	Progressing = "progressing"  // no longer stuck: it finishes by itself
	StillStuck  = "still stuck"  // every planned step sent, still held
	Changed     = "changed"      // held by a cause the plan did not foresee: stopped
	NotApplied  = "not applied"  // nothing planned (refused, a person's step) or not confirmed
	Failed      = "failed"       // a request was refused by the server or could not be made
	Refused     = "refused"      // a step no longer justified on a fresh read: not sent
	DryRunOnly  = "dry run only" // every request accepted as a dry run
)

// Outcome is what became of one object.
type Outcome struct {
	Object report.ObjectRef `json:"object"`
	Result string           `json:"result"`
	Detail string           `json:"detail,omitempty"`
	// Diagnosis is the object's diagnosis where the fix left it held.
	Diagnosis *report.Item `json:"diagnosis,omitempty"`
}

// Runner carries a confirmed plan out.
type Runner struct {
	Sender Sender
	// Limits are the plan's: each step is justified again with them, on a
	// fresh diagnosis, just before it is sent.
	Limits Limits
	// Diagnose reads the cluster again and diagnoses the same objects.
	Diagnose func(context.Context) (report.Report, error)
	// Settle is how long a step is given to take effect (a webhook deleted
	// lets the namespace controller's next retry through) before the
	// object's diagnosis is judged; it is re-read every Poll meanwhile.
	Settle, Poll time.Duration
}

// Run sends the plan's steps object by object. Before each, the object is
// diagnosed again and the step must still be what the rules plan for it,
// within the same limits, for the same object at the same version (see
// justify); after each, the object is diagnosed again: gone ends its plan
// with success, a new top cause the plan did not foresee stops it.
// NotConfirmed is the record of a plan that was not confirmed: nothing
// sent, each object's outcome as Run gives it unconfirmed (which reads
// nothing). -o json prints it, so that a runbook can review the plan and
// confirm its digest.
func NotConfirmed(p Plan) Record { return Runner{}.Run(context.Background(), p, "") }

func (r Runner) Run(ctx context.Context, p Plan, confirmed string) Record {
	rec := Record{APIVersion: RecordAPIVersion, Kind: RecordKind, Plan: p, Confirmed: confirmed, Sent: []Sent{}, Outcomes: []Outcome{}}
	written := map[string]string{} // uid -> the resourceVersion our own write left
	for _, t := range p.Targets {
		rec.Outcomes = append(rec.Outcomes, r.runTarget(ctx, t, confirmed, &rec, written))
	}
	return rec
}

func (r Runner) runTarget(ctx context.Context, t Target, confirmed string, rec *Record, written map[string]string) Outcome {
	out := Outcome{Object: t.Object}
	switch {
	case !t.Stuck:
		out.Result, out.Detail = Progressing, t.Refused
		return out
	case len(t.Steps) == 0 && t.Human != nil:
		out.Result, out.Detail = NotApplied, "needs a person: "+t.Human.Action
		return out
	case len(t.Steps) == 0:
		out.Result, out.Detail = NotApplied, t.Refused
		return out
	case confirmed == "":
		out.Result, out.Detail = NotApplied, "the plan was not confirmed"
		return out
	}
	it, gone, err := r.current(ctx, t.Object)
	for i, step := range t.Steps {
		if ended(&out, gone, err, "before the request") {
			return out
		}
		action, refused := r.justify(step, it, written)
		var sent Sent
		if refused == "" {
			sent, refused = r.Sender.Send(ctx, action)
		}
		if refused != "" {
			out.Result, out.Detail = Refused, refused
			return out
		}
		rec.Sent = append(rec.Sent, sent)
		if !sent.OK {
			out.Result, out.Detail = Failed, sent.Answer
			return out
		}
		if sent.after != "" {
			written[action.Object.UID] = sent.after
		}
		if r.Sender.DryRun {
			continue // nothing changed: the next step is judged on the same read
		}
		next := i + 1
		expected := ""
		if next < len(t.Steps) {
			expected = t.Steps[next].Cause
		}
		it, gone, err = r.settle(ctx, t.Object, expected)
		switch {
		case ended(&out, gone, err, "after the request"):
			return out
		case !it.Stuck:
			out.Result, out.Detail = Progressing, topSummary(it)
			return out
		}
		if next < len(t.Steps) && topCode(it) == t.Steps[next].Cause {
			continue
		}
		out.Result, out.Diagnosis = StillStuck, &it
		if next < len(t.Steps) || topCode(it) != step.Cause {
			out.Result = Changed // held another way than the plan foresaw
		}
		out.Detail = topSummary(it)
		return out
	}
	out.Result = DryRunOnly
	return out
}

// ended records a diagnosis that ends the object's plan: it could not be
// made (when says whether before or after a request), or the object is gone.
func ended(out *Outcome, gone bool, err error, when string) bool {
	switch {
	case err != nil:
		out.Result, out.Detail = Failed, "diagnosis "+when+": "+err.Error()
	case gone:
		out.Result = Gone
	default:
		return false
	}
	return true
}

// current diagnoses the object once more.
func (r Runner) current(ctx context.Context, obj report.ObjectRef) (report.Item, bool, error) {
	rep, err := r.Diagnose(ctx)
	if err != nil {
		return report.Item{}, false, err
	}
	it, found := itemOf(rep, obj)
	return it, !found, nil
}

// justify checks a planned step against the object's fresh diagnosis: the
// rules must still plan the same request (verb, object uid, finalizer)
// within the plan's limits, on the object at the version the plan was made
// on, or, where this run wrote it, at the version its own write left. It
// returns the action to send, with that version, or why it is not sent.
// The identity comes from the plan, never from the fresh read alone: a
// node revived, a controller come back, a configuration recreated or
// changed each make the step unjustified.
func (r Runner) justify(step Step, it report.Item, written map[string]string) (report.Action, string) {
	planned := *step.Step.Apply // without uid or resourceVersion, the sender refuses it
	if !it.Stuck {
		return planned, "not sent: a fresh diagnosis finds the object no longer stuck: " + topSummary(it)
	}
	fresh := planItem(it, r.Limits)
	i := slices.IndexFunc(fresh.Steps, func(s Step) bool { return sameRequest(*s.Step.Apply, planned) })
	if i < 0 {
		why := fresh.Refused
		if why == "" {
			why = topSummary(it)
		}
		return planned, "not sent: a fresh diagnosis no longer plans it: " + why
	}
	want := planned.ResourceVersion
	if after, ok := written[planned.Object.UID]; ok {
		want = after
	}
	if got := fresh.Steps[i].Step.Apply.ResourceVersion; got != want {
		return planned, fmt.Sprintf("not sent: %s changed since the step was decided (resourceVersion %s, decided on %s): plan again", name(planned.Object), got, want)
	}
	planned.ResourceVersion = want
	return planned, ""
}

// sameRequest: the two actions send the same request to the same object.
func sameRequest(a, b report.Action) bool {
	return a.Verb == b.Verb && a.Finalizer == b.Finalizer && a.Object == b.Object
}

// settle re-diagnoses the object until it is gone, no longer stuck, held
// by the cause the plan's next step answers, or Settle has passed: a
// step's effect takes a controller's next retry (the kubelet's final
// DELETE, the namespace controller's sync), and the stages it passes
// through on the way are no verdict.
func (r Runner) settle(ctx context.Context, obj report.ObjectRef, next string) (report.Item, bool, error) {
	deadline := time.Now().Add(r.Settle)
	for {
		rep, err := r.Diagnose(ctx)
		if err != nil {
			return report.Item{}, false, err
		}
		it, found := itemOf(rep, obj)
		if !found || !it.Stuck || (next != "" && topCode(it) == next) || time.Now().After(deadline) {
			return it, !found, nil
		}
		select {
		case <-ctx.Done():
			return it, false, nil
		case <-time.After(r.Poll):
		}
	}
}

func itemOf(r report.Report, obj report.ObjectRef) (report.Item, bool) {
	for _, it := range r.Items {
		if it.Object.UID == obj.UID && it.Object.Name == obj.Name {
			return it, true
		}
	}
	return report.Item{}, false
}

func topCode(it report.Item) string {
	if len(it.Causes) == 0 {
		return ""
	}
	return it.Causes[0].Code
}

func topSummary(it report.Item) string {
	if len(it.Causes) == 0 {
		return ""
	}
	return it.Causes[0].Code + ": " + it.Causes[0].Summary
}
