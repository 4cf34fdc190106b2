package diagnose

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// request is an API request admission would see: which operation on which
// object. Rules match it as the apiserver does (webhook rules, namespace and
// object selectors; CEL matchConditions cannot be evaluated here).
type request struct {
	operation  admissionregistrationv1.OperationType
	group      string
	version    string
	resource   string
	namespaced bool
	objLabels  map[string]string
	nsLabels   map[string]string // nil when the namespace could not be read
}

// hook is a validating or mutating webhook, normalised.
type hook struct {
	kind, config, name string
	index              int // in the configuration's webhooks list, for a JSON patch
	rules              []admissionregistrationv1.RuleWithOperations
	namespaceSelector  *metav1.LabelSelector
	objectSelector     *metav1.LabelSelector
	failurePolicy      admissionregistrationv1.FailurePolicyType
	service            *admissionregistrationv1.ServiceReference
	url                string
	matchConditions    int
}

func hooksOf(a snapshot.Admission) []hook {
	var out []hook
	for _, c := range a.Validating {
		for i, w := range c.Webhooks {
			out = append(out, hook{"validatingwebhookconfiguration", c.Name, w.Name, i, w.Rules, w.NamespaceSelector, w.ObjectSelector,
				failurePolicy(w.FailurePolicy), w.ClientConfig.Service, deref(w.ClientConfig.URL), len(w.MatchConditions)})
		}
	}
	for _, c := range a.Mutating {
		for i, w := range c.Webhooks {
			out = append(out, hook{"mutatingwebhookconfiguration", c.Name, w.Name, i, w.Rules, w.NamespaceSelector, w.ObjectSelector,
				failurePolicy(w.FailurePolicy), w.ClientConfig.Service, deref(w.ClientConfig.URL), len(w.MatchConditions)})
		}
	}
	return out
}

// failurePolicy defaults to Fail, as admissionregistration/v1 does.
func failurePolicy(p *admissionregistrationv1.FailurePolicyType) admissionregistrationv1.FailurePolicyType {
	if p == nil {
		return admissionregistrationv1.Fail
	}
	return *p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (h hook) matches(r request) bool {
	return rulesMatch(h.rules, r) && selectorMatches(h.namespaceSelector, r.nsLabels, r.namespaced) && selectorMatches(h.objectSelector, known(r.objLabels), true)
}

func rulesMatch(rules []admissionregistrationv1.RuleWithOperations, r request) bool {
	return slices.ContainsFunc(rules, func(rule admissionregistrationv1.RuleWithOperations) bool {
		return (slices.Contains(rule.Operations, r.operation) || slices.Contains(rule.Operations, admissionregistrationv1.OperationAll)) &&
			matchesAny(rule.APIGroups, r.group) && matchesAny(rule.APIVersions, r.version) &&
			(matchesAny(rule.Resources, r.resource) || slices.Contains(rule.Resources, "*/*")) &&
			scopeMatches(rule.Scope, r.namespaced)
	})
}

func matchesAny(values []string, v string) bool {
	return slices.Contains(values, v) || slices.Contains(values, "*")
}

func scopeMatches(scope *admissionregistrationv1.ScopeType, namespaced bool) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	return (*scope == admissionregistrationv1.NamespacedScope) == namespaced
}

// selectorMatches: a nil selector selects everything; unknown labels (the
// namespace was not read) count as a match, the cautious answer.
func selectorMatches(sel *metav1.LabelSelector, set map[string]string, applies bool) bool {
	if sel == nil || !applies || set == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err != nil || s.Matches(labels.Set(set))
}

// known turns an object's absent labels into an empty set: unlike a
// namespace that was not read, an object without labels is known to have none.
func known(set map[string]string) map[string]string {
	if set == nil {
		return map[string]string{}
	}
	return set
}

// refusal is a webhook or policy that refuses, or may refuse, a request.
type refusal struct {
	code       catalog.Code
	severity   report.Severity
	confidence float64
	summary    string
	evidence   []string
	steps      []report.Step
}

// refusals finds what in the admission chain refuses or may refuse r.
func refusals(a snapshot.Admission, r request, what string) []refusal {
	var out []refusal
	for _, h := range hooksOf(a) {
		if !h.matches(r) {
			continue
		}
		if f, ok := webhookRefusal(a, h, what); ok {
			out = append(out, f)
		}
	}
	return append(out, policyRefusals(a, r, what)...)
}

func webhookRefusal(a snapshot.Admission, h hook, what string) (refusal, bool) {
	id := fmt.Sprintf("%s %s webhook %s", h.kind, h.config, h.name)
	evidence := []string{fmt.Sprintf("%s: matches %s, failurePolicy %s", id, what, h.failurePolicy)}
	if h.matchConditions > 0 {
		evidence = append(evidence, fmt.Sprintf("%s: has %d matchConditions (CEL, not evaluated here): it may not apply", id, h.matchConditions))
	}
	target, ready, known := "url "+h.url, 0, false
	if h.service != nil {
		target = fmt.Sprintf("service %s/%s", h.service.Namespace, h.service.Name)
		ready, known = a.ServiceEndpoints[h.service.Namespace+"/"+h.service.Name]
		if known {
			evidence = append(evidence, fmt.Sprintf("%s: %d ready endpoints (EndpointSlices labelled kubernetes.io/service-name=%s)", target, ready, h.service.Name))
		}
	}
	down := known && ready == 0
	if down && h.failurePolicy == admissionregistrationv1.Ignore {
		return refusal{}, false // its failure is ignored
	}
	f := refusal{code: catalog.AdmissionWebhookDenied, severity: report.Warning, confidence: 0.35,
		summary:  fmt.Sprintf("%s intercepts %s and may refuse it", id, what),
		evidence: evidence}
	if down {
		f.severity, f.confidence = report.Critical, 0.9
		f.summary = fmt.Sprintf("%s refuses %s: its %s has no ready endpoints and its failurePolicy is Fail", id, what, target)
	}
	if h.matchConditions > 0 {
		f.confidence /= 2
	}
	patch := fmt.Sprintf(`kubectl patch %s %s --type=json -p '[{"op":"replace","path":"/webhooks/%d/failurePolicy","value":"Ignore"}]'`, h.kind, h.config, h.index)
	f.steps = []report.Step{
		step("Check the webhook's backend", serviceCheckCommand(h), "none: read-only"),
		step("Restore the webhook's backend (its Deployment, its Service's selector); the refused request is retried and goes through", "", "none"),
		step("Or narrow the webhook (rules, objectSelector) so it no longer intercepts this request, or set its failurePolicy to Ignore while the backend is down", patch,
			"the webhook's checks are skipped for every matching request while it is Ignore"),
		step("Last resort: delete the webhook configuration of an add-on that was uninstalled", fmt.Sprintf("kubectl delete %s %s", h.kind, h.config),
			"removes that admission control for the whole cluster"),
	}
	return f, true
}

func serviceCheckCommand(h hook) string {
	if h.service == nil {
		return fmt.Sprintf("kubectl get %s %s -o yaml", h.kind, h.config)
	}
	return fmt.Sprintf("kubectl get endpointslices -n %s -l kubernetes.io/service-name=%s", h.service.Namespace, h.service.Name)
}

// policyRefusals finds ValidatingAdmissionPolicies bound with Deny that match r.
// Their CEL validations cannot be evaluated here: they may refuse.
func policyRefusals(a snapshot.Admission, r request, what string) []refusal {
	var out []refusal
	for _, p := range a.Policies {
		mc := p.Spec.MatchConstraints
		if mc == nil || !namedRulesMatch(mc.ResourceRules, r) || !selectorMatches(mc.NamespaceSelector, r.nsLabels, r.namespaced) || !selectorMatches(mc.ObjectSelector, known(r.objLabels), true) {
			continue
		}
		for _, b := range a.PolicyBindings {
			if b.Spec.PolicyName != p.Name || !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
				continue
			}
			if mr := b.Spec.MatchResources; mr != nil && ((len(mr.ResourceRules) > 0 && !namedRulesMatch(mr.ResourceRules, r)) ||
				!selectorMatches(mr.NamespaceSelector, r.nsLabels, r.namespaced) || !selectorMatches(mr.ObjectSelector, known(r.objLabels), true)) {
				continue
			}
			var exprs []string
			for _, v := range p.Spec.Validations {
				exprs = append(exprs, v.Expression)
			}
			out = append(out, refusal{code: catalog.AdmissionPolicyDenied, severity: report.Warning, confidence: 0.5,
				summary: fmt.Sprintf("ValidatingAdmissionPolicy %s (binding %s, Deny) matches %s and may refuse it", p.Name, b.Name, what),
				evidence: []string{
					fmt.Sprintf("validatingadmissionpolicy %s: matchConstraints match %s; validations: %s", p.Name, what, strings.Join(exprs, " && ")),
					fmt.Sprintf("validatingadmissionpolicybinding %s: validationActions %v", b.Name, b.Spec.ValidationActions),
				},
				steps: []report.Step{
					step("Read the policy's expressions and the binding's parameters", fmt.Sprintf("kubectl get validatingadmissionpolicy %s -o yaml", p.Name), "none: read-only"),
					step("Fix the expression or narrow the binding so the request is allowed", fmt.Sprintf("kubectl edit validatingadmissionpolicybinding %s", b.Name),
						"the policy stops guarding what the change excludes"),
				}})
		}
	}
	return out
}

func namedRulesMatch(rules []admissionregistrationv1.NamedRuleWithOperations, r request) bool {
	plain := make([]admissionregistrationv1.RuleWithOperations, 0, len(rules))
	for _, nr := range rules {
		plain = append(plain, nr.RuleWithOperations)
	}
	return rulesMatch(plain, r)
}
