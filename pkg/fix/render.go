package fix

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// WritePlan prints a plan for a person to review: per object, the requests
// in order with their risk and what each leaves behind, or why nothing is
// sent. Cluster text is made safe (report.Safe).
func WritePlan(w io.Writer, p Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan %s: %s, up to risk %s\n", p.Digest, report.Count(p.Steps(), "request"), p.MaxRisk)
	for _, t := range p.Targets {
		fmt.Fprintf(&b, "\n%s\n", report.Safe(name(t.Object)))
		for i, s := range t.Steps {
			fmt.Fprintf(&b, "  %d. %s  [%s risk, answers %s]\n", i+1, report.Safe(describe(*s.Step.Apply)), s.Step.RiskLevel, report.Safe(s.Cause))
			fmt.Fprintf(&b, "     why: %s\n", report.Safe(s.Step.Action))
			fmt.Fprintf(&b, "     leaves behind: %s\n", report.Safe(s.LeavesBehind))
		}
		if t.Human != nil {
			fmt.Fprintf(&b, "  then a person: %s\n", report.Safe(t.Human.Action))
			if t.Human.Command != "" {
				fmt.Fprintf(&b, "     $ %s\n", report.Safe(t.Human.Command))
			}
		}
		if t.Refused != "" {
			fmt.Fprintf(&b, "  not planned: %s\n", report.Safe(t.Refused))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRecord prints what was sent and what became of each object.
func WriteRecord(w io.Writer, r Record) error {
	var b strings.Builder
	for _, s := range r.Sent {
		verb := "sent"
		if s.DryRun {
			verb = "sent as a dry run"
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", verb, report.Safe(describe(report.Action{Verb: s.Verb, Object: s.Object, Finalizer: s.Finalizer})), report.Safe(s.Answer))
	}
	for _, o := range r.Outcomes {
		line := fmt.Sprintf("%s: %s", report.Safe(name(o.Object)), o.Result)
		if o.Detail != "" {
			line += ": " + report.Safe(o.Detail)
		}
		fmt.Fprintln(&b, line)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	// Where the fix stopped on an object still held, its new diagnosis.
	for _, o := range r.Outcomes {
		if o.Diagnosis != nil {
			if _, err := fmt.Fprintf(w, "\nWhere the fix stopped, %s:\n", report.Safe(name(o.Object))); err != nil {
				return err
			}
			if err := report.WriteWhy(w, report.Report{Items: []report.Item{*o.Diagnosis}}, report.Style{}); err != nil {
				return err
			}
		}
	}
	return nil
}

func describe(a report.Action) string {
	switch a.Verb {
	case report.ActionRemoveFinalizer:
		if a.Finalizer == "" {
			return "remove a finalizer of " + name(a.Object)
		}
		return fmt.Sprintf("remove finalizer %s from %s", a.Finalizer, name(a.Object))
	case report.ActionDelete:
		return "delete " + name(a.Object)
	case report.ActionTaintOutOfService:
		return "taint " + name(a.Object) + " " + outOfService + "=nodeshutdown:NoExecute"
	}
	return a.Verb + " " + name(a.Object)
}

func name(o report.ObjectRef) string {
	s := report.Name(o)
	if o.Namespace != "" {
		s += " -n " + o.Namespace
	}
	return s
}
