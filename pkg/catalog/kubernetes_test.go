package catalog

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kubernetes' own finalizers, from the constants of the API modules that
// export them (the others live in k8s.io/kubernetes and the CSI sidecars,
// which a program cannot import: their rows name the file and constant
// they were read from): each is catalogued as Kubernetes', so never
// reported as a third-party finalizer whose controller may be gone.
func TestKubernetesOwnFinalizersAreCatalogued(t *testing.T) {
	for _, f := range []string{
		string(corev1.FinalizerKubernetes),
		metav1.FinalizerOrphanDependents,
		metav1.FinalizerDeleteDependents,
		batchv1.JobTrackingFinalizer,
		resourcev1.Finalizer,
	} {
		row, known := LookupFinalizer(f)
		if !known || ThirdPartyFinalizer(f) {
			t.Errorf("%s: known %t, third-party %t (row %+v)", f, known, ThirdPartyFinalizer(f), row)
		}
	}
}
