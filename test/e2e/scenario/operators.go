package scenario

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
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
	// Cluster makes its kind cluster-scoped (TopoLVM's LogicalVolume).
	Cluster bool
}

func (o Operator) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: o.Group, Version: "v1", Resource: o.Plural}
}

// StatusCRD creates the operator's CRD, with a status subresource.
func (e *Env) StatusCRD(ctx context.Context, o Operator) error {
	crd := crdObject(o.Group, o.Kind, o.Plural, []string{"v1"}, nil)
	if o.Cluster {
		if err := unstructured.SetNestedField(crd.Object, "Cluster", "spec", "scope"); err != nil {
			return err
		}
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v.(map[string]any)["subresources"] = map[string]any{"status": map[string]any{}}
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		return err
	}
	return e.createCRD(ctx, crd)
}

// Adopt creates an object with spec as a person's kubectl apply would,
// then, as the operator, adds its finalizer (if it has one) and writes the
// status.
func (e *Env) Adopt(ctx context.Context, o Operator, ns, name string, spec, status map[string]any) error {
	ri := e.Dynamic.Resource(o.gvr()).Namespace(ns)
	if spec == nil {
		spec = map[string]any{"size": int64(1)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.Group + "/v1", "kind": o.Kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		return err
	}
	if o.Finalizer != "" {
		created.SetFinalizers([]string{o.Finalizer})
		if created, err = ri.Update(ctx, created, metav1.UpdateOptions{FieldManager: o.Manager}); err != nil {
			return err
		}
	}
	return e.writeStatus(ctx, o, created, status)
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

// OwnedPod runs a pod the operator's object owns (as KubeVirt's launcher
// pod is its VirtualMachineInstance's) on node: on a live node the fake
// kubelet runs it and takes grace seconds to stop it; on a dying node it
// is marked running by hand.
func (e *Env) OwnedPod(ctx context.Context, o Operator, ns, owner, name, node string, grace int64, dying bool) error {
	u, err := e.Dynamic.Resource(o.gvr()).Namespace(ns).Get(ctx, owner, metav1.GetOptions{})
	if err != nil {
		return err
	}
	yes := true
	pod := PodSpec(ns, name, node)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: o.Group + "/v1", Kind: o.Kind, Name: owner, UID: u.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}
	if dying {
		return e.RunOnDyingNode(ctx, pod)
	}
	pod.Annotations = map[string]string{lab.KillDelayAnnotation: fmt.Sprintf("%ds", grace)}
	return e.RunningPod(ctx, pod)
}
