package snapfile

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// lastApplied is kubectl apply's copy of the whole object: never read by a
// rule, often the largest annotation, and it may hold a Secret's data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// stripped is a copy of o without what no rule reads: its managed fields
// and the last-applied annotation.
func stripped[T interface {
	comparable
	metav1.Object
	runtime.Object
}](o T) T {
	var none T
	if o == none {
		return o
	}
	c := o.DeepCopyObject().(T)
	c.SetManagedFields(nil)
	if a := c.GetAnnotations(); a[lastApplied] != "" {
		delete(a, lastApplied)
		c.SetAnnotations(a)
	}
	return c
}

// stripNode also drops the node's image list (hundreds of entries on a real node).
func stripNode(n *corev1.Node) *corev1.Node {
	n = stripped(n)
	if n != nil {
		n.Status.Images = nil
	}
	return n
}

func strippedEvents(events []corev1.Event) []corev1.Event {
	if events == nil {
		return nil
	}
	out := make([]corev1.Event, len(events))
	for i := range events {
		out[i] = *stripped(&events[i])
	}
	return out
}

// payloads are the fields of core objects that carry their users' data.
var payloads = map[string][]string{
	"Secret":    {"data", "stringData"},
	"ConfigMap": {"data", "binaryData"},
}

// objectJSON is a target's object without managed fields, the last-applied
// annotation or, for a Secret or ConfigMap, its data.
func objectJSON(t *snapshot.Target) (json.RawMessage, error) {
	if t.Object == nil {
		return nil, nil
	}
	u := stripped(t.Object)
	if u.GetAPIVersion() == "v1" {
		for _, field := range payloads[u.GetKind()] {
			unstructured.RemoveNestedField(u.Object, field)
		}
	}
	return u.MarshalJSON()
}

func decodeObject(data json.RawMessage) (*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}
