package collect

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sort"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

func init() {
	register(source{name: "admission", after: nesting, read: (*Collector).readAdmission,
		early: func(c *Collector, ctx context.Context) { c.admissionLists(ctx) }, earlyOn: diagnose.AdmissionEvidence,
		permissions: []Permission{
			{Read: "`list` validating/mutating webhook configurations, validating admission policies and bindings", UsedFor: "what refuses the kubelet's final DELETE (pods in state C), the namespace controller's DELETEs, the UPDATE that removes a finalizer", Without: "admission is not judged: no `AdmissionWebhookDenied`/`AdmissionPolicyDenied`, and `skipped` says so"},
			{Read: "`list` endpointslices in a webhook service's namespace", UsedFor: "whether the webhook can answer", Without: "the webhook is reported as one that may refuse"},
		}})
}

// readAdmission reads the webhooks and admission policies, the endpoints of
// the webhooks' services, and the targets' namespaces (for namespaceSelectors).
func (c *Collector) readAdmission(ctx context.Context, s *observed.Snapshot) {
	if len(c.needing(s, diagnose.AdmissionEvidence)) == 0 {
		return
	}
	l := c.admissionLists(ctx)
	vwErr, mwErr, pErr, bErr := l.errs[0], l.errs[1], l.errs[2], l.errs[3]
	if vwErr != nil {
		c.Skip(skipOf("list validatingwebhookconfigurations", vwErr))
		return
	}
	if mwErr != nil {
		c.Skip(skipOf("list mutatingwebhookconfigurations", mwErr))
		return
	}
	a := observed.NewAdmission()
	a.Validating, a.Mutating = l.validating, l.mutating
	switch {
	case apierrors.IsNotFound(pErr) || apierrors.IsNotFound(bErr):
		s.AddNotServed("validatingadmissionpolicies", "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is not served (GA in Kubernetes 1.30)")
	case pErr != nil:
		c.Skip(skipOf("list validatingadmissionpolicies", pErr))
	case bErr != nil:
		c.Skip(skipOf("list validatingadmissionpolicybindings", bErr))
	default:
		a.Policies, a.PolicyBindings = l.policies, l.bindings
	}
	// The namespaces' labels are read only for webhooks and policies to
	// match against; both reads write their own part, so they run at once.
	if len(a.Validating)+len(a.Mutating)+len(a.Policies) > 0 {
		concurrently(
			func() {
				for _, svc := range webhookServices(a) {
					c.readServiceEndpoints(ctx, a, svc[0], svc[1])
				}
			},
			func() { c.readTargetNamespaces(ctx, s) },
		)
	}
	s.Admission = a
}

// admissionRead is what admission's four lists read.
type admissionRead struct {
	validating []admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   []admissionregistrationv1.MutatingWebhookConfiguration
	policies   []admissionregistrationv1.ValidatingAdmissionPolicy
	bindings   []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	errs       [4]error
}

// admissionLists lists the webhook configurations, the policies and their
// bindings, at once (one round trip, not four), each once per run: the
// scan may have started them (early.go).
func (c *Collector) admissionLists(ctx context.Context) admissionRead {
	var r admissionRead
	concurrently(
		func() { r.validating, r.errs[0] = validatingWebhookList.read(c, ctx) },
		func() { r.mutating, r.errs[1] = mutatingWebhookList.read(c, ctx) },
		func() { r.policies, r.errs[2] = admissionPolicyList.read(c, ctx) },
		func() { r.bindings, r.errs[3] = admissionBindingList.read(c, ctx) },
	)
	return r
}

// webhookServices lists each webhook service once, as [namespace, name].
func webhookServices(a *observed.Admission) [][2]string {
	seen := map[[2]string]bool{}
	add := func(ns, name string) { seen[[2]string{ns, name}] = true }
	for _, c := range a.Validating {
		for _, w := range c.Webhooks {
			if s := w.ClientConfig.Service; s != nil {
				add(s.Namespace, s.Name)
			}
		}
	}
	for _, c := range a.Mutating {
		for _, w := range c.Webhooks {
			if s := w.ClientConfig.Service; s != nil {
				add(s.Namespace, s.Name)
			}
		}
	}
	out := make([][2]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+"/"+out[i][1] < out[j][0]+"/"+out[j][1] })
	return out
}

// readServiceEndpoints records a webhook service's ready endpoints.
func (c *Collector) readServiceEndpoints(ctx context.Context, a *observed.Admission, ns, name string) {
	ready, err := c.readyEndpoints(ctx, ns, name)
	if err != nil {
		c.Skip(skipOf("endpointslices of service "+ns+"/"+name, err))
		return
	}
	a.ServiceEndpoints[types.NamespacedName{Namespace: ns, Name: name}] = ready
}

// readyEndpoints counts a service's ready endpoints in its EndpointSlices.
func (c *Collector) readyEndpoints(ctx context.Context, ns, name string) (int, error) {
	slices, err := listAll[discoveryv1.EndpointSlice](ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name},
		pages(c.Clients.Typed.DiscoveryV1().EndpointSlices(ns).List))
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready++
			}
		}
	}
	return ready, nil
}

// readTargetNamespaces reads the namespaces of the targets, for their labels.
func (c *Collector) readTargetNamespaces(ctx context.Context, s *observed.Snapshot) {
	for _, t := range s.Targets {
		if t.Namespace != nil { // a terminating namespace is already read in full
			s.Namespaces[t.Namespace.Name] = t.Namespace
		}
	}
	byNS := map[string][]*observed.Target{}
	var names []string
	for _, t := range s.AllTargets() {
		if ns := t.Ref.Namespace; ns != "" && s.Namespaces[ns] == nil {
			if byNS[ns] == nil {
				names = append(names, ns)
			}
			byNS[ns] = append(byNS[ns], t)
		}
	}
	found, errs := c.namespaces(ctx, names)
	for _, ns := range names {
		if err := errs[ns]; err != nil {
			for _, t := range byNS[ns] {
				c.skipTarget(t, skipOf("namespaces/"+ns, err))
			}
			continue
		}
		s.Namespaces[ns] = found[ns]
	}
}
