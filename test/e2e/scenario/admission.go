package scenario

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GuardLabel selects the pods a scenario's webhook or policy guards, so that
// it never touches another test's pods.
const GuardLabel = "lab.kubectl-terminating.io/guarded-by"

func guardSelector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{GuardLabel: name}}
}

var deletePods = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}}

// DownWebhook registers a validating webhook on DELETE of the pods labelled
// GuardLabel=name, failurePolicy Fail, whose Service has no endpoints: the
// apiserver then refuses every such DELETE, as when a webhook's Deployment is gone.
func (e *Env) DownWebhook(ctx context.Context, name string) error {
	return e.DownWebhookFor(ctx, name, Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
		Resource: "pods", ObjectSelector: guardSelector(name)})
}

// Intercept is what a webhook intercepts: operations on a resource of the
// core group, narrowed by selectors so it never touches another test's objects.
type Intercept struct {
	Operations                        []admissionregistrationv1.OperationType
	Group, Resource                   string
	ObjectSelector, NamespaceSelector *metav1.LabelSelector
	MatchConditions                   []admissionregistrationv1.MatchCondition
}

// InNamespace selects a namespace by name, for a namespaceSelector.
func InNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
}

// DownWebhookFor registers a validating webhook, failurePolicy Fail, on what
// i says, whose Service has no endpoints: every matching request is refused.
func (e *Env) DownWebhookFor(ctx context.Context, name string, i Intercept) error {
	ns := "webhook-" + name
	if err := e.Namespace(ctx, ns); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "guard-that-is-gone"}, Ports: []corev1.ServicePort{{Port: 443}}}}
	if _, err := e.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "guard." + name + ".example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "guard"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: i.Operations,
				Rule: admissionregistrationv1.Rule{APIGroups: []string{i.Group}, APIVersions: []string{"*"}, Resources: []string{i.Resource}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          i.ObjectSelector,
			NamespaceSelector:       i.NamespaceSelector,
			MatchConditions:         i.MatchConditions,
		}},
	}
	_, err := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, hook, metav1.CreateOptions{})
	return err
}

// DownWebhooksOnConditions registers two webhooks like DownWebhook on the
// pods labelled GuardLabel=name, told apart by CEL matchConditions: name-match
// intercepts the DELETE of the pod named pod, name-skip that of no pod so named.
func (e *Env) DownWebhooksOnConditions(ctx context.Context, name, pod string) error {
	for suffix, expr := range map[string]string{"match": "oldObject.metadata.name == '" + pod + "'", "skip": "oldObject.metadata.name == '" + pod + "-other'"} {
		if err := e.DownWebhookFor(ctx, name+"-"+suffix, Intercept{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Resource: "pods", ObjectSelector: guardSelector(name),
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "by-name", Expression: expr}}}); err != nil {
			return err
		}
	}
	return nil
}

// DenyPolicy binds, with Deny, a ValidatingAdmissionPolicy that refuses DELETE
// of the pods labelled GuardLabel=name.
func (e *Env) DenyPolicy(ctx context.Context, name string) error {
	fail := admissionregistrationv1.Fail
	rules := make([]admissionregistrationv1.NamedRuleWithOperations, 0, len(deletePods))
	for _, r := range deletePods {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules, ObjectSelector: guardSelector(name)},
			Validations:      []admissionregistrationv1.Validation{{Expression: "request.operation != 'DELETE'", Message: "pods guarded by " + name + " may not be deleted"}},
		},
	}
	if _, err := e.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	_, err := e.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
}
