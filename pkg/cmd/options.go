package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/clock"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Options are what every command shares (kubectl's flags, what to look
// at, how long, where the evidence comes from and goes, how the report is
// printed) and the run they share (start, settle, Diagnose, Print). A
// command's own flags are its own options, set only for it: list's
// (listOptions), preflight's (preflightOptions), fix's (fixOptions).
type Options struct {
	genericiooptions.IOStreams
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags

	AllNamespaces  bool
	LabelSelector  string
	FieldSelector  string
	OlderThan      time.Duration
	IgnoreNotFound bool
	NoColor        bool
	Kinds          []string
	StuckOnly      bool
	AllowPartial   bool
	Timeout        time.Duration
	// SaveSnapshot names the file the run's evidence is saved to; Replay the
	// file a run reads its evidence from instead of the cluster.
	SaveSnapshot string
	Replay       string
	// ReplayMaxSize caps the snapshot file --snapshot reads (and what it holds).
	ReplayMaxSize resource.QuantityValue
	// Kubelet also reads what the pods' kubelets report (nodes/proxy).
	Kubelet bool
	// FullScan lists every type of a terminating namespace even where its
	// controller's conditions name what is left.
	FullScan bool

	// The command's own options: nil for the other commands.
	list     *listOptions
	forecast *preflightOptions

	// Set by Complete.
	command   string // why, list
	args      []string
	namespace string
	// namespaceGiven: -n was given (else the kubeconfig's namespace).
	namespaceGiven bool
	requests       []collect.Request
	printer        printers.ResourcePrinter
	// emptySaid: stderr has said why the report is empty (noteNotTerminating).
	emptySaid bool
	// elsewhereSaid is what is being deleted outside the namespace of a
	// report that found nothing in it (elsewhere).
	elsewhereSaid string
	// replayed describes the snapshot a replay read (--snapshot).
	replayed *report.Replay

	// monitor follows the clients' requests (kube.Tune): what a run that
	// stalls waits for, and the apiserver's health.
	monitor *kube.Monitor
	// line is the run's status line on a terminal's stderr (statusLine).
	line     *statusLine
	lineOnce sync.Once

	// Test seams.
	newClients func() (*kube.Clients, error)
	now        func() time.Time
	clock      clock.WithTicker // wait's timers
	isTerminal func(io.Writer) bool
}

func newOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	o := &Options{
		IOStreams:   streams,
		ConfigFlags: flags,
		PrintFlags:  genericclioptions.NewPrintFlags(""),
		now:         time.Now,
		clock:       clock.RealClock{},
		isTerminal:  isTerminal,
	}
	o.newClients = o.kubeClients
	return o
}

func (o *Options) addFlags(cmd *cobra.Command) {
	o.addScopeFlags(cmd)
	o.addFieldSelectorFlag(cmd)
	cmd.Flags().DurationVar(&o.OlderThan, "older-than", 0, "Only objects whose deletion was requested at least this long ago (e.g. 10m).")
	cmd.Flags().StringSliceVar(&o.Kinds, "kind", nil, "Only these types (kinds, resources or short names: --kind pods,pvc,widgets.example.com).")
	o.addAllowPartialFlag(cmd)
	o.addTimeoutFlag(cmd)
	cmd.Flags().BoolVar(&o.StuckOnly, "stuck-only", false, "Hide objects that are not stuck (inside their grace period, or past it and progressing).")
	o.addSaveSnapshotFlag(cmd)
	cmd.Flags().BoolVar(&o.Kubelet, "kubelet", false, "Also ask each stuck pod's kubelet (node proxy) what it still holds. Needs get on nodes/proxy, a powerful permission (docs/rbac.md): off by default.")
	o.addFullScanFlag(cmd)
	o.addReplayFlags(cmd)
	o.addOutputFlags(cmd)
}

func (o *Options) addScopeFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Look in every namespace, and at cluster-scoped objects too.")
	cmd.Flags().StringVarP(&o.LabelSelector, "selector", "l", "", "Label selector to filter on (=, ==, != and set-based).")
}

func (o *Options) addFullScanFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.FullScan, "full-scan", false, "List every type of a terminating namespace, even where its controller's conditions name what is left (they are used when current).")
}

func (o *Options) addAllowPartialFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.AllowPartial, "allow-partial", false, "Exit 0 when nothing stuck is found though some reads failed (a partial report: exit 1 without it).")
}

func (o *Options) addTimeoutFlag(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 2*time.Minute, "Bound the whole run (0: no bound): reads not made by then are reported under skipped, a partial report.")
}

func (o *Options) addSaveSnapshotFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.SaveSnapshot, "save-snapshot", "", "Also save what the run read to FILE (.gz: compressed), to replay anywhere with --snapshot. No Secret or ConfigMap data.")
}

func (o *Options) addFieldSelectorFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.FieldSelector, "field-selector", "", "Server-side field selector on the named types (spec.nodeName=node-1 for pods): needs a TYPE or --kind.")
}

func (o *Options) addNoColorFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.NoColor, "no-color", false, "Never colour the output (never coloured off a terminal, nor when NO_COLOR is set).")
}

func (o *Options) addOutputFlags(cmd *cobra.Command) {
	o.addNoColorFlag(cmd)
	cmd.Flags().StringVarP(o.PrintFlags.OutputFormat, "output", "o", "", "Output format: "+outputFormatList())
	o.PrintFlags.TemplatePrinterFlags.AddFlags(cmd)
	// cli-runtime's texts, shortened for a help that fits the screen.
	cmd.Flags().Lookup("allow-missing-template-keys").Usage = "With -o jsonpath or go-template: a field or key missing is no error."
	cmd.Flags().Lookup("template").Usage = "The template (or its file) of -o go-template, go-template-file, jsonpath or jsonpath-file."
}

// Complete reads the namespace and arguments and picks the printer.
func (o *Options) Complete(args []string) error {
	o.args = args
	var err error
	if o.Replay == "" { // a replay reads no kubeconfig: the snapshot has the namespace
		if o.namespace, o.namespaceGiven, err = o.ConfigFlags.ToRawKubeConfigLoader().Namespace(); err != nil {
			return o.kubeconfigError(err)
		}
	}
	if o.requests, err = collect.ParseArgs(args); err != nil {
		return err
	}
	for _, k := range o.Kinds {
		if strings.Contains(k, "/") {
			return fmt.Errorf("--kind takes types, not names: %q", k)
		}
		o.requests = append(o.requests, collect.Request{Resource: k})
	}
	switch *o.PrintFlags.OutputFormat {
	case "", "wide", "name":
	default:
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			if genericclioptions.IsNoCompatiblePrinterError(err) {
				return fmt.Errorf("unknown output format %q: -o takes %s", *o.PrintFlags.OutputFormat, outputFormatList())
			}
			return err
		}
		// A report has no managed fields: skip the deep copy made to drop them.
		if p, ok := o.printer.(*printers.OmitManagedFieldsPrinter); ok {
			o.printer = p.Delegate
		}
	}
	return nil
}

// outputFormatList is -o's values for a person: "jsonpath=...".
func outputFormatList() string {
	list := make([]string, len(outputFormats))
	for i, f := range outputFormats {
		if strings.HasSuffix(f, "=") {
			f += "..."
		}
		list[i] = f
	}
	return strings.Join(list, ", ")
}

// Validate rejects flag combinations that cannot work.
func (o *Options) Validate() error {
	if o.command == waitCommand && o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if o.OlderThan < 0 {
		return fmt.Errorf("--older-than must not be negative")
	}
	if _, err := labels.Parse(o.LabelSelector); err != nil {
		return fmt.Errorf("invalid --selector %q: %v", o.LabelSelector, err)
	}
	if o.Replay != "" && o.SaveSnapshot != "" {
		return fmt.Errorf("--snapshot replays a saved run; --save-snapshot saves a live one: not both")
	}
	if l := o.list; l != nil {
		if err := l.validate(o); err != nil {
			return err
		}
	}
	if o.FieldSelector != "" {
		if _, err := fields.ParseSelector(o.FieldSelector); err != nil {
			return fmt.Errorf("invalid --field-selector %q: %v", o.FieldSelector, err)
		}
		if len(o.requests) == 0 {
			return fmt.Errorf("--field-selector needs the types it applies to, as most types support no field but metadata.name (for example: list pods --field-selector spec.nodeName=node-1)")
		}
	}
	return nil
}

// Diagnose reads the cluster and builds the report.
func (o *Options) Diagnose(ctx context.Context) (report.Report, error) {
	r, _, _, err := o.diagnose(ctx)
	return r, err
}

// diagnose is Diagnose with what list -w follows afterwards: the objects
// found and the collector that read them.
func (o *Options) diagnose(ctx context.Context) (report.Report, []collect.Found, *collect.Collector, error) {
	if o.Replay != "" {
		snap, err := o.replay(ctx)
		if err != nil {
			return report.Report{}, nil, nil, err
		}
		r, err := o.filter(o.judge()(snap))
		r.Replay = o.replayed
		return r, nil, nil, err
	}
	clients, err := o.newClients()
	if err != nil {
		return report.Report{}, nil, nil, err
	}
	c := o.collector(clients)
	defer o.showProgress(c.Progress)()
	scope := collect.Scope{Namespace: o.namespace, AllNamespaces: o.AllNamespaces, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector}

	var found []collect.Found
	if len(o.requests) > 0 {
		found, err = c.Resolve(ctx, o.requests, scope, o.IgnoreNotFound)
		switch {
		case err != nil:
			err = o.hint(ctx, c, scope, err)
		case o.preflight(): // what is not being deleted is what it forecasts
		default:
			found, err = o.insideNamespaces(ctx, c, scope, found)
			o.noteNotTerminating(found)
		}
	} else {
		found, err = o.scanAll(ctx, c, scope)
	}
	if err != nil {
		return report.Report{}, nil, nil, err
	}
	scanned := len(o.requests) == 0 || slices.ContainsFunc(o.requests, func(r collect.Request) bool { return len(r.Names) == 0 })
	if len(found) == 0 && scanned && !o.AllNamespaces {
		if err := o.namespaceMissing(ctx, clients); err != nil {
			return report.Report{}, nil, nil, err
		}
	}
	snap := c.Snapshot(ctx, found)
	if err := o.save(snap); err != nil {
		return report.Report{}, nil, nil, err
	}
	r, err := o.filter(o.judge()(snap))
	if err == nil && len(r.Items) == 0 && scanned && !o.AllNamespaces && o.human() {
		o.elsewhereSaid = o.elsewhere(ctx, clients)
	}
	return r, found, c, err
}

// judge is how the run judges its snapshot: a preflight forecasts; list's
// tables and -o name show each object's verdict at most, which
// diagnose.Verdicts builds without the evidence and steps Diagnose adds
// (--sort-by may read them); anything else is diagnosed whole.
func (o *Options) judge() func(*observed.Snapshot) report.Report {
	switch {
	case o.preflight():
		return diagnose.Preflight
	case o.list != nil && (o.human() || *o.PrintFlags.OutputFormat == "name") && o.list.SortBy == "":
		return diagnose.Verdicts
	}
	return diagnose.Diagnose
}

// human: the output is for a person (a table), not a program.
func (o *Options) human() bool {
	f := *o.PrintFlags.OutputFormat
	return f == "" || f == "wide"
}

// filter applies --older-than, --stuck-only and --sort-by to a report.
func (o *Options) filter(r report.Report) (report.Report, error) {
	r.Items = olderThan(r.Items, o.OlderThan)
	if o.StuckOnly {
		r.Items = slices.DeleteFunc(r.Items, func(it report.Item) bool { return !it.Stuck })
	}
	if o.list != nil && o.list.SortBy != "" {
		if err := report.SortBy(r.Items, o.list.SortBy); err != nil {
			return report.Report{}, err
		}
	}
	return r, nil
}

func (o *Options) scanAll(ctx context.Context, c *collect.Collector, scope collect.Scope) ([]collect.Found, error) {
	mappings, err := c.ListableMappings(scope)
	if err != nil {
		return nil, err
	}
	return c.Scan(ctx, scope, mappings)
}

// noteNotTerminating tells, on stderr, about named objects that are not
// being deleted. When the run named objects only, that is all there is to
// say of its empty report: "No terminating objects found in default
// namespace" would add a scope the run did not look at (of ns/shop, say).
func (o *Options) noteNotTerminating(found []collect.Found) {
	said := false
	for _, f := range found {
		if isNamespace(f) {
			said = said || !f.Terminating() // insideNamespaces said what is in it
			continue
		}
		if !f.Terminating() {
			fmt.Fprintf(o.stderr(), "%s is not being deleted (no metadata.deletionTimestamp)\n", report.Safe(report.Name(f.Ref())))
			said = true
		}
	}
	o.emptySaid = said && !slices.ContainsFunc(o.requests, func(r collect.Request) bool { return len(r.Names) == 0 })
}

func olderThan(items []report.Item, min time.Duration) []report.Item {
	if min <= 0 {
		return items
	}
	out := items[:0]
	for _, it := range items {
		if time.Duration(it.TerminatingSeconds)*time.Second >= min {
			out = append(out, it)
		}
	}
	return out
}

// Print writes the report in the chosen format; human tables through write.
func (o *Options) Print(r report.Report, write func(report.Report, report.Style) error) error {
	switch *o.PrintFlags.OutputFormat {
	case "", "wide":
		if len(r.Items) == 0 && !o.emptySaid {
			fmt.Fprintln(o.ErrOut, o.nothingFound())
			if o.elsewhereSaid != "" {
				fmt.Fprintln(o.ErrOut, o.elsewhereSaid)
			}
		}
		return write(r, o.style())
	case "name":
		for _, it := range r.Items {
			if _, err := fmt.Fprintln(o.Out, report.Safe(report.Name(it.Object))); err != nil {
				return err
			}
		}
		return nil
	case "json":
		return report.WriteJSON(o.Out, r)
	case "yaml":
		return report.WriteYAML(o.Out, r)
	}
	u, err := report.ToUnstructured(r)
	if err != nil {
		return err
	}
	return o.printer.PrintObj(u, o.Out)
}

// style is how the human tables look.
func (o *Options) style() report.Style {
	st := report.Style{Wide: *o.PrintFlags.OutputFormat == "wide", Color: o.colour(), Namespaces: o.AllNamespaces, Width: o.width(), Fit: o.knownWidth()}
	if l := o.list; l != nil {
		st.NoHeaders, st.GroupBy = l.NoHeaders, l.GroupBy
	}
	return st
}

// nothingFound is said on stderr when nothing terminating is found, as
// kubectl says "No resources found in shop namespace."
func (o *Options) nothingFound() string {
	switch {
	case o.preflight() && o.AllNamespaces:
		return "No resources found."
	case o.preflight():
		return fmt.Sprintf("No resources found in %s namespace.", report.Safe(o.namespace))
	}
	if o.AllNamespaces {
		return "No terminating objects found."
	}
	return fmt.Sprintf("No terminating objects found in %s namespace.", report.Safe(o.namespace))
}

// collector reads through the clients, saying what it reads (showProgress
// draws it on a terminal).
func (o *Options) collector(clients *kube.Clients) *collect.Collector {
	return &collect.Collector{Clients: clients, Now: o.now, Kubelet: o.Kubelet, FullScan: o.FullScan, Preflight: o.preflight(), Cascade: o.cascade(), Progress: &collect.Progress{}}
}

// colour only on a terminal, and never with --no-color or NO_COLOR.
func (o *Options) colour() bool {
	if o.NoColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	return o.isTerminal(o.Out)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// width is the measure a person's output is wrapped to: the terminal's
// width; off a terminal, $COLUMNS as the shells and coreutils take it (a
// script that wants long lines sets it), else report.DefaultWidth.
func (o *Options) width() int {
	if cols := o.knownWidth(); cols > 0 {
		return cols
	}
	return report.DefaultWidth
}

// knownWidth is the terminal's width, or $COLUMNS off a terminal; 0 when
// neither says (a pipe: tables are then not cut, as kubectl's).
func (o *Options) knownWidth() int { return knownWidth(o.Out, o.isTerminal) }

func knownWidth(w io.Writer, isTerminal func(io.Writer) bool) int {
	if cols := terminalWidth(w); cols > 0 && isTerminal(w) {
		return cols
	}
	if cols, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && cols > 0 {
		return cols
	}
	return 0
}

// terminalWidth is the width in columns of the terminal w writes to; 0
// when w is no terminal or does not say.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// exitFor is the exit status of a completed diagnosis: stuck wins; then a
// report that could not read everything it needed fails, because "nothing
// stuck" would be a verdict on reads that were not made.
func exitFor(r report.Report, allowPartial bool) error {
	missing := r.Incomplete()
	for _, it := range r.Items {
		if it.Stuck {
			stuck := &ExitCodeError{Code: ExitStuck}
			if len(missing) > 0 {
				stuck.Warning = partial(missing)
			}
			return stuck
		}
	}
	if len(missing) > 0 && !allowPartial {
		return &PartialError{Missing: missing, Forecast: slices.ContainsFunc(r.Items, func(it report.Item) bool { return it.Forecast })}
	}
	return nil
}

// start is every command's beginning: the options completed and
// validated, then the monitor begun. Everything from here is bounded (the
// clients, the credential plugin, discovery, the reads: settle): sig ends
// on Ctrl-C, SIGTERM, or a stall that makes the apiserver's health the
// run's error (Begin); run is sig bounded by --timeout, unless unbounded
// says the run may go on (a watch given no --timeout) or --timeout is 0;
// bound names the bound ("" for none). stop ends both.
func (o *Options) start(cmd *cobra.Command, args []string, unbounded bool) (sig, run context.Context, bound string, stop func(), err error) {
	if err := o.Complete(args); err != nil {
		return nil, nil, "", nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, nil, "", nil, err
	}
	sig, end := o.monitor.Begin(cmd.Context())
	if unbounded || o.Timeout <= 0 {
		return sig, sig, "", end, nil
	}
	run, cancel := context.WithTimeout(sig, o.Timeout)
	return sig, run, "--timeout " + o.Timeout.String(), func() { cancel(); end() }, nil
}

// run is the Complete -> Validate -> Diagnose -> Print sequence of why,
// list and preflight.
func (o *Options) run(cmd *cobra.Command, args []string, write func(report.Report, report.Style) error) error {
	o.command = cmd.Name()
	// A watch runs until its objects are gone, unless --timeout is given.
	watch := o.list != nil && o.list.Watch
	sig, ctx, bound, stop, err := o.start(cmd, args, watch && !cmd.Flags().Changed("timeout"))
	if err != nil {
		return err
	}
	defer stop()
	if watch {
		return o.settle(sig, ctx, bound, finalRead, func() error { return o.watchList(ctx, o.style()) })
	}
	var r report.Report
	err = o.settle(sig, ctx, bound, 0, func() (err error) {
		r, err = o.Diagnose(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if err := o.Print(r, write); err != nil {
		return err
	}
	return exitFor(r, o.AllowPartial)
}
