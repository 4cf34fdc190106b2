package diagnose

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// The namespace controller has already listed every type of a namespace it
// deletes: its conditions say what is left (NamespaceContentRemaining:
// "widgets.example.com has 3 resource instances"). Nothing can be created in
// a Terminating namespace, so what is left only shrinks: when the conditions
// are current and say discovery and deletion went through, listing the
// types they name (and pods, which the kubelet holds) finds what a scan of
// every type would, once no pod is left: while pods remain, the controller
// (ordered namespace deletion) neither deletes nor counts the other types,
// and says "All content successfully removed" meanwhile (seen on the lab).
// The collector verifies it (no pod, no type holding more than its count)
// and scans every type otherwise.

// PodsFirst is why the conditions cannot stand in while pods are left: the
// controller deletes them first (ordered namespace deletion) and neither
// deletes nor counts the other types until they are gone.
const PodsFirst = "pods remain, and the namespace controller lists the other types only once they are gone"

// ContentIndex is the types a terminating namespace's conditions say are
// left, with their counts, when the conditions can stand in for a scan of
// every type; otherwise why not.
func ContentIndex(ns *corev1.Namespace) (left map[schema.GroupResource]int, why string) {
	deleted := ns.GetDeletionTimestamp()
	if deleted == nil {
		return nil, "the namespace is not being deleted"
	}
	for _, t := range []corev1.NamespaceConditionType{corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionGVParsingFailure,
		corev1.NamespaceDeletionContentFailure, corev1.NamespaceContentRemaining} {
		c := namespaceCondition(ns, t)
		switch {
		case c == nil:
			return nil, "the namespace controller has not written its " + string(t) + " condition"
		case c.LastTransitionTime.Time.Before(deleted.Add(-time.Second)): // both to the second
			return nil, "its " + string(t) + " condition is older than the deletion"
		case t != corev1.NamespaceContentRemaining && c.Status != corev1.ConditionFalse:
			return nil, "its " + string(t) + " condition is " + string(c.Status) + ": the controller's own listing was incomplete"
		}
	}
	left = map[schema.GroupResource]int{}
	if c := namespaceCondition(ns, corev1.NamespaceContentRemaining); c.Status == corev1.ConditionTrue {
		named := parseContentRemaining(c.Message)
		if len(named) == 0 {
			return nil, "its NamespaceContentRemaining message names no type"
		}
		for _, r := range named {
			gr := schema.ParseGroupResource(r.name)
			if gr == observed.Pods {
				// Deleted first (ordered namespace deletion): the rest
				// waits, unlisted by the controller until the pods are gone.
				return nil, PodsFirst
			}
			left[gr] = r.count
		}
	}
	return left, ""
}
