package diagnose

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A controller told to leave an object alone does not finish its deletion
// either: Cluster API skips an object annotated cluster.x-k8s.io/paused,
// Crossplane one annotated crossplane.io/paused, whatever there is to do,
// the removal of their finalizer included. The marker is read by its shape,
// not by operator: an annotation named paused under any prefix, unless
// "false" (Cluster API pauses on any value), or spec.paused true.

// pause is the marker that pauses an object's controller.
type pause struct {
	field, value string
	annotation   string // the annotation's key, when the marker is one
}

// pausedBy finds the marker that pauses u's controller, if any.
func pausedBy(u *unstructured.Unstructured) (pause, bool) {
	// Read in place, not copied (GetAnnotations), and sorted only when
	// there are any: asked of each of thousands of held objects.
	field, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "annotations")
	if annotations, _ := field.(map[string]any); len(annotations) > 0 {
		for _, k := range slices.Sorted(maps.Keys(annotations)) {
			v, isString := annotations[k].(string)
			if (isString || annotations[k] == nil) && k[strings.LastIndex(k, "/")+1:] == "paused" && !strings.EqualFold(v, "false") { // null reads as "", as GetAnnotations has it
				return pause{field: "metadata.annotations[" + k + "]", value: v, annotation: k}, true
			}
		}
	}
	if paused, found, _ := unstructured.NestedBool(u.Object, "spec", "paused"); found && paused {
		return pause{field: "spec.paused", value: "true"}, true
	}
	return pause{}, false
}

// fact quotes the marker.
func (p pause) fact() report.Fact { return report.FieldFact(p.field, p.value) }

// unpause is the step that lets t's controller act again: the annotation
// removed, or spec.paused set false; args fill the step's text beside the field.
func (p pause) unpause(id string, t *observed.Target, args ...string) report.Step {
	resource := strings.ToLower(t.Ref.Resource)
	command := kubectlOn(t.Ref.Namespace, "patch", resource, t.Ref.Name, "--type=merge", "-p", `{"spec":{"paused":false}}`)
	if p.annotation != "" {
		command = kubectlOn(t.Ref.Namespace, "annotate", resource, t.Ref.Name, p.annotation+"-")
	}
	return step(catalog.FinalizerPending, id, command, append([]string{"field", p.field}, args...)...)
}
