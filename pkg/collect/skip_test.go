package collect

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

type netTimeout struct{}

func (netTimeout) Error() string   { return "Client.Timeout exceeded while awaiting headers" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

func TestSkipReasons(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want report.SkipReason
	}{
		{apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n", errors.New("no")), report.SkipForbidden},
		{apierrors.NewUnauthorized("expired"), report.SkipForbidden},
		{apierrors.NewTimeoutError("slow", 1), report.SkipTimeout},
		{fmt.Errorf("list: %w", context.DeadlineExceeded), report.SkipTimeout},
		{&url.Error{Op: "Get", URL: "https://x/apis", Err: netTimeout{}}, report.SkipTimeout}, // --request-timeout expired
		{errors.New("conversion webhook for x/v1, Kind=X failed"), report.SkipError},
	} {
		if got := skipOf("list x", tc.err).Reason; got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}

// The apiserver's own message is kept apart from the error text the client
// builds around it, for the parsers of Kubernetes' text.
func TestSkipKeepsTheAPIServerMessage(t *testing.T) {
	msg := `conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://conv.default.svc:443/convert": service "conv" not found`
	sk := skipOf("list gadgets.conv.example.com", fmt.Errorf("listing: %w", apierrors.NewInternalError(errors.New(msg))))
	if !strings.Contains(sk.APIMessage, msg) || sk.APIMessage == sk.Detail {
		t.Errorf("APIMessage %q, Detail %q", sk.APIMessage, sk.Detail)
	}
	if sk := skipOf("list x", errors.New("dial tcp: connection refused")); sk.APIMessage != "" {
		t.Errorf("no apiserver answer, no message: %q", sk.APIMessage)
	}
}
