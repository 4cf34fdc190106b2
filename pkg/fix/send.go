package fix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// outOfService is the taint of a node known to be shut down (KEP-2268).
const outOfService = "node.kubernetes.io/out-of-service"

// Sent is one request as it was sent, and what the server answered.
type Sent struct {
	Verb      string           `json:"verb"`
	Object    report.ObjectRef `json:"object"`
	Finalizer string           `json:"finalizer,omitempty"`
	// Request is the body or the options sent: the JSON patch, or the
	// DELETE's preconditions.
	Request string    `json:"request"`
	DryRun  bool      `json:"dryRun,omitempty"`
	At      time.Time `json:"at"`
	// Answer is the server's: "applied", "already done" or its error.
	Answer string `json:"answer"`
	OK     bool   `json:"ok"`
	// after is the object's resourceVersion the write left: a later step on
	// the same object is decided on that version, and on no other.
	after string
}

// Sender sends a plan's requests.
type Sender struct {
	Dynamic dynamic.Interface
	// DryRun sends each request as a server-side dry run: checked by the
	// apiserver and admission, persisted nowhere.
	DryRun bool
	Now    func() time.Time
}

// Send sends one step's request, on a fresh read of its object, only if
// that read is the object and the version the step was decided on (the
// action's uid and resourceVersion): a recreated object, or one changed
// since, is left alone and the answer says why. A removal also tests the
// uid, resourceVersion and the finalizer's index in its JSON patch, a taint
// the uid and resourceVersion, and a delete carries them as preconditions,
// so a change between the read and the write makes the server refuse it.
//
// refused, when not empty, says why nothing was sent: the Sent is then no
// request and belongs in no record of requests.
func (s Sender) Send(ctx context.Context, a report.Action) (out Sent, refused string) {
	out = Sent{Verb: a.Verb, Object: a.Object, Finalizer: a.Finalizer, DryRun: s.DryRun, At: s.Now()}
	if a.Object.UID == "" || a.ResourceVersion == "" {
		return out, "not sent: the plan does not name the object's uid and resourceVersion, so the object it was decided on cannot be told from another"
	}
	res, err := s.resourceOf(a.Object)
	if err != nil {
		return out, err.Error()
	}
	obj, err := res.Get(ctx, a.Object.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		out.Answer, out.OK = "already gone", true
		return out, ""
	case err != nil:
		return out, "not sent: the read before the request failed: " + err.Error()
	case string(obj.GetUID()) != a.Object.UID:
		return out, fmt.Sprintf("not sent: %s is another object now (uid %s, planned for %s)", name(a.Object), obj.GetUID(), a.Object.UID)
	}
	if done := alreadyDone(obj, a); done != "" {
		out.Answer, out.OK = done, true
		return out, ""
	}
	if rv := obj.GetResourceVersion(); rv != a.ResourceVersion {
		return out, fmt.Sprintf("not sent: %s changed since the step was decided (resourceVersion %s, decided on %s): plan again", name(a.Object), rv, a.ResourceVersion)
	}
	var dryRun []string
	if s.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	var written *unstructured.Unstructured
	switch a.Verb {
	case report.ActionRemoveFinalizer:
		path := fmt.Sprintf("/metadata/finalizers/%d", slices.Index(obj.GetFinalizers(), a.Finalizer))
		patch, _ := json.Marshal(append(tests(obj),
			map[string]any{"op": "test", "path": path, "value": a.Finalizer},
			map[string]any{"op": "remove", "path": path}))
		out.Request = string(patch)
		written, err = res.Patch(ctx, a.Object.Name, types.JSONPatchType, patch, metav1.PatchOptions{DryRun: dryRun})
	case report.ActionTaintOutOfService:
		taints, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taints")
		taints = append(taints, map[string]any{"key": outOfService, "value": "nodeshutdown", "effect": "NoExecute"})
		patch, _ := json.Marshal(append(tests(obj), map[string]any{"op": "add", "path": "/spec/taints", "value": taints}))
		out.Request = string(patch)
		written, err = res.Patch(ctx, a.Object.Name, types.JSONPatchType, patch, metav1.PatchOptions{DryRun: dryRun})
	case report.ActionDelete:
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		out.Request = fmt.Sprintf(`{"preconditions":{"uid":%q,"resourceVersion":%q}}`, uid, rv)
		err = res.Delete(ctx, a.Object.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, DryRun: dryRun})
	default:
		return out, fmt.Sprintf("not sent: unknown verb %q", a.Verb)
	}
	if err != nil {
		out.Answer = err.Error()
		return out, ""
	}
	out.Answer, out.OK = "applied", true
	if s.DryRun {
		out.Answer = "accepted as a dry run: nothing changed"
	} else if written != nil {
		out.after = written.GetResourceVersion()
	}
	return out, ""
}

// alreadyDone says why a step needs no request: what it would change is
// already so (the finalizer removed, the node tainted).
func alreadyDone(obj *unstructured.Unstructured, a report.Action) string {
	switch a.Verb {
	case report.ActionRemoveFinalizer:
		if !slices.Contains(obj.GetFinalizers(), a.Finalizer) {
			return "already done: the finalizer is not on the object"
		}
	case report.ActionTaintOutOfService:
		taints, _, _ := unstructured.NestedSlice(obj.Object, "spec", "taints")
		for _, t := range taints {
			if m, _ := t.(map[string]any); m["key"] == outOfService {
				return "already done: the node is tainted out of service"
			}
		}
	}
	return ""
}

// tests are the JSON patch operations that make a patch fail on any other
// version of the object than the one just read (its uid and
// resourceVersion; a server always sets both, a fake may not).
func tests(obj *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, f := range []struct{ path, value string }{{"/metadata/uid", string(obj.GetUID())}, {"/metadata/resourceVersion", obj.GetResourceVersion()}} {
		if f.value != "" {
			out = append(out, map[string]any{"op": "test", "path": f.path, "value": f.value})
		}
	}
	return out
}

// resourceOf is the client of the object's resource, at the version the
// report read it in.
func (s Sender) resourceOf(ref report.ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("not sent: apiVersion %q: %w", ref.APIVersion, err)
	}
	resource, _, _ := strings.Cut(ref.Resource, ".")
	r := s.Dynamic.Resource(gv.WithResource(resource))
	if ref.Namespace != "" {
		return r.Namespace(ref.Namespace), nil
	}
	return r, nil
}
