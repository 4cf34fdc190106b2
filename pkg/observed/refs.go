package observed

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectRef names the diagnosed object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Resource is the plural resource name (pods, namespaces, widgets.example.com).
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// SkipReason says why a read was not made.
type SkipReason string

const (
	SkipForbidden SkipReason = "Forbidden"
	SkipTimeout   SkipReason = "Timeout"
	SkipDiscovery SkipReason = "DiscoveryFailed"
	SkipError     SkipReason = "Error"
	// SkipUnreachable: the apiserver could not reach the node's kubelet to
	// proxy the read (--kubelet).
	SkipUnreachable SkipReason = "Unreachable"
	// SkipDepth: not followed, the chain of targets is deeper than MaxDepth.
	SkipDepth SkipReason = "DepthLimit"
)

// Skip records a read that was not made; the report carries on without it.
type Skip struct {
	// Check names what could not be read (for example "nodes/node-1", "events").
	Check  string     `json:"check"`
	Reason SkipReason `json:"reason"`
	Detail string     `json:"detail,omitempty"`
	// Resource is the type a failed list was of, for the rules (not printed).
	Resource schema.GroupVersionResource `json:"-" snapfile:"resource"`
	// APIMessage is the apiserver's own message when it answered with an
	// error status (a conversion webhook's failure, say): Kubernetes' text,
	// which only its isolated parsers read (not printed).
	APIMessage string `json:"-" snapfile:"apiMessage"`
}

// StatusWordField says whether a top-level status field of any kind may
// carry its controller's words of failure: named for an error or a failure
// (error, lastError, failureReason, validationErrors; not a failureDomain),
// or describing the object's state (message, reason, phase, state). The
// rules quote what these hold; a snapshot file keeps them.
func StatusWordField(key string) (named, describes bool) {
	k := strings.ToLower(key)
	named = (strings.Contains(k, "error") || strings.Contains(k, "failure")) && !strings.Contains(k, "domain")
	describes = strings.Contains(k, "message") || k == "reason" || k == "phase" || k == "state"
	return named, describes
}
