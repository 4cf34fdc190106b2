package kube

import (
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transient errors are worth retrying: the apiserver restarting or
// overloaded, a connection refused or reset, a timeout.
func Transient(err error) bool {
	var ne net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		(errors.As(err, &ne) && ne.Timeout()) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// Backoff doubles the wait after each failure, from one second to ten.
type Backoff struct{ failures int }

// Next is how long to wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	d := time.Second << min(b.failures, 4)
	b.failures++
	return min(d, 10*time.Second)
}
