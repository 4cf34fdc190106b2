// Package fix turns a diagnosis into a plan of the API requests its
// remediation steps name (report.Step.Apply), within a risk a person
// chose, and carries it out one request at a time (see Run). It never
// plans a request for an object that is not stuck, a step riskier than
// allowed, or the removal of a finalizer whose controller looks alive.
package fix

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Limits are what a person allows a plan.
type Limits struct {
	// MaxRisk is the riskiest step planned.
	MaxRisk report.RiskLevel
	// AllowLiveController lets a finalizer go whose controller looks alive.
	AllowLiveController bool
}

// Plan is what fix would send, and its digest: the hash of the targets'
// UIDs and resourceVersions and of the steps, each with the uid and
// resourceVersion of the object it writes (a node, a webhook configuration,
// an APIService, a blocker), which a runbook repeats (--confirm) to apply
// exactly the plan a person reviewed.
type Plan struct {
	Digest  string           `json:"digest"`
	MaxRisk report.RiskLevel `json:"maxRisk"`
	Targets []Target         `json:"targets"`
}

// Target is the plan for one object.
type Target struct {
	Object          report.ObjectRef `json:"object"`
	ResourceVersion string           `json:"resourceVersion,omitempty"`
	// Stuck is the diagnosis' verdict: an object not stuck is left alone.
	Stuck bool `json:"stuck"`
	// Steps are the requests to send, in order: one per cause foreseen.
	Steps []Step `json:"steps,omitempty"`
	// Human is a step a person carries out (a node to repair, a controller
	// to bring back); it ends the object's plan.
	Human *report.Step `json:"human,omitempty"`
	// Refused says why the plan stops there (a live controller, a step
	// riskier than allowed, an object that is not stuck).
	Refused string `json:"refused,omitempty"`
}

// Step is one request of a plan.
type Step struct {
	// Cause is the code of the cause the step answers.
	Cause string      `json:"cause"`
	Step  report.Step `json:"step"`
	// LeavesBehind is what the request skips, said before anything runs.
	LeavesBehind string `json:"leavesBehind"`
}

// MakePlan plans, for each item of a report, the steps of its causes in
// the report's order: for each cause, its first step fix can send within
// the limits; a cause with none ends the object's plan (a human step, or a
// refusal that says what would allow one).
func MakePlan(r report.Report, l Limits) Plan {
	p := Plan{MaxRisk: l.MaxRisk, Targets: []Target{}}
	planned := map[report.Action]bool{} // a request answers every cause it appears under once
	for _, it := range r.Items {
		t := planItem(it, l)
		t.Steps = slices.DeleteFunc(t.Steps, func(s Step) bool {
			seen := planned[*s.Step.Apply]
			planned[*s.Step.Apply] = true
			return seen
		})
		p.Targets = append(p.Targets, t)
	}
	p.Digest = digest(p)
	return p
}

func planItem(it report.Item, l Limits) Target {
	t := Target{Object: it.Object, ResourceVersion: it.ResourceVersion, Stuck: it.Stuck}
	if !it.Stuck {
		t.Refused = fmt.Sprintf("not stuck (%s): left alone", it.Severity)
		return t
	}
	for _, c := range it.Causes {
		step, ok := sendable(c, l)
		if !ok {
			// Held by other objects (a CRD's instances, a namespace's
			// leftovers): their own steps, answering this cause.
			if blockers := blockerSteps(c, l, 0); len(blockers) > 0 {
				t.Steps = append(t.Steps, blockers...)
				continue
			}
			t.Refused, t.Human = stopAt(c, l)
			return t
		}
		if refused := liveController(c, step, l); refused != "" {
			t.Refused = refused
			return t
		}
		t.Steps = append(t.Steps, Step{Cause: c.Code, Step: step, LeavesBehind: leavesBehind(step, c)})
	}
	return t
}

// maxNesting bounds how deep a plan follows blockers (namespace -> held
// object -> its dependent).
const maxNesting = 3

// blockerSteps plans, for a cause held by other objects, the top-cause
// step of each stuck blocker that fix can send, as steps answering c.
func blockerSteps(c report.Cause, l Limits, depth int) []Step {
	if depth >= maxNesting {
		return nil
	}
	var out []Step
	for _, b := range c.BlockedBy {
		if !b.Stuck || len(b.Causes) == 0 {
			continue
		}
		top := b.Causes[0]
		step, ok := sendable(top, l)
		switch {
		case !ok:
			out = append(out, retag(blockerSteps(top, l, depth+1), c.Code)...)
		case liveController(top, step, l) == "":
			out = append(out, Step{Cause: c.Code, Step: step, LeavesBehind: leavesBehind(step, c)})
		}
	}
	return out
}

func retag(steps []Step, cause string) []Step {
	for i := range steps {
		steps[i].Cause = cause
	}
	return steps
}

// liveController refuses the removal of a finalizer whose controller looks
// alive, unless the person allows it.
func liveController(c report.Cause, step report.Step, l Limits) string {
	if step.Apply.Verb != report.ActionRemoveFinalizer || c.About.Controller != "alive" || l.AllowLiveController {
		return ""
	}
	return fmt.Sprintf("the controller that removes %s looks alive (%s): it is left to finish; read what it says (kubectl describe) or pass --allow-live-controller",
		step.Apply.Finalizer, c.Code)
}

// sendable is the first step of a cause that fix can send within the limits.
func sendable(c report.Cause, l Limits) (report.Step, bool) {
	for _, s := range c.Remediation {
		if s.Apply != nil && s.RiskLevel.Weight() <= l.MaxRisk.Weight() {
			return s, true
		}
	}
	return report.Step{}, false
}

// stopAt says why a cause ends the plan: a step fix could send at a higher
// risk, or the step a person must carry out.
func stopAt(c report.Cause, l Limits) (string, *report.Step) {
	for _, s := range c.Remediation {
		if s.Apply != nil {
			return fmt.Sprintf("%s: its step %q is %s risk, above --max-risk %s (%s); --max-risk %s would plan it", c.Code, s.Action, s.RiskLevel, l.MaxRisk, s.Risk, s.RiskLevel), nil
		}
	}
	for _, s := range c.Remediation {
		if s.RiskLevel != report.RiskNone {
			return "", &s
		}
	}
	if len(c.Remediation) > 0 {
		return "", &c.Remediation[0]
	}
	return fmt.Sprintf("%s: no remediation step", c.Code), nil
}

// leavesBehind is what a request skips: for a finalizer, the work its
// owner would have finished first (the catalogue's holdsWhile) and what
// the object itself says it has out there (the fields of its status and
// spec the cause quotes: a load balancer's address, a volume's handle);
// for any other request, what the step's risk says.
func leavesBehind(s report.Step, c report.Cause) string {
	if s.Apply.Verb != report.ActionRemoveFinalizer {
		return s.Risk
	}
	row := catalog.FinalizerOwner(s.Apply.Finalizer)
	out := fmt.Sprintf("%s no longer waits until %s: whatever it would have cleaned up first is left as it is", row.Owner, row.HoldsWhile)
	var fields []string
	for _, f := range c.Facts {
		if f.Object == nil && (strings.HasPrefix(f.Field, "status.") || strings.HasPrefix(f.Field, "spec.")) {
			fields = append(fields, f.Text)
		}
	}
	if len(fields) > 0 {
		out += "; the object says: " + strings.Join(fields, "; ")
	}
	return out
}

// digest hashes what the plan is for and what it sends.
func digest(p Plan) string {
	type sent struct{ Verb, UID, ResourceVersion, Resource, Namespace, Name, Finalizer string }
	type target struct {
		UID, ResourceVersion string
		Steps                []sent
	}
	var in []target
	for _, t := range p.Targets {
		d := target{UID: t.Object.UID, ResourceVersion: t.ResourceVersion}
		for _, s := range t.Steps {
			a := s.Step.Apply
			d.Steps = append(d.Steps, sent{a.Verb, a.Object.UID, a.ResourceVersion, a.Object.Resource, a.Object.Namespace, a.Object.Name, a.Finalizer})
		}
		in = append(in, d)
	}
	data, _ := json.Marshal(struct {
		MaxRisk report.RiskLevel
		Targets []target
	}{p.MaxRisk, in})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// Steps counts the requests the plan sends.
func (p Plan) Steps() int {
	n := 0
	for _, t := range p.Targets {
		n += len(t.Steps)
	}
	return n
}

// ParseRisk reads --max-risk.
func ParseRisk(s string) (report.RiskLevel, error) {
	for _, l := range []report.RiskLevel{report.RiskNone, report.RiskLow, report.RiskHigh, report.RiskDestructive} {
		if strings.EqualFold(s, string(l)) {
			return l, nil
		}
	}
	return "", fmt.Errorf("--max-risk %q: one of none, low, high, destructive", s)
}
