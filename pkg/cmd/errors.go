package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Exit codes, the contract runbooks rely on (docs/runbooks.md).
const (
	ExitOK    = 0 // nothing stuck (objects inside their grace period included)
	ExitError = 1 // the tool could not do its job
	ExitStuck = 2 // at least one stuck object reported
)

// ExitCodeError carries an exit code other than 1 out of a command, and a
// line for stderr that qualifies the verdict (Warning: a partial report
// that still found something stuck).
type ExitCodeError struct {
	Code    int
	Warning string
}

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// PartialError: nothing stuck was found (in a forecast: nothing that would
// hold the deletion), but some reads failed, so the report cannot say so.
type PartialError struct {
	Missing  []report.Skip
	Forecast bool
}

func (e *PartialError) Error() string {
	found := "nothing stuck was found"
	if e.Forecast {
		found = "nothing was found that would hold the deletion"
	}
	return found + ", but " + partial(e.Missing) + " (--allow-partial accepts a partial report)"
}

// partial says which reads a partial report lacks, the first three by name.
func partial(missing []report.Skip) string {
	var parts []string
	for i, m := range missing {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(missing)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", m.Check, m.Reason))
	}
	return fmt.Sprintf("the report is partial: could not read %s; the report lists them under skipped", report.Safe(strings.Join(parts, ", ")))
}

// ExitCode maps a command's error to the process exit code.
func ExitCode(err error) int {
	var ec *ExitCodeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.Code
	}
	return ExitError
}

// Explain turns an error from the cluster into one line an operator can act
// on, escaped (report.Safe): an error may quote a stranger's snapshot file
// or the cluster, and must not move the cursor or forge a second line.
func Explain(err error) string {
	return report.Safe(explain(err))
}

func explain(err error) string {
	var urlErr *url.Error
	var opErr *net.OpError
	var internal *InternalError
	var bound *BoundError
	var notReady *kube.NotReadyError
	var cred *kube.CredentialError
	switch {
	case errors.As(err, &internal):
		return internal.Error()
	case errors.As(err, &bound):
		return bound.Error()
	case errors.As(err, &notReady):
		return err.Error()
	case errors.As(err, &cred):
		return cred.Error()
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case dialFailed(err):
		return fmt.Sprintf("cannot reach the cluster: %v", err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("timed out: %v", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the cluster rejected the credentials (expired or invalid; log in again): %v", err)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("not allowed (the permissions the plugin needs: https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/rbac.md): %v", err)
	case errors.As(err, &urlErr) || errors.As(err, &opErr):
		return fmt.Sprintf("cannot reach the cluster: %v", err)
	}
	return err.Error()
}

// isTimeout: a client-side timeout (a request's own bound, a dial).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// BoundError: a bound of the run fired, or the run was interrupted, before
// its work was done. It names the bound, what the run was waiting for and,
// when it was asked, what the apiserver said of its own health.
type BoundError struct {
	// Bound is what fired, in the message's words: "timed out: --timeout 5s,
	// the bound on the whole run, expired", "interrupted".
	Bound string
	// Doing is what the run was waiting for ("" when nothing in particular).
	Doing string
	// Health is what the apiserver's /readyz said, if it was asked.
	Health string
	// Err is the work's error (nil when the work did not return in time).
	Err error
}

func (e *BoundError) Error() string {
	s := e.Bound
	if e.Doing != "" {
		s += " while " + e.Doing
	}
	if e.Err != nil && !bareContextError(e.Err) && !(e.Doing != "" && requestCancelled(e.Err)) {
		s += ": " + e.Err.Error()
	}
	if e.Health != "" {
		s += "; " + e.Health
	}
	return s
}

func (e *BoundError) Unwrap() error { return e.Err }

// bareContextError: the error says no more than the bound does.
func bareContextError(err error) bool {
	return err == context.Canceled || err == context.DeadlineExceeded
}

// requestCancelled: the error comes of a request the bound ended ("could
// not list any of the 1 resource types in scope: Get URL: context deadline
// exceeded"), which Doing already names.
func requestCancelled(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr) && bareContextError(urlErr.Err)
}

// InternalError is a panic recovered at the top: a bug, exit 1 (never
// Go's own 2, which runbooks read as "stuck").
type InternalError struct {
	Value any
	// Where is the function and line that panicked.
	Where string
	Stack []byte
}

func (e *InternalError) Error() string {
	where := ""
	if e.Where != "" {
		where = " at " + e.Where
	}
	return fmt.Sprintf("internal error: %v%s (a bug: please report it at https://github.com/kubectl-terminating/kubectl-terminating/issues with this line and the command that printed it; -v=1 prints the stack)", e.Value, where)
}

// recovered makes a recovered panic value an *InternalError; call it in the
// deferred function that recovered.
func recovered(r any) *InternalError {
	return &InternalError{Value: r, Where: panicSite(), Stack: debug.Stack()}
}

// panicSite is the first frame below the runtime's panic machinery: the
// function that panicked.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}
