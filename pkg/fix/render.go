package fix

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// WritePlan prints a plan for a person to review: per object, the requests
// in order with their risk and what each leaves behind, or why nothing is
// sent. Cluster text is made safe (report.Safe), prose wrapped to width
// (report.WrapLabelled), commands never.
func WritePlan(w io.Writer, p Plan, width int) error {
	var b lines
	b.prose(width, "", "", "Plan %s: %s, up to risk %s", p.Digest, report.Count(p.Steps(), "request"), p.MaxRisk)
	for _, t := range p.Targets {
		b.WriteString("\n")
		b.prose(width, "", "", "%s", name(t.Object))
		for i, s := range t.Steps {
			b.prose(0, "  ", fmt.Sprintf("%d. ", i+1), "%s", describe(*s.Step.Apply)) // what is sent, whole as a command
			b.prose(width, "     ", "", "risk %s, answers %s", s.Step.RiskLevel, s.Cause)
			b.prose(width, "     ", "on: ", "uid %s, resourceVersion %s", s.Step.Apply.Object.UID, s.Step.Apply.ResourceVersion)
			b.prose(width, "     ", "why: ", "%s", s.Step.Action)
			b.prose(width, "     ", "leaves behind: ", "%s", s.LeavesBehind)
		}
		if t.Human != nil {
			b.prose(width, "  ", "then a person: ", "%s", t.Human.Action)
			if t.Human.Command != "" {
				b.prose(0, "     ", "", "$ %s", t.Human.Command)
			}
		}
		if t.Refused != "" {
			b.prose(width, "  ", "not planned: ", "%s", t.Refused)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRecord prints what was sent and what became of each object.
func WriteRecord(w io.Writer, r Record, width int) error {
	var b lines
	for _, s := range r.Sent {
		verb := "sent"
		if s.DryRun {
			verb = "sent as a dry run"
		}
		b.prose(width, "", verb+": ", "%s: %s", describe(report.Action{Verb: s.Verb, Object: s.Object, Finalizer: s.Finalizer}), s.Answer)
	}
	for _, o := range r.Outcomes {
		switch {
		case o.Result == NotApplied && o.Detail != "" && o.Detail == refusedIn(r.Plan, o.Object):
			b.prose(width, "", "", "%s: %s (not planned: the reason is above)", name(o.Object), o.Result)
		case o.Detail != "":
			b.prose(width, "", "", "%s: %s: %s", name(o.Object), o.Result, o.Detail)
		default:
			b.prose(width, "", "", "%s: %s", name(o.Object), o.Result)
		}
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
			if err := report.WriteWhy(w, report.Report{Items: []report.Item{*o.Diagnosis}}, report.Style{Width: width}); err != nil {
				return err
			}
		}
	}
	return nil
}

// refusedIn is why the plan sends nothing for an object, as the plan
// printed it above the record ("" when it does not say).
func refusedIn(p Plan, o report.ObjectRef) string {
	for _, t := range p.Targets {
		if t.Object == o {
			return t.Refused
		}
	}
	return ""
}

// lines is a screen of fix's output.
type lines struct{ strings.Builder }

// prose adds a line after lead and label (report.WrapLabelled), each string
// argument made safe, wrapped to width (0: whole).
func (b *lines) prose(width int, lead, label, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = report.Safe(s)
		}
	}
	b.WriteString(report.WrapLabelled(lead, label, fmt.Sprintf(format, args...), width) + "\n")
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
