package diagnose

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

const gatewaysExist = "gateway-exists-finalizer.gateway.networking.k8s.io"

func gatewayObject(kind, namespace, name string, deleted time.Duration, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("gateway.networking.k8s.io/v1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	if deleted > 0 {
		u.SetDeletionTimestamp(ago(deleted))
		u.SetDeletionGracePeriodSeconds(int64p(0))
	}
	u.SetFinalizers(finalizers)
	return u
}

func asTarget(u *unstructured.Unstructured, resource string) *observed.Target {
	return &observed.Target{Object: u, Ref: report.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Resource: resource, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}}
}

// A GatewayClass held by its in-use protection while Gateways name it: the
// Gateways are the root cause, nested and diagnosed in turn; all of them
// being deleted and none stuck is progressing; none left, or an owner that
// is gone, leaves it to FinalizerPending.
func TestObjectInUse(t *testing.T) {
	gateway := func(ns, name string, deleted time.Duration, finalizers ...string) *observed.Target {
		return asTarget(gatewayObject("Gateway", ns, name, deleted, finalizers...), "gateways.gateway.networking.k8s.io")
	}
	live := &observed.Controllers{Workloads: []observed.Workload{{Kind: "deployment", Namespace: "envoy-gateway-system", Name: "envoy-gateway", Desired: 1, Ready: 1}}}
	for _, tc := range []struct {
		name      string
		referrers []*observed.Target
		owner     *observed.Controllers
		code      string
		severity  report.Severity
		summary   string
		first     string
	}{
		{"live gateways in two namespaces", []*observed.Target{gateway("shop", "web", 0), gateway("blog", "edge", 0)}, live,
			"ObjectInUse", report.Warning, "2 gateways still use gatewayclass shared: web, edge", "kubectl get gateways.gateway.networking.k8s.io -A"},
		{"one namespace: the objects are named", []*observed.Target{gateway("shop", "web", 0), gateway("shop", "api", 0)}, live,
			"ObjectInUse", report.Warning, "still use gatewayclass shared", "kubectl get gateways.gateway.networking.k8s.io web api -n shop"},
		{"a gateway stuck itself", []*observed.Target{gateway("shop", "web", 20*time.Minute, "example.com/cleanup")}, live,
			"ObjectInUse", report.Warning, "gateway.gateway.networking.k8s.io/web is stuck: deletion waits for 1 finalizer to be removed: example.com/cleanup", ""},
		{"every gateway being deleted, none stuck", []*observed.Target{gateway("shop", "web", 5*time.Second, "example.com/cleanup")}, live,
			"ObjectInUse", report.Info, "progressing: the 1 gateway that uses gatewayclass shared is being deleted and is not stuck", ""},
		{"nothing names it", []*observed.Target{}, live, "FinalizerPending", report.Warning, "looks healthy but has not removed it", ""},
		{"its controller is gone", []*observed.Target{gateway("shop", "web", 0)}, &observed.Controllers{}, "FinalizerPending", report.Critical, "no controller that could remove " + gatewaysExist + " is found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := asTarget(gatewayObject("GatewayClass", "", "shared", 10*time.Minute, gatewaysExist), "gatewayclasses.gateway.networking.k8s.io")
			class.Referrers = tc.referrers
			s := observed.New(now)
			s.Targets = []*observed.Target{class}
			s.Controllers = tc.owner
			it := Diagnose(s).Items[0]
			top := it.Causes[0]
			if top.Code != tc.code || top.Severity != tc.severity || !strings.Contains(top.Summary, tc.summary) {
				t.Fatalf("%v: %s %s: %s", codes(it), top.Code, top.Severity, top.Summary)
			}
			if tc.code != "ObjectInUse" {
				return
			}
			if len(top.BlockedBy) != len(tc.referrers) || top.About.Count != len(tc.referrers) || top.About.Object.Name != tc.referrers[0].Ref.Name {
				t.Errorf("every referrer is a blocker: %d items, about %+v", len(top.BlockedBy), top.About)
			}
			if !strings.Contains(strings.Join(top.Evidence, "\n"), "names GatewayClass/shared (spec.gatewayClassName)") {
				t.Errorf("evidence %q", top.Evidence)
			}
			if tc.first != "" && top.Remediation[0].Command != tc.first {
				t.Errorf("first step %q", top.Remediation[0].Command)
			}
			expectGradedSteps(t, it)
		})
	}
}

// One finalizer on several kinds: each kind is named by its own referrers
// (Kueue's resource-in-use: ClusterQueues name a ResourceFlavor,
// ResourceFlavors a Topology), and a kind no reference is about has none.
func TestReferencesAreAboutTheHeldKind(t *testing.T) {
	held := func(kind string) *observed.Target {
		u := gatewayObject(kind, "", "x", time.Minute, "kueue.x-k8s.io/resource-in-use")
		u.SetAPIVersion("kueue.x-k8s.io/v1beta1")
		return asTarget(u, strings.ToLower(kind)+"s.kueue.x-k8s.io")
	}
	for kind, want := range map[string]string{"ResourceFlavor": "clusterqueues spec.resourceGroups[].flavors[].name", "Topology": "resourceflavors spec.topologyName", "ClusterQueue": ""} {
		var got []string
		for _, r := range ReferencesOf(held(kind)) {
			got = append(got, r.Resource+" "+r.Path)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: %v, want %q", kind, got, want)
		}
	}
}
