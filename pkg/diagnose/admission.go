package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/celeval"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// request is an API request admission would see: which operation on which
// object, sent by whom. Rules match it as the apiserver does (webhook rules,
// namespace and object selectors), and its CEL (matchConditions, policy
// validations) is evaluated against it when it carries the objects.
type request struct {
	operation  admissionregistrationv1.OperationType
	group      string
	version    string
	resource   string
	namespaced bool
	objLabels  map[string]string
	nsLabels   map[string]string // nil when the namespace could not be read
	// cel builds the request as admission's CEL sees it, once and only when
	// an expression is evaluated (copying objects for every target would
	// cost more than the rest of its diagnosis); nil: not evaluated.
	cel func() *celeval.Request
}

// lazy is a request's cel: build runs at most once, on first use.
func lazy(build func() *celeval.Request) func() *celeval.Request {
	return sync.OnceValue(build)
}

// hook is a validating or mutating webhook, normalised.
type hook struct {
	kind, config, name string
	// configUID and configVersion identify the configuration as read: fix
	// deletes that one or none.
	configUID, configVersion string
	index                    int // in the configuration's webhooks list, for a JSON patch
	rules                    []admissionregistrationv1.RuleWithOperations
	namespaceSelector        *metav1.LabelSelector
	objectSelector           *metav1.LabelSelector
	failurePolicy            admissionregistrationv1.FailurePolicyType
	service                  *admissionregistrationv1.ServiceReference
	url                      string
	matchConditions          []admissionregistrationv1.MatchCondition
	// reinvoked: a mutating webhook with reinvocationPolicy IfNeeded, called
	// again when a later webhook changed the object.
	reinvoked bool
}

func hooksOf(a observed.Admission) []hook {
	var out []hook
	for _, c := range a.Validating {
		for i, w := range c.Webhooks {
			out = append(out, hook{kind: "validatingwebhookconfiguration", config: c.Name, name: w.Name,
				configUID: string(c.UID), configVersion: c.ResourceVersion, index: i,
				rules: w.Rules, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
				failurePolicy: failurePolicy(w.FailurePolicy), service: w.ClientConfig.Service, url: deref(w.ClientConfig.URL),
				matchConditions: w.MatchConditions})
		}
	}
	for _, c := range a.Mutating {
		for i, w := range c.Webhooks {
			out = append(out, hook{kind: "mutatingwebhookconfiguration", config: c.Name, name: w.Name,
				configUID: string(c.UID), configVersion: c.ResourceVersion, index: i,
				rules: w.Rules, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
				failurePolicy: failurePolicy(w.FailurePolicy), service: w.ClientConfig.Service, url: deref(w.ClientConfig.URL),
				matchConditions: w.MatchConditions,
				reinvoked:       w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy})
		}
	}
	return out
}

// about names the webhook and its configuration.
func (h hook) about() report.About {
	kind := map[string]string{"validatingwebhookconfiguration": "ValidatingWebhookConfiguration", "mutatingwebhookconfiguration": "MutatingWebhookConfiguration"}[h.kind]
	return report.About{Webhook: h.name, Object: &report.ObjectRef{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind, Resource: h.kind + "s", Name: h.config, UID: h.configUID}}
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

// namespaceLabels are a namespace's labels for a namespaceSelector: nil
// when the namespace was not read (a selector cannot be judged), else its
// labels, none included (a snapshot keeps only the keys selectors use, and
// drops the field when none is left: the namespace still has no other).
func namespaceLabels(ns *corev1.Namespace) map[string]string {
	if ns == nil {
		return nil
	}
	return known(ns.Labels)
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
	evidence   []report.Fact
	steps      []report.Step
	about      report.About
}

// refusals finds what in the admission chain refuses or may refuse r.
func refusals(a observed.Admission, r request, what string) []refusal {
	var out []refusal
	for _, h := range hooksOf(a) {
		if !h.matches(r) {
			continue
		}
		conditions := matchConditions(h.matchConditions, r, nil)
		if conditions.result == celeval.False {
			continue // its matchConditions exclude the request (the sender, the object)
		}
		if f, ok := webhookRefusal(a, h, what, conditions); ok {
			out = append(out, f)
		}
	}
	return append(out, policyRefusals(a, r, what)...)
}

// conditionsOutcome is what a list of CEL matchConditions says of a request.
type conditionsOutcome struct {
	result   celeval.Result
	evidence []string
}

// matchConditions evaluates matchConditions as admission does: any false
// excludes the request, all true include it; otherwise it is unknown here.
func matchConditions(conds []admissionregistrationv1.MatchCondition, r request, variables map[string]any) conditionsOutcome {
	out := conditionsOutcome{result: celeval.True}
	for _, c := range conds {
		res, err := celeval.Unknown, fmt.Errorf("the request's objects were not read")
		if r.cel != nil {
			res, err = celeval.Eval(c.Expression, *r.cel(), variables)
		}
		switch res {
		case celeval.False:
			return conditionsOutcome{result: celeval.False}
		case celeval.Unknown:
			out.result = celeval.Unknown
			out.evidence = append(out.evidence, fmt.Sprintf("matchCondition %s (%s) cannot be evaluated here: %v", c.Name, c.Expression, err))
		default:
			out.evidence = append(out.evidence, fmt.Sprintf("matchCondition %s (%s) is true for this request", c.Name, c.Expression))
		}
	}
	return out
}

func webhookRefusal(a observed.Admission, h hook, what string, conditions conditionsOutcome) (refusal, bool) {
	id := fmt.Sprintf("%s %s webhook %s", h.kind, h.config, h.name)
	evidence := []report.Fact{report.Noted(fmt.Sprintf("%s: matches %s, failurePolicy %s", id, what, h.failurePolicy))}
	for _, e := range conditions.evidence {
		evidence = append(evidence, report.Noted(id+": "+e))
	}
	target, ready, known := "url "+h.url, 0, false
	if h.service != nil {
		target = fmt.Sprintf("service %s/%s", h.service.Namespace, h.service.Name)
		ready, known = a.ServiceEndpoints[types.NamespacedName{Namespace: h.service.Namespace, Name: h.service.Name}]
		if known {
			evidence = append(evidence, report.Noted(fmt.Sprintf("%s: %d ready endpoints (EndpointSlices labelled kubernetes.io/service-name=%s)", target, ready, h.service.Name)))
		}
	}
	down := known && ready == 0
	if down && h.failurePolicy == admissionregistrationv1.Ignore {
		return refusal{}, false // its failure is ignored
	}
	// Its backend answers: whether it refuses is up to the backend, which
	// the API cannot show; the more of its matching is known, the likelier.
	f := refusal{code: catalog.AdmissionWebhookDenied, severity: report.Warning, confidence: 0.4,
		summary:  fmt.Sprintf("%s intercepts %s and may refuse it: its backend answers, so only its logs say whether it does", id, what),
		evidence: evidence, about: h.about()}
	if down {
		f.severity, f.confidence = report.Critical, 0.9
		f.summary = fmt.Sprintf("%s refuses %s: its %s has no ready endpoints and its failurePolicy is Fail", id, what, target)
	}
	if conditions.result == celeval.Unknown {
		f.confidence /= 2
	}
	patch := kubectlOn("", "patch", h.kind, h.config, "--type=json", "-p",
		jsonText([]patchOp{{Op: "replace", Path: fmt.Sprintf("/webhooks/%d/failurePolicy", h.index), Value: "Ignore"}}))
	f.steps = []report.Step{
		step(catalog.AdmissionWebhookDenied, "check-backend", serviceCheckCommand(h)),
		step(catalog.AdmissionWebhookDenied, "restore-backend", ""),
		step(catalog.AdmissionWebhookDenied, "narrow-webhook", patch),
		step(catalog.AdmissionWebhookDenied, "delete-configuration", kubectlOn("", "delete", h.kind, h.config)),
	}
	if down { // orphaned: fix may delete it
		f.steps[3].Apply = &report.Action{Verb: report.ActionDelete, Object: *h.about().Object, ResourceVersion: h.configVersion}
	}
	return f, true
}

func serviceCheckCommand(h hook) string {
	if h.service == nil {
		return kubectlOn("", "get", h.kind, h.config, "-o", "yaml")
	}
	return endpointsCommand(h.service.Namespace, h.service.Name)
}

// policyRefusals finds ValidatingAdmissionPolicies bound with Deny that match
// r, and evaluates them: a validation that is false for the request refuses
// it; all true let it through; what cannot be evaluated here may refuse.
func policyRefusals(a observed.Admission, r request, what string) []refusal {
	var out []refusal
	for _, p := range a.Policies {
		mc := p.Spec.MatchConstraints
		if mc == nil || !namedRulesMatch(mc.ResourceRules, r) || namedRulesMatch(mc.ExcludeResourceRules, r) ||
			!selectorMatches(mc.NamespaceSelector, r.nsLabels, r.namespaced) || !selectorMatches(mc.ObjectSelector, known(r.objLabels), true) {
			continue
		}
		for _, b := range a.PolicyBindings {
			if b.Spec.PolicyName != p.Name || !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
				continue
			}
			if mr := b.Spec.MatchResources; mr != nil && ((len(mr.ResourceRules) > 0 && !namedRulesMatch(mr.ResourceRules, r)) || namedRulesMatch(mr.ExcludeResourceRules, r) ||
				!selectorMatches(mr.NamespaceSelector, r.nsLabels, r.namespaced) || !selectorMatches(mr.ObjectSelector, known(r.objLabels), true)) {
				continue
			}
			if f, ok := policyRefusal(p, b, r, what); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

func policyRefusal(p admissionregistrationv1.ValidatingAdmissionPolicy, b admissionregistrationv1.ValidatingAdmissionPolicyBinding, r request, what string) (refusal, bool) {
	variables := policyVariables(p, r)
	conditions := matchConditions(p.Spec.MatchConditions, r, variables)
	if conditions.result == celeval.False {
		return refusal{}, false
	}
	evidence := []report.Fact{report.Noted(fmt.Sprintf("validatingadmissionpolicy %s: matchConstraints match %s", p.Name, what))}
	evidence = append(evidence, notes(conditions.evidence)...)
	evidence = append(evidence, report.Noted(fmt.Sprintf("validatingadmissionpolicybinding %s: validationActions %v", b.Name, b.Spec.ValidationActions)))
	var failed, unknown []string
	for _, v := range p.Spec.Validations {
		res, err := celeval.Unknown, fmt.Errorf("the request's objects were not read")
		if r.cel != nil && p.Spec.ParamKind == nil {
			res, err = celeval.Eval(v.Expression, *r.cel(), variables)
		} else if p.Spec.ParamKind != nil {
			err = fmt.Errorf("the policy reads params (%s), which are not read", p.Spec.ParamKind.Kind)
		}
		switch res {
		case celeval.False:
			msg := v.Message
			if msg == "" {
				msg = "failed expression: " + v.Expression
			}
			failed = append(failed, msg)
			evidence = append(evidence, report.Noted(fmt.Sprintf("validation %s is false for this request: %s", v.Expression, msg)))
		case celeval.Unknown:
			unknown = append(unknown, v.Expression)
			evidence = append(evidence, report.Noted(fmt.Sprintf("validation %s cannot be evaluated here: %v", v.Expression, err)))
		default:
			evidence = append(evidence, report.Noted(fmt.Sprintf("validation %s is true for this request", v.Expression)))
		}
	}
	f := refusal{code: catalog.AdmissionPolicyDenied, evidence: evidence,
		about: report.About{Object: &report.ObjectRef{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy", Resource: "validatingadmissionpolicies", Name: p.Name}},
		steps: []report.Step{
			step(catalog.AdmissionPolicyDenied, "read-policy", kubectlOn("", "get", "validatingadmissionpolicy", p.Name, "-o", "yaml")),
			step(catalog.AdmissionPolicyDenied, "narrow-policy", kubectlOn("", "edit", "validatingadmissionpolicybinding", b.Name)),
		}}
	switch {
	case len(failed) > 0:
		f.severity, f.confidence = report.Critical, 0.9
		if conditions.result == celeval.Unknown {
			f.confidence = 0.6
		}
		f.summary = fmt.Sprintf("ValidatingAdmissionPolicy %s (binding %s, Deny) refuses %s: %s", p.Name, b.Name, what, strings.Join(failed, "; "))
	case len(unknown) > 0:
		f.severity, f.confidence = report.Warning, 0.4
		f.summary = fmt.Sprintf("ValidatingAdmissionPolicy %s (binding %s, Deny) matches %s and may refuse it (%s cannot be evaluated here)", p.Name, b.Name, what, report.Count(len(unknown), "validation"))
	default:
		return refusal{}, false // every validation holds: it lets the request through
	}
	return f, true
}

// policyVariables evaluates a policy's variables in order; one that cannot
// be evaluated is left out, so the expressions that read it are unknown.
func policyVariables(p admissionregistrationv1.ValidatingAdmissionPolicy, r request) map[string]any {
	vars := map[string]any{}
	if r.cel == nil {
		return vars
	}
	for _, v := range p.Spec.Variables {
		if val, err := celeval.Value(v.Expression, *r.cel(), vars); err == nil {
			vars[v.Name] = val
		}
	}
	return vars
}

func namedRulesMatch(rules []admissionregistrationv1.NamedRuleWithOperations, r request) bool {
	plain := make([]admissionregistrationv1.RuleWithOperations, 0, len(rules))
	for _, nr := range rules {
		plain = append(plain, nr.RuleWithOperations)
	}
	return rulesMatch(plain, r)
}

// objectMap is an object as admission's CEL sees it; nil for none.
func objectMap[T any](obj *T) map[string]any {
	if obj == nil {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return m
}
