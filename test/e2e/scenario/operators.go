package scenario

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operator stands for a controller the plugin's catalogue does not know,
// writing as the real one does: under its own field manager (ACK's
// controller, velero-server: the apiserver names a manager after the
// client's user agent), adding its finalizer to an object a person created,
// and writing its status through the status subresource.
type Operator struct {
	Group, Kind, Plural string
	// Manager is the field manager its writes appear under.
	Manager   string
	Finalizer string
}

func (o Operator) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: o.Group, Version: "v1", Resource: o.Plural}
}

// StatusCRD creates the operator's CRD, with a status subresource.
func (e *Env) StatusCRD(ctx context.Context, o Operator) error {
	crd := crdObject(o.Group, o.Kind, o.Plural, []string{"v1"}, nil)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v.(map[string]any)["subresources"] = map[string]any{"status": map[string]any{}}
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		return err
	}
	return e.createCRD(ctx, crd)
}

// Adopt creates an object as a person's kubectl apply would, then, as the
// operator, adds its finalizer and writes the status.
func (e *Env) Adopt(ctx context.Context, o Operator, ns, name string, status map[string]any) error {
	ri := e.Dynamic.Resource(o.gvr()).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.Group + "/v1", "kind": o.Kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"size": int64(1)}}}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		return err
	}
	created.SetFinalizers([]string{o.Finalizer})
	updated, err := ri.Update(ctx, created, metav1.UpdateOptions{FieldManager: o.Manager})
	if err != nil {
		return err
	}
	return e.writeStatus(ctx, o, updated, status)
}

// OperatorWrites writes the object's status as the operator.
func (e *Env) OperatorWrites(ctx context.Context, o Operator, ns, name string, status map[string]any) error {
	u, err := e.Dynamic.Resource(o.gvr()).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return e.writeStatus(ctx, o, u, status)
}

func (e *Env) writeStatus(ctx context.Context, o Operator, u *unstructured.Unstructured, status map[string]any) error {
	u.Object["status"] = status
	_, err := e.Dynamic.Resource(o.gvr()).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: o.Manager})
	return err
}

// Delete deletes one of the operator's objects as a person would.
func (e *Env) Delete(ctx context.Context, o Operator, ns, name string) error {
	return e.Dynamic.Resource(o.gvr()).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// KeepWriting has the operator write progress to the object's status
// every period until ctx ends, as a controller at work does (a restore's
// counters moving); progress(n) is the status of its nth write.
func (e *Env) KeepWriting(ctx context.Context, o Operator, ns, name string, period time.Duration, progress func(n int) map[string]any) {
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
		_ = e.OperatorWrites(ctx, o, ns, name, progress(n))
	}
}
