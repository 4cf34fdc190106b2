package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Issue 23: an object held by an in-use protection finalizer while other
// objects name it. The owner is alive (a ready Deployment that looks like
// it) and waits for them: the report names those objects as the blockers,
// nested, and a blocker stuck itself is the root cause below.
func TestObjectInUseByOtherObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "inuse")
	other := namespace(t, "inuse-b")
	const (
		group   = "gateway.networking.k8s.io"
		inUse   = "gateway-exists-finalizer.gateway.networking.k8s.io"
		cleanup = "cleanup.e2e.example.com/gateway"
	)
	for _, crd := range []struct {
		kind, plural string
		namespaced   bool
	}{{"GatewayClass", "gatewayclasses", false}, {"Gateway", "gateways", true}} {
		if err := env.ScopedCRD(ctx, group, crd.kind, crd.plural, crd.namespaced); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Controller(ctx, ns, "envoy-gateway", liveNode); err != nil {
		t.Fatal(err)
	}
	classes := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gatewayclasses"})
	gateways := env.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gateways"})
	class := func(name string) {
		if err := env.SpecObject(ctx, group, "GatewayClass", "gatewayclasses", "", name, map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}, inUse); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { release(classes, name) })
	}
	gateway := func(ns, name, class string, finalizers ...string) {
		if err := env.SpecObject(ctx, group, "Gateway", "gateways", ns, name, map[string]any{"gatewayClassName": class}, finalizers...); err != nil {
			t.Fatal(err)
		}
	}
	// e2e-shared: two live Gateways in two namespaces use it.
	class("e2e-shared")
	gateway(ns, "web", "e2e-shared")
	gateway(other, "edge", "e2e-shared")
	gateway(ns, "unrelated", "e2e-internal")
	// e2e-draining: its one Gateway is being deleted, held by a finalizer
	// whose controller is nowhere: the chain's root.
	class("e2e-draining")
	gateway(ns, "stuck", "e2e-draining", cleanup)
	t.Cleanup(func() { release(gateways.Namespace(ns), "stuck") })
	if err := gateways.Namespace(ns).Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"e2e-shared", "e2e-draining"} {
		if err := classes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(31 * time.Second) // controllers act within seconds: past that, it is stuck

	r, res := diagnose(t, "why", "gatewayclasses."+group+"/e2e-shared")
	top := only(t, r).Causes[0]
	if res.code != 2 || top.Code != "ObjectInUse" || !strings.Contains(top.Summary, "2 gateways still use gatewayclass e2e-shared") {
		t.Fatalf("exit %d, %s %s: %s", res.code, top.Code, top.Severity, top.Summary)
	}
	var blockers []string
	for _, b := range top.BlockedBy {
		blockers = append(blockers, b.Object.Namespace+"/"+b.Object.Name)
	}
	if len(blockers) != 2 || !strings.Contains(strings.Join(blockers, " "), ns+"/web") || !strings.Contains(strings.Join(blockers, " "), other+"/edge") {
		t.Errorf("blockers %v: the two Gateways naming it, not the one naming another class", blockers)
	}
	if top.Remediation[0].Command != "kubectl get gateways."+group+" -A" {
		t.Errorf("first step %+v", top.Remediation[0])
	}

	r, res = diagnose(t, "why", "gatewayclasses."+group+"/e2e-draining")
	top = only(t, r).Causes[0]
	if res.code != 2 || top.Code != "ObjectInUse" || top.Severity != "critical" || len(top.BlockedBy) != 1 {
		t.Fatalf("exit %d, %s: %s, %d blockers", res.code, top.Code, top.Summary, len(top.BlockedBy))
	}
	nested := top.BlockedBy[0]
	if !nested.Stuck || nested.Causes[0].Code != "FinalizerPending" || !strings.Contains(top.Summary, "gateway."+group+"/stuck is stuck: no controller that could remove "+cleanup) {
		t.Errorf("the stuck Gateway is the root below: %s; nested %s %v", top.Summary, nested.Object.Name, nested.Causes)
	}
}

// release removes an object's finalizers, as its controller would have, so
// that nothing the test held outlives it (a cluster-scoped object held
// would show in every later list -A).
func release(r dynamic.ResourceInterface, name string) {
	_, _ = r.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

// The same mechanism with Kubernetes' own in-use protection and its real
// controller: kube-controller-manager's VolumeAttributesClass protection
// keeps kubernetes.io/vac-protection while a claim names the class.
func TestVolumeAttributesClassInUseByAClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "vac")
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-gold"}, DriverName: "csi.e2e.example.com", Parameters: map[string]string{"iops": "3000"}}
	classes := env.Client.StorageV1().VolumeAttributesClasses()
	if _, err := classes.Create(ctx, vac, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := vac.Name
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeAttributesClassName: &name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller adds its finalizer to the class first.
	if err := scenario.Until(ctx, time.Minute, "vac-protection on the class", func(ctx context.Context) (bool, error) {
		got, err := classes.Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(got.Finalizers) > 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := classes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), "data", metav1.DeleteOptions{}) // the controller then releases the class
	})
	time.Sleep(31 * time.Second)
	r, res := diagnose(t, "why", "volumeattributesclasses/"+name)
	top := only(t, r).Causes[0]
	if res.code != 2 || top.Code != "ObjectInUse" || !strings.Contains(top.Summary, "1 persistentvolumeclaim still uses volumeattributesclass "+name+": data") ||
		len(top.BlockedBy) != 1 || top.BlockedBy[0].Object.Namespace != ns {
		t.Errorf("exit %d, %s %s: %s (%d blockers)", res.code, top.Code, top.Severity, top.Summary, len(top.BlockedBy))
	}
	if top.Remediation[0].Command != "kubectl get persistentvolumeclaims data -n "+ns {
		t.Errorf("first step %+v", top.Remediation[0])
	}
}
