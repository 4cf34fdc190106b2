package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Exit codes, the contract runbooks rely on (docs/runbooks.md).
const (
	ExitOK    = 0 // nothing stuck (objects inside their grace period included)
	ExitError = 1 // the tool could not do its job
	ExitStuck = 2 // at least one stuck object reported
)

// ExitCodeError carries an exit code other than 1 out of a command.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// PartialError: nothing stuck was found, but some reads failed, so the
// report cannot say nothing is stuck.
type PartialError struct{ Missing []report.Skip }

func (e *PartialError) Error() string {
	var parts []string
	for i, m := range e.Missing {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Missing)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", m.Check, m.Reason))
	}
	return fmt.Sprintf("nothing stuck was found, but the report is partial: could not read %s; the report lists them under skipped (--allow-partial accepts a partial report)",
		report.Safe(strings.Join(parts, ", ")))
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

// Explain turns an error from the cluster into one line an operator can act on.
func Explain(err error) string {
	var urlErr *url.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timed out (--timeout bounds the run): %v", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the cluster rejected the credentials (expired or invalid; log in again): %v", err)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("not allowed (the permissions the plugin needs: https://github.com/kubectl-terminating/kubectl-terminating/blob/main/docs/rbac.md): %v", err)
	case errors.As(err, &urlErr) || errors.As(err, &opErr):
		return fmt.Sprintf("cannot reach the cluster: %v", err)
	}
	return err.Error()
}
