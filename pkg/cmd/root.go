// Package cmd holds the cobra commands; the work happens in collect,
// diagnose and report.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/version"
)

// NewRoot builds `kubectl terminating`.
func NewRoot(streams genericiooptions.IOStreams) *cobra.Command {
	// The plugin's own binary guards the credential plugins it runs
	// (kube.RunGuard); a test binary is not the plugin.
	return newRoot(streams, func(o *Options) { o.monitor.GuardExec = true })
}

// Execute runs the command line and returns the process's exit code,
// having printed the error, if any, as one escaped line. A panic is
// recovered here (on the main goroutine; settle recovers the command's own)
// and reported as an internal error with exit 1: Go's own exit status for a
// panic is 2, which runbooks read as "stuck".
func Execute(ctx context.Context, root *cobra.Command, errOut io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			code = finish(errOut, recovered(r))
		}
	}()
	return finish(errOut, root.ExecuteContext(ctx))
}

// finish prints the error of a run that failed (exit 1) and returns its exit code.
func finish(errOut io.Writer, err error) int {
	code := ExitCode(err)
	if ec := (*ExitCodeError)(nil); errors.As(err, &ec) && ec.Warning != "" {
		fmt.Fprintln(errOut, "warning: "+ec.Warning)
	}
	if code == ExitError {
		var internal *InternalError
		if errors.As(err, &internal) && klog.V(1).Enabled() {
			fmt.Fprintf(errOut, "%s\n", internal.Stack)
		}
		fmt.Fprintln(errOut, "error: "+Explain(err))
	}
	return code
}

const (
	// interruptGrace is how long an interrupted run (Ctrl-C, SIGTERM, the
	// apiserver found not ready) may take to wind down before the process
	// ends anyway: Ctrl-C ends any run within a second.
	interruptGrace = 500 * time.Millisecond
	// deadlineGrace is the same past the run's bound: time for the reads
	// to give up and the report of what was read to be made.
	deadlineGrace = 2 * time.Second
)

// settle runs a command's work on a goroutine of its own and returns its
// error, explained (explainRun). sig ends on Ctrl-C, SIGTERM, or when the
// apiserver says it is not ready (kube.Monitor.Begin); run is sig bounded
// by --timeout (bound names it; "" without one), past which the work may
// take extra more (the final diagnosis of wait and list -w). If the work
// has not returned within a grace after either, settle returns without it:
// what holds it (a credential plugin that hangs, discovery, which takes no
// context, a file that never ends) is abandoned, as the process ends and
// the credential plugin's guard (kube.RunGuard) kills the plugin. A panic
// in the work is recovered as an *InternalError.
func (o *Options) settle(sig, run context.Context, bound string, extra time.Duration, work func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- recovered(r)
			}
		}()
		done <- work()
	}()
	sigDone, runDone := sig.Done(), run.Done()
	var giveUp <-chan time.Time
	doing := ""
	for {
		select {
		case err := <-done:
			return o.explainRun(sig, run, bound, extra, doing, err, false)
		case <-sigDone:
			sigDone, runDone = nil, nil
			doing = o.monitor.Doing()
			giveUp = time.After(interruptGrace)
		case <-runDone:
			runDone = nil
			if sig.Err() == nil {
				doing = o.monitor.Doing()
				giveUp = time.After(extra + deadlineGrace)
			}
		case <-giveUp:
			if d := o.monitor.Doing(); d != "" {
				doing = d
			}
			return o.explainRun(sig, run, bound, extra, doing, nil, true)
		}
	}
}

// explainRun makes a work's error say which bound fired and what the run
// was waiting for; abandoned: the work did not return in time. An error
// already explained (an inner settle's) is returned as it is.
func (o *Options) explainRun(sig, run context.Context, bound string, extra time.Duration, doing string, err error, abandoned bool) error {
	if doing == "" && (sig.Err() != nil || run.Err() != nil) {
		doing = o.monitor.Doing() // the work returned first: what the cut ended
	}
	var explained *BoundError
	var notReady *kube.NotReadyError
	var internal *InternalError
	switch {
	case errors.As(context.Cause(sig), &notReady):
		// The apiserver said it is not ready: whatever the work made of
		// the reads that failed, this is the run's error.
		return notReady
	case errors.As(err, &explained) || errors.As(err, &notReady) || errors.As(err, &internal):
		return err
	case sig.Err() != nil:
		// Whatever the work made of it, a report read while the reads
		// were being cancelled is not a verdict.
		return &BoundError{Bound: "interrupted", Doing: doing, Err: err}
	case err == nil && !abandoned:
		return nil
	}
	if cred := o.monitor.Credential(err); cred != nil {
		return cred
	}
	timedOut := abandoned || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isTimeout(err)
	switch {
	case !timedOut:
		if serverError(err) {
			if h := o.monitor.Health(context.WithoutCancel(sig)); h.NotReady() {
				return fmt.Errorf("%w (the apiserver at %s says it is not ready: %s)", err, h.Server, h)
			}
		}
		return err
	case run.Err() != nil && bound != "":
		what := fmt.Sprintf("timed out: %s, the bound on the whole run, expired", bound)
		if abandoned && extra > 0 {
			what = fmt.Sprintf("timed out: %s, the bound on the whole run, and the final diagnosis's own %s past it expired", bound, extra)
		}
		return &BoundError{Bound: what, Doing: doing, Health: o.health(sig), Err: err}
	case abandoned:
		return &BoundError{Bound: "timed out", Doing: doing, Health: o.health(sig), Err: err}
	case dialFailed(err):
		return err // the connection was never made: "cannot reach the cluster"
	}
	return &BoundError{Bound: fmt.Sprintf("a request timed out: --request-timeout %s, the bound on each request (not --timeout), expired", o.requestTimeout()), Health: o.health(sig), Err: err}
}

// addVerbosityFlag adds kubectl's -v: client-go logs each request on stderr
// from -v=6 (method, URL, status, time), its headers and bodies above. klog
// is silent otherwise (main): the plugin reports what matters itself.
func addVerbosityFlag(root *cobra.Command, errOut io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := fs.Lookup("v")
	v.Usage = "Log level on stderr: 6 logs each request to the apiserver (method, URL, status, time), 8 their bodies too."
	root.PersistentFlags().AddGoFlag(v)
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if f := cmd.Flags().Lookup("v"); f != nil && f.Changed && f.Value.String() != "0" {
			klog.SetOutput(errOut)
		}
	}
}

// newRoot lets tests swap the clients and the clock of both commands.
func newRoot(streams genericiooptions.IOStreams, customize func(*Options)) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	monitor := kube.Tune(flags, version.UserAgent())
	opts := func() *Options {
		o := newOptions(flags, streams)
		o.monitor = monitor
		customize(o)
		return o
	}
	root := &cobra.Command{
		Use:   "kubectl-terminating",
		Short: "Explain why Kubernetes objects are stuck Terminating",
		Long: `Explain why pods, namespaces and other objects stay Terminating, with the
evidence read from the cluster and remediation ordered from safe to risky.
It only reads from the cluster.

Exit codes: 0 nothing stuck (wait: everything gone), 2 at least one stuck
object (wait: timed out), 1 the tool failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl terminating",
		},
		// The root runs only to show its help, or to answer a first word
		// that is no command (rootArgs).
		Args:                       rootArgs,
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2,
	}
	flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Lookup("request-timeout").Usage = kube.RequestTimeoutUsage
	addVerbosityFlag(root, streams.ErrOut)
	root.SetUsageTemplate(usageTemplate) // cobra's own usage (not shown: SilenceUsage)
	setHelp(root, helpTemplate)
	root.SetFlagErrorFunc(usageError)
	// cobra's own `completion` command writes a script for the binary, not
	// for `kubectl terminating`: kubectl completes plugins through
	// kubectl_complete-terminating, which calls __complete.
	root.CompletionOptions.HiddenDefaultCmd = true
	opts().registerRootCompletions(root)
	root.AddCommand(
		newWhyCommand(opts()),
		newListCommand(opts()),
		newWaitCommand(opts()),
		newFixCommand(opts()),
		newPreflightCommand(opts()),
		newExplainCommand(opts()),
		newVersionCommand(streams),
		newOptionsCommand(),
	)
	return root
}

// health is what the apiserver says of itself, for the message of a run
// that timed out; "" when no request ever reached it (the credential plugin
// had not returned: the probe would wait on it too).
func (o *Options) health(sig context.Context) string {
	if !o.monitor.Contacted() {
		return ""
	}
	if !o.monitor.Connected() {
		// A server that accepts connections and stays silent (not even a
		// TLS handshake) would leave the probe waiting too: the run ends
		// at its bound instead.
		return "no connection to the apiserver got past the TLS handshake, so its /readyz was not asked"
	}
	h := o.monitor.Health(context.WithoutCancel(sig))
	if h == nil {
		return ""
	}
	if h.NotReady() {
		return fmt.Sprintf("the apiserver at %s says it is not ready (%s)", h.Server, h)
	}
	return h.String()
}

// requestTimeout is --request-timeout as given (or its default).
func (o *Options) requestTimeout() string {
	if o.ConfigFlags.Timeout == nil {
		return ""
	}
	return *o.ConfigFlags.Timeout
}

// serverError: the apiserver answered with a 5xx.
func serverError(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}

// dialFailed: the error is a connection that could not be made.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
