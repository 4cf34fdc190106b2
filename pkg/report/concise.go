package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The concise diagnosis, what `why` prints without -o wide: per object its
// verdict, the checklist rows that do not pass, the top cause with its first
// evidence lines and its first (safest) step, one line per further cause,
// one line per group of blocking objects, and the last few moments of its
// timeline. Objects held the same way (same top cause, summary durations
// aside, finalizers and namespace) are printed once, with a count and examples: 3,000 leftovers held by one finalizer make
// one block, not 3,000.

const (
	// conciseTimeline is how many moments a concise diagnosis shows.
	conciseTimeline = 5
	// conciseEvidence is how many evidence lines the top cause shows (a
	// namespace's live scan names every type that holds leftovers).
	conciseEvidence = 8
	// conciseBlockers is how many lines of blocking objects (each a group
	// held the same way) a cause shows; the rest are counted.
	conciseBlockers = 5
	// conciseLines is how many lines one line of a concise report wraps
	// to at most: a further cause quoting a controller's long message
	// stays a few lines, its end in -o wide.
	conciseLines = 4
	// examplesShown is how many names a group of objects shows (a block of
	// objects held the same way, a --group-by row).
	examplesShown = 3
)

// sameWay groups the items held the same way, in the order of their first member.
func sameWay(items []Item) [][]Item {
	var out [][]Item
	at := map[string]int{}
	for _, it := range items {
		k := heldKey(it)
		if i, ok := at[k]; ok {
			out[i] = append(out[i], it)
			continue
		}
		at[k] = len(out)
		out = append(out, []Item{it})
	}
	return out
}

// heldKey says how an item is held: its top cause's code, severity and what
// it is about (report.About: the finalizers, node, object, webhook and
// reason that identify it, never the summary's prose), the item's
// finalizers and namespace, whatever its kind. Objects held by different
// blockers never share a key; fifty namespaces deleted a few seconds apart,
// all waiting for the same thing, do, whatever their durations and counts.
func heldKey(it Item) string {
	c := topCause(it)
	return strings.Join([]string{c.Code, string(it.Severity), c.About.Key(), strings.Join(it.Finalizers, ","),
		it.Object.Namespace, fmt.Sprint(it.Stuck), fmt.Sprint(len(it.Skipped) > 0), fmt.Sprint(it.Forecast)}, "\x00")
}

// writeGroup prints a group: the first member's concise diagnosis, headed,
// when there are more, by how many and which.
func writeGroup(w io.Writer, g []Item, st Style) error {
	if len(g) > 1 {
		p := newPrinter(w, st)
		p.linef("", "", "%s %s: %s", Count(len(g), "object"), sameWayOf(g[0]), examples(g, len(g), true))
		if p.err != nil {
			return p.err
		}
	}
	return writeConcise(w, g[0], st)
}

// sameWayOf says what the members of a group share: how they are held, or,
// in a forecast, how they would be.
func sameWayOf(it Item) string {
	switch {
	case !it.Forecast:
		return "held the same way"
	case len(it.Causes) == 0:
		return "with nothing found that would hold their deletion"
	}
	return "whose deletion would be held the same way"
}

// writeConcise prints one item concisely (see the top of this file).
func writeConcise(w io.Writer, it Item, st Style) error {
	p := newPrinter(w, st)
	p.maxLines = conciseLines
	writeHeader(p, it, "", st)
	writeConciseChecks(p, it, st)
	for n, c := range it.Causes {
		if n > 0 {
			writeCauseLine(p, it.Causes, n, "", st)
			continue // further causes: a line each, cut to a few
		}
		p.uncut(func() { writeCauseLine(p, it.Causes, n, "", st) }) // the answer, whole
		evidence := evidenceOf(c)
		for _, f := range evidence[:min(len(evidence), conciseEvidence)] {
			p.evidence("", f)
		}
		if more := len(evidence) - conciseEvidence; more > 0 {
			p.linef("       ", "evidence: ", "%s: -o wide", Count(more, "more line"))
		}
		if len(c.Remediation) > 0 {
			writeStep(p, 0, c.Remediation[0], "")
		}
		if more := c.Remediation[min(1, len(c.Remediation)):]; len(more) > 0 {
			p.linef("       ", "", "%s, up to risk %s: -o wide", Count(len(more), "more step"), riskiest(more))
		}
		groups := sameWay(c.BlockedBy)
		if len(groups) > 0 {
			p.linef("       ", "", "blocked by:")
		}
		shown := groups[:min(len(groups), conciseBlockers)]
		for k, g := range shown {
			branch, _ := treeBranch(k, len(shown))
			p.linef("       "+branch, "", "%s", blockerLine(g, c, st))
		}
		if more := groups[len(shown):]; len(more) > 0 {
			n := 0
			for _, g := range more {
				n += len(g)
			}
			p.linef("       ", "", "and %s, held %s: -o wide", Count(n, "more object"), Count(len(more), "other way"))
		}
	}
	writeTimeline(p, it, "", conciseTimeline, "-o wide")
	writeContentsRead(p, it, "")
	writeItemSkips(p, it, "")
	return p.err
}

// blockerLine is one line for a group of nested objects held the same way,
// under the cause they block: its code and summary, unless that cause's
// summary quotes it.
func blockerLine(g []Item, under Cause, st Style) painted {
	c := topCause(g[0])
	who := objectName(g[0].Object)
	if len(g) > 1 {
		who = fmt.Sprintf("%s (%s)", Count(len(g), "object"), examples(g, len(g), false))
		if namesAll(under, g) { // listed once: in the summary just above
			who = fmt.Sprintf("the %s above", Count(len(g), "object"))
		}
	}
	if it := g[0]; it.DeletionTimestamp.IsZero() && len(it.Causes) == 0 && len(it.Skipped) == 0 { // a blocker with no deletion of its own
		return safef("%s  holds it (no deletion of its own to diagnose; see the evidence)", who)
	}
	if says(under, c.Summary) {
		return safef("%s  %s %s", who, st.severity(g[0].Severity, string(g[0].Severity)), c.Code)
	}
	return safef("%s  %s %s: %s", who, st.severity(g[0].Severity, string(g[0].Severity)), c.Code, c.Summary)
}

// namesAll says whether a cause's summary names every object of a group
// (Cause.Names).
func namesAll(c Cause, g []Item) bool {
	for _, it := range g {
		if !slices.Contains(c.Names, Name(it.Object)) {
			return false
		}
	}
	return true
}

// examples names the first few items of a group of total, and how many more.
func examples(first []Item, total int, withNamespace bool) string {
	var names []string
	for _, it := range first[:min(len(first), examplesShown)] {
		name := Name(it.Object) + lookalike(it.Object.Name)
		if withNamespace {
			name = objectName(it.Object)
		}
		names = append(names, name)
	}
	if more := total - len(names); more > 0 {
		names = append(names, fmt.Sprintf("+%d more", more))
	}
	return strings.Join(names, ", ")
}

// riskiest is the highest risk level among steps.
func riskiest(steps []Step) RiskLevel {
	top := RiskNone
	for _, s := range steps {
		if s.RiskLevel.Weight() > top.Weight() {
			top = s.RiskLevel
		}
	}
	return top
}

// writeConciseChecks prints the checklist rows that do not pass, and names
// on one line the ones that do, and on another the ones no API read can
// decide (the pod's cgroup): the failing rows are what explain the pod.
func writeConciseChecks(p *printer, it Item, st Style) {
	var open []Check
	var passing, unseen []string
	for _, c := range it.Checks {
		switch {
		case c.Status == Pass:
			passing = append(passing, c.Name)
		case c.Status == Unknown && c.Detail == NotVisible:
			unseen = append(unseen, c.Name)
		default:
			open = append(open, c)
		}
	}
	writeChecks(p, open, it.Causes, "", st)
	if len(passing) > 0 {
		p.linef("  ", "pass: ", "%s %s", strings.Join(passing, ", "), hint("(-o wide for the details)"))
	}
	if len(unseen) > 0 {
		p.linef("  ", "unknown: ", "%s (%s; --kubelet asks the node)", strings.Join(unseen, ", "), NotVisible)
	}
}

// NotVisible is the detail of a checklist row that nothing the API holds
// can decide: only the node knows.
const NotVisible = "not visible through the API"
