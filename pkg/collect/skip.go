package collect

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// skipOf records a read that failed, classified so the report can say why.
func skipOf(check string, err error) report.Skip {
	reason := report.SkipError
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		reason = report.SkipForbidden
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded) || isNetTimeout(err):
		reason = report.SkipTimeout
	}
	sk := report.Skip{Check: check, Reason: reason, Detail: err.Error()}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		sk.APIMessage = status.Status().Message
	}
	return sk
}

// isNetTimeout: the client's own request timeout (--request-timeout) expired.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
