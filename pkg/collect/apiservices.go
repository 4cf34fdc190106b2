package collect

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "apiservices", after: nesting, read: (*Collector).readAPIServices,
		early: func(c *Collector, ctx context.Context) { _, _ = c.apiServiceList(ctx) }, earlyOn: diagnose.APIServiceEvidence,
		permissions: []Permission{
			{Read: "`list` apiservices", UsedFor: "the APIService behind a namespace's discovery failure", Without: "`NamespaceDiscoveryFailure` without `APIServiceUnavailable`"},
		}})
}

// apiServices is read through the dynamic client: its typed client lives in
// k8s.io/kube-aggregator, a dependency the plugin does not need otherwise.
var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// readAPIServices reads the aggregated APIServices when a rule needs them,
// with the ready endpoints of unavailable ones.
func (c *Collector) readAPIServices(ctx context.Context, s *observed.Snapshot) {
	if !c.apiServicesNeeded(s) {
		return
	}
	items, err := c.apiServiceList(ctx)
	if err != nil {
		c.Skip(skipOf("list apiservices", err))
		return
	}
	for _, item := range items {
		a := apiServiceOf(&item)
		if a.Service == "" {
			continue // served by the apiserver itself
		}
		if a.Available != string(metav1.ConditionTrue) {
			ns, name, _ := strings.Cut(a.Service, "/")
			if ready, err := c.readyEndpoints(ctx, ns, name); err == nil {
				a.ReadyEndpoints = &ready
			} else {
				c.Skip(skipOf("endpointslices of service "+a.Service, err))
			}
		}
		s.APIServices = append(s.APIServices, a)
	}
}

// apiServiceList lists the APIServices, once a run.
func (c *Collector) apiServiceList(ctx context.Context) ([]unstructured.Unstructured, error) {
	return apiServiceTypeList.read(c, ctx)
}

func apiServiceOf(u *unstructured.Unstructured) observed.APIService {
	str := func(fields ...string) string { v, _, _ := unstructured.NestedString(u.Object, fields...); return v }
	a := observed.APIService{Name: u.GetName(), Group: str("spec", "group"), Version: str("spec", "version"),
		UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}
	if ns, name := str("spec", "service", "namespace"), str("spec", "service", "name"); name != "" {
		a.Service = ns + "/" + name
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if ok && cond["type"] == "Available" {
			a.Available, _ = cond["status"].(string)
			a.Reason, _ = cond["reason"].(string)
			a.Message, _ = cond["message"].(string)
		}
	}
	return a
}

// apiServicesNeeded: a rule needs the APIServices (a terminating namespace;
// the garbage collector's finalizers). An unavailable APIService blocks them
// even before their controller says so, and aggregated discovery hides the
// group from clients without an error.
func (c *Collector) apiServicesNeeded(s *observed.Snapshot) bool {
	return len(c.needing(s, diagnose.APIServiceEvidence)) > 0
}
