package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/fatih/color"
)

// Style says how to render the human output.
type Style struct {
	// Wide adds columns (list) and details (why).
	Wide bool
	// Color enables ANSI colours; only on a terminal.
	Color bool
	// Namespaces adds the NAMESPACE column (list -A), as kubectl does.
	Namespaces bool
	// GroupBy folds list's rows into one per cause, finalizer or namespace.
	GroupBy string
	// NoHeaders drops list's header line and footer, as kubectl --no-headers.
	NoHeaders bool
	// Watching: list -w prints its table without the footer, then rows as
	// objects change (WatchTable).
	Watching bool
	// Width is the measure prose is wrapped to (see wrap.go); 0 keeps each
	// line whole.
	Width int
	// Fit is the width list's tables are cut to fit (fitColumns), without
	// -o wide; 0 (the width unknown: a pipe, as kubectl) cuts nothing.
	Fit int
}

// paint is where colour is added, and the only place: to text made safe
// first, so that no escaping can show a colour as text. Without attributes,
// or without Style.Color, the text is only made safe.
func (s Style) paint(text string, attrs ...color.Attribute) painted {
	if !s.Color || len(attrs) == 0 {
		return painted(Safe(text))
	}
	c := color.New(attrs...)
	c.EnableColor()
	return painted(c.Sprint(Safe(text)))
}

// The colours of the words that judge: red blocks, yellow may block or is
// not done yet, green is done, cyan informs.
var (
	severityColours = map[Severity]color.Attribute{Critical: color.FgRed, Warning: color.FgYellow, Info: color.FgCyan}
	statusColours   = map[CheckStatus]color.Attribute{Pass: color.FgGreen, Pending: color.FgYellow, Fail: color.FgRed}
)

// severity paints text (a severity, in some case) in its severity's colour.
func (s Style) severity(sev Severity, text string) painted {
	if attr, ok := severityColours[sev]; ok {
		return s.paint(text, attr, color.Bold)
	}
	return s.paint(text)
}

// status paints a checklist row's status (unknown stays plain).
func (s Style) status(st CheckStatus) painted {
	if attr, ok := statusColours[st]; ok {
		return s.paint(string(st), attr)
	}
	return s.paint(string(st))
}

// verdict is an item's state: STUCK, progressing (past its deadline, not
// stuck yet) or in grace period.
func (s Style) verdict(it Item) painted {
	switch {
	case it.Stuck:
		return s.paint("STUCK", color.FgRed, color.Bold)
	case it.OverdueSeconds > 0:
		return s.paint("progressing", color.FgYellow)
	}
	// One phrase, never cut by wrapping: glued once made safe (Safe shows
	// the glue, a private-use rune, escaped).
	return painted(strings.ReplaceAll(string(s.paint("in grace period", color.FgCyan)), " ", glue))
}

// WriteList prints one line per object: what `kubectl terminating list`
// shows. An empty report prints only what could not be read: the caller says
// "nothing found" on stderr, as kubectl does.
func WriteList(w io.Writer, r Report, st Style) error {
	if len(r.Items) == 0 {
		return writeSkipped(w, r.Skipped, st, nil)
	}
	if st.GroupBy != "" {
		return writeGroups(w, r, st)
	}
	header, rows := listRows(r.Items, ambiguousKinds(r.Items), st)
	fitColumns(header, rows, st.fit(), listShrink(header)...)
	err := writeListTable(w, header, rows, st)
	if err == nil && !st.NoHeaders && !st.Watching {
		err = writeFooter(w, r.Items, st)
	}
	return writeSkipped(w, r.Skipped, st, err)
}

// listRows is list's table: its header and one row per item. As kubectl
// prints several types, NAME is kind/name, kind.group/name for the ambiguous
// kinds (kinds of different groups share a name), so rows never look alike
// and each can be pasted.
func listRows(items []Item, ambiguous map[string]bool, st Style) (header []string, rows [][]string) {
	header = []string{"NAME", "TERMINATING", "SEVERITY", "TOP CAUSE"}
	if st.Namespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if st.Wide {
		header = append(header, "OVERDUE", "GRACE", "STUCK", "CONFIDENCE", "NODE", "SUMMARY")
	}
	rows = make([][]string, 0, len(items))
	for _, it := range items {
		top := topCause(it)
		row := cells(listName(it.Object, ambiguous), durationSeconds(it.TerminatingSeconds), st.severity(it.Severity, string(it.Severity)), top.Code)
		if st.Namespaces {
			row = append(cells(orNone(it.Object.Namespace)), row...)
		}
		if st.Wide {
			row = append(row, cells(durationSeconds(it.OverdueSeconds), fmt.Sprintf("%ds", it.GracePeriodSeconds), it.Stuck, confidence(top), orNone(it.Node), top.Summary)...)
		}
		rows = append(rows, row)
	}
	return header, rows
}

// fit is the width a list's table must fit: none with -o wide, whose
// tables are for wide terminals, as kubectl's.
func (s Style) fit() int {
	if s.Wide {
		return 0
	}
	return s.Fit
}

// listShrink are the columns of list's table that are cut to fit: the
// names (the namespace's, the object's) and the top cause's code.
func listShrink(header []string) []int {
	var cols []int
	for i, h := range header {
		if h == "NAMESPACE" || h == "NAME" || h == "TOP CAUSE" {
			cols = append(cols, i)
		}
	}
	return cols
}

// WriteWhy prints the diagnosis of every object: concise by default (see
// writeConcise; objects held the same way share one block), the whole tree
// with -o wide. JSON and YAML always carry everything.
func WriteWhy(w io.Writer, r Report, st Style) error {
	if len(r.Items) == 0 {
		return writeSkipped(w, r.Skipped, st, nil)
	}
	write := func(i int, print func() error) error {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		return print()
	}
	if st.Wide {
		for i, it := range r.Items {
			if err := write(i, func() error { return writeItem(w, it, "", "", st) }); err != nil {
				return err
			}
		}
	} else {
		for i, g := range sameWay(r.Items) {
			if err := write(i, func() error { return writeGroup(w, g, st) }); err != nil {
				return err
			}
		}
	}
	return writeSkipped(w, r.Skipped, st, nil)
}

// writeItem prints one item in full: its header after head, every other line
// after indent (they differ for a nested item, whose header carries the tree branch).
func writeItem(w io.Writer, it Item, head, indent string, st Style) error {
	p := newPrinter(w, st)
	writeHeader(p, it, head, st)
	writeChecks(p, it.Checks, it.Causes, indent, st)
	for n, c := range it.Causes {
		writeCauseLine(p, it.Causes, n, indent, st)
		for _, f := range evidenceOf(c) {
			p.evidence(indent, f)
		}
		for k, s := range c.Remediation {
			writeStep(p, k, s, indent)
		}
		if c.Docs != "" {
			p.wholef("%s       docs: %s", indent, c.Docs)
		}
		if len(c.BlockedBy) > 0 {
			p.linef(indent+"       ", "", "blocked by:")
		}
		// The blocking chain as a tree, as kubectl tree draws ownership.
		for k, b := range c.BlockedBy {
			branch, trunk := treeBranch(k, len(c.BlockedBy))
			if p.err == nil {
				p.err = writeItem(w, b, indent+"       "+branch, indent+"       "+trunk, st)
			}
		}
	}
	writeTimeline(p, it, indent, maxTimeline, "all of them in -o json")
	writeContentsRead(p, it, indent)
	writeItemSkips(p, it, indent)
	return p.err
}

func writeHeader(p *printer, it Item, head string, st Style) {
	if it.Forecast {
		writeForecastHeader(p, it, head, st)
		return
	}
	if it.DeletionTimestamp.IsZero() && len(it.Causes) == 0 && len(it.Skipped) == 0 { // a blocker with no deletion of its own
		p.linef(head, "", "%s  holds the object above (no deletion of its own to diagnose; see the evidence)", objectName(it.Object))
		return
	}
	// A grace period and an overdue time are said only when there is one:
	// most kinds have no grace period, and an object inside it is not overdue.
	var timing strings.Builder
	if it.GracePeriodSeconds > 0 {
		fmt.Fprintf(&timing, "  grace %ds", it.GracePeriodSeconds)
	}
	if it.OverdueSeconds > 0 {
		fmt.Fprintf(&timing, "  overdue %s", durationSeconds(it.OverdueSeconds))
	}
	p.linef(head, "", "%s  %s  Terminating %s%s  %s", objectName(it.Object), st.severity(it.Severity, strings.ToUpper(string(it.Severity))),
		durationSeconds(it.TerminatingSeconds), timing.String(), st.verdict(it))
}

// writeForecastHeader heads a preflight's item: the object is not being
// deleted, and the verdict is what its deletion would do: stick (a
// critical cause), or may stick (a warning, exit 2 all the same).
func writeForecastHeader(p *printer, it Item, head string, st Style) {
	severity, verdict := st.paint("CLEAR"), st.paint("nothing found that would hold it", color.FgGreen)
	if len(it.Causes) > 0 {
		severity = st.severity(it.Severity, strings.ToUpper(string(it.Severity)))
	}
	switch {
	case it.Stuck && it.Severity == Critical:
		verdict = st.paint("its deletion WOULD STICK", color.FgRed, color.Bold)
	case it.Stuck: // a warning: what may hold it (a suspect, a failure reported now)
		verdict = st.paint("its deletion MAY STICK", color.FgYellow, color.Bold)
	}
	p.linef(head, "", "%s  %s  not being deleted  %s", objectName(it.Object), severity, verdict)
}

// writeChecks prints the checklist; a row's detail names the cause that
// says more (checkDetail).
func writeChecks(p *printer, checks []Check, causes []Cause, indent string, st Style) {
	if len(checks) == 0 || p.err != nil {
		return
	}
	header := []string{"CHECK", "STATUS", "DETAIL"}
	rows := make([][]string, 0, len(checks))
	for _, c := range checks {
		rows = append(rows, cells(c.Name, st.status(c.Status), checkDetail(c, causes)))
	}
	p.err = writeProseTable(p.w, indent+"  ", header, rows, p.width)
}

func writeCauseLine(p *printer, causes []Cause, n int, indent string, st Style) {
	c := causes[n]
	p.linef(indent+"  ", fmt.Sprintf("%d. ", n+1), "%s %s (confidence %s%s): %s", st.severity(c.Severity, string(c.Severity)), c.Code, confidence(c), rankedAbove(causes, n), causeSummary(causes, n))
}

// rankedAbove says why a cause is ranked above a more confident one below it
// ("" when none is): causes are ordered by severity, then nearest the root
// (the catalogue's depth), then confidence (diagnose's causeLess).
func rankedAbove(causes []Cause, n int) string {
	c := causes[n]
	for _, below := range causes[n+1:] {
		if below.Confidence <= c.Confidence {
			continue
		}
		why := "nearer the root"
		if c.Severity.Weight() > below.Severity.Weight() {
			why = "more severe"
		}
		return fmt.Sprintf("; ranked above a %s one: %s", confidence(below), why)
	}
	return ""
}

func writeStep(p *printer, k int, s Step, indent string) {
	p.linef(indent+"       ", fmt.Sprintf("fix %d: ", k+1), "%s", s.Action)
	switch {
	case s.Command != "" && s.Node != "":
		p.wholef("%s              on node %s: $ %s", indent, s.Node, s.Command)
	case s.Command != "":
		p.wholef("%s              $ %s", indent, s.Command)
	}
	p.linef(indent+"              ", "risk: ", "%s", s.Risk)
}

// treeBranch draws the k-th of n children.
func treeBranch(k, n int) (branch, trunk string) {
	if k == n-1 {
		return "└── ", "    "
	}
	return "├── ", "│   "
}

// DeletionRequested begins the timeline's moment of the deletion request,
// which the renderers show however many moments they leave out.
const DeletionRequested = "deletion requested"

// writeTimeline prints the deletion request and the last moments, limit in
// all, saying how many it leaves out before and after the request.
func writeTimeline(p *printer, it Item, indent string, limit int, where string) {
	if len(it.Timeline) == 0 {
		return
	}
	p.linef(indent+"  ", "", "timeline:")
	tail := len(it.Timeline) - limit // the first of the last moments shown
	if r := slices.IndexFunc(it.Timeline, isDeletionRequest); r >= 0 && r < tail {
		tail++ // the request takes one of the limit
	}
	hidden, shown := 0, false
	for i, m := range it.Timeline {
		if i < tail && !isDeletionRequest(m) {
			hidden++
			continue
		}
		if hidden > 0 {
			which := "earlier event"
			if shown {
				which = "more event"
			}
			p.linef(indent+"    ", "", "... %s (%s)", Count(hidden, which), where)
			hidden = 0
		}
		shown = true
		p.linef(indent+"    ", m.Time.UTC().Format("2006-01-02T15:04:05Z")+"  ", "%s", momentText(m, p.quoted))
	}
}

func isDeletionRequest(m Moment) bool { return m.DeletionRequest }

// writeContentsRead says which types a namespace's contents were listed
// from: those its controller's conditions name, or every type, and why.
func writeContentsRead(p *printer, it Item, indent string) {
	r := it.ContentsRead
	switch {
	case r == nil:
	case r.Index:
		p.linef(indent+"  ", "read: ", "the types the namespace controller's conditions name as left, and pods: %s %s", Count(r.Types, "type"), hint("(--full-scan lists every type)"))
	case r.Why != "":
		p.linef(indent+"  ", "read: ", "every namespaced type (%d): %s", r.Types, r.Why)
	default:
		p.linef(indent+"  ", "read: ", "every namespaced type (%d)", r.Types)
	}
}

func writeItemSkips(p *printer, it Item, indent string) {
	for _, s := range it.Skipped {
		p.linef(indent+"  ", "skipped: ", "%s (%s) %s", s.Check, s.Reason, s.Detail)
	}
}

func writeSkipped(w io.Writer, skipped []Skip, st Style, err error) error {
	if err != nil || len(skipped) == 0 {
		return err
	}
	p := newPrinter(w, st)
	p.linef("", "", "\nNot read (the results above are partial):")
	for _, s := range skipped {
		p.linef("  ", "", "%s: %s %s", s.Check, s.Reason, s.Detail)
	}
	return p.err
}

// printer keeps the first write error so a run of lines needs one check,
// and wraps its lines to width.
type printer struct {
	w     io.Writer
	width int
	err   error
	// quoted are the cluster's words the facts printed quote: what the
	// timeline need not repeat (momentText).
	quoted map[string]bool
	// maxLines, when set, is how many lines one line may wrap to; the
	// last says where the rest is (a concise report's line quoting a long
	// message).
	maxLines int
}

func newPrinter(w io.Writer, st Style) *printer { return &printer{w: w, width: st.Width} }

// linef prints one line: lead (its indent, and the tree drawn before it),
// label (what begins it before its text: "1. ", "evidence: ", a time; ""
// for none), then its text as safef makes it from format and args (cluster
// text reaches most arguments), wrapped to the printer's width (wrapLine).
func (p *printer) linef(lead, label, format string, args ...any) {
	text := string(safef(format, args...))
	lines := wrapLine(lead, label, text, p.width)
	if p.maxLines > 0 && len(lines) > p.maxLines {
		lines = append(lines[:p.maxLines-1], cut(lines[p.maxLines-1], p.width))
	}
	p.print(lines)
}

// evidence prints a fact as a line of evidence after indent, and records
// the words it quotes.
func (p *printer) evidence(indent string, f Fact) {
	p.linef(indent+"       ", "evidence: ", "%s", f.Text)
	if f.Quote != "" {
		if p.quoted == nil {
			p.quoted = map[string]bool{}
		}
		p.quoted[f.Quote] = true
	}
}

// wholef prints a line that ends with a command or a link, as safef makes
// it, never wrapped: either is pasted whole.
func (p *printer) wholef(format string, args ...any) {
	p.print([]string{string(safef(format, args...))})
}

// uncut prints what print prints without cutting its lines.
func (p *printer) uncut(print func()) {
	limit := p.maxLines
	p.maxLines = 0
	print()
	p.maxLines = limit
}

func (p *printer) print(lines []string) {
	for _, l := range lines {
		if p.err != nil {
			return
		}
		_, p.err = fmt.Fprintln(p.w, l)
	}
}

func topCause(it Item) Cause {
	if len(it.Causes) == 0 {
		return Cause{Code: "<none>"}
	}
	return it.Causes[0]
}

// objectName heads an item as kubectl takes it: kind.group/name -n namespace.
func objectName(o ObjectRef) string {
	s := Name(o)
	if o.Namespace != "" {
		s += " -n " + o.Namespace
	}
	return s + lookalike(o.Name)
}

// lookalike flags a name that can pass for another when printed: one that
// holds a backslash (a literal \x1b prints as an escaped ESC does) or
// letters outside ASCII (a Cyrillic а prints as a Latin a); "" for any
// other. Runes that draw nothing are escaped by Safe already.
func lookalike(name string) string {
	var odd []string
	for _, r := range name {
		if r != '\\' && (r <= unicode.MaxASCII || !unicode.IsLetter(r)) {
			continue // the code is made for the odd runes alone: this runs for every name of a list
		}
		if code := fmt.Sprintf("U+%04X", r); !slices.Contains(odd, code) {
			odd = append(odd, code)
		}
	}
	if len(odd) == 0 {
		return ""
	}
	return " (the name holds " + strings.Join(odd[:min(len(odd), 3)], ", ") + ": not the ASCII it may look like)"
}

// writeListTable prints a list's table, without its header line under
// NoHeaders (its columns as wide as with it).
func writeListTable(w io.Writer, header []string, rows [][]string, st Style) error {
	widths := widen(nil, header)
	if !st.NoHeaders {
		rows = append([][]string{header}, rows...)
	}
	return alignRows(w, "", rows, widths)
}

// ambiguousKinds are the kinds that more than one API group of the items
// defines (Thing in a.example.com and in b.example.com).
func ambiguousKinds(items []Item) map[string]bool {
	groups := map[string]map[string]bool{}
	for _, it := range items {
		k := strings.ToLower(it.Object.Kind)
		if groups[k] == nil {
			groups[k] = map[string]bool{}
		}
		groups[k][groupOf(it.Object.APIVersion)] = true
	}
	out := map[string]bool{}
	for k, gs := range groups {
		out[k] = len(gs) > 1
	}
	return out
}

// listName is kind/name, or kind.group/name when the kind is ambiguous; a
// long built-in kind by kubectl's short name (crd/widgets.example.com).
func listName(o ObjectRef, ambiguous map[string]bool) string {
	kind := strings.ToLower(o.Kind)
	switch {
	case ambiguous[kind]:
		return Name(o) + lookalike(o.Name)
	case shortKinds[qualifiedKind(o)] != "":
		kind = shortKinds[qualifiedKind(o)]
	}
	return kind + "/" + o.Name + lookalike(o.Name)
}

// shortKinds are kubectl's short names of the built-in kinds of 14 letters
// or more, by qualifiedKind: what list prints, and what why and kubectl
// take, instead of a kind that would make NAME the widest column. The lab's
// apiserver is asked that each is its resource's short name (e2e).
var shortKinds = map[string]string{
	"customresourcedefinition.apiextensions.k8s.io": "crd",
	"persistentvolumeclaim":                         "pvc",
	"persistentvolume":                              "pv",
	"serviceaccount":                                "sa",
	"replicationcontroller":                         "rc",
	"horizontalpodautoscaler.autoscaling":           "hpa",
	"poddisruptionbudget.policy":                    "pdb",
	"certificatesigningrequest.certificates.k8s.io": "csr",
}

// ShortKinds are shortKinds, for the test that asks the apiserver.
func ShortKinds() map[string]string { return maps.Clone(shortKinds) }

// qualifiedKind is an object's kind, lower case, with its API group.
func qualifiedKind(o ObjectRef) string {
	if g := groupOf(o.APIVersion); g != "" {
		return strings.ToLower(o.Kind) + "." + g
	}
	return strings.ToLower(o.Kind)
}

// Name is how `-o name` prints an object, as kubectl does: kind.group/name.
func Name(o ObjectRef) string { return qualifiedKind(o) + "/" + o.Name }

func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

func confidence(c Cause) string { return strconv.FormatFloat(c.Confidence, 'f', 2, 64) }

func durationSeconds(s int64) string {
	if s <= 0 {
		return "0s"
	}
	return HumanDuration(secondsDuration(s))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
