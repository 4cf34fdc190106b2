package fix

import (
	"context"
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
	Failed      = "failed"       // a request was refused or could not be made
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
	// Diagnose reads the cluster again and diagnoses the same objects.
	Diagnose func(context.Context) (report.Report, error)
	// Settle is how long a step is given to take effect (a webhook deleted
	// lets the namespace controller's next retry through) before the
	// object's diagnosis is judged; it is re-read every Poll meanwhile.
	Settle, Poll time.Duration
}

// Run sends the plan's steps object by object, each on a fresh read;
// after each, the object is diagnosed again: gone ends its plan with
// success, a new top cause the plan did not foresee stops it, and no step
// is sent on a stale read.
func (r Runner) Run(ctx context.Context, p Plan, confirmed string) Record {
	rec := Record{APIVersion: RecordAPIVersion, Kind: RecordKind, Plan: p, Confirmed: confirmed, Sent: []Sent{}, Outcomes: []Outcome{}}
	for _, t := range p.Targets {
		rec.Outcomes = append(rec.Outcomes, r.runTarget(ctx, t, confirmed, &rec))
	}
	return rec
}

func (r Runner) runTarget(ctx context.Context, t Target, confirmed string, rec *Record) Outcome {
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
	for i, step := range t.Steps {
		sent := r.Sender.Send(ctx, *step.Step.Apply)
		rec.Sent = append(rec.Sent, sent)
		if !sent.OK {
			out.Result, out.Detail = Failed, sent.Answer
			return out
		}
		if r.Sender.DryRun {
			continue // nothing changed: the next step is judged on the same read
		}
		next := i + 1
		expected := ""
		if next < len(t.Steps) {
			expected = t.Steps[next].Cause
		}
		it, gone, err := r.settle(ctx, t.Object, expected)
		switch {
		case err != nil:
			out.Result, out.Detail = Failed, "diagnosis after the request: "+err.Error()
			return out
		case gone:
			out.Result = Gone
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
