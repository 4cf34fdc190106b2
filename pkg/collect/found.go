// Package collect reads, once, the evidence a diagnosis needs into a
// snapshot: the objects to diagnose and what their rules look at. Reads that
// fail are recorded as skipped checks; the run carries on without them.
package collect

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Found is an object located by a resolve or a scan.
type Found struct {
	GVR    schema.GroupVersionResource
	Object *unstructured.Unstructured
	// Whole says Object is the object as the apiserver serves it (a named
	// object Resolve read), not its metadata alone (a scan's): the
	// collector then reads it no second time.
	Whole bool
	// listed is what the scan worked out of an object being deleted while
	// its lists were in flight, so that the run does not after the scan:
	// its name in the report and what its rules need (needs.go). Not of the
	// namespaces, whose needs the early reads guess (needsOfFound).
	listed *listedObject
}

// listedObject is Found.listed.
type listedObject struct {
	ref   report.ObjectRef
	needs diagnose.Evidence
}

// Terminating reports whether the object has a deletionTimestamp.
func (f Found) Terminating() bool {
	if f.listed != nil {
		return true
	}
	_, deleted := observed.DeletionTime(f.Object)
	return deleted
}

// Ref names the object in the report.
func (f Found) Ref() report.ObjectRef {
	if f.listed != nil {
		return f.listed.ref
	}
	gvk := f.Object.GroupVersionKind()
	return report.ObjectRef{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Resource:   QualifiedResource(f.GVR),
		Namespace:  f.Object.GetNamespace(),
		Name:       f.Object.GetName(),
		UID:        string(f.Object.GetUID()),
	}
}

// QualifiedResource is the name kubectl accepts for a resource: "pods",
// "deployments.apps", "widgets.example.com".
func QualifiedResource(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}
