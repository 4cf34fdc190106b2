package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func deletePodsWebhook(policy admissionregistrationv1.FailurePolicyType, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhookConfiguration {
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	}
	return admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:          "guard.example.com",
			FailurePolicy: &policy,
			ClientConfig:  admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "guard", Name: "guard-svc"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: ops,
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		}},
	}
}

// stateC is a pod whose kubelet stopped everything but has not deleted it.
func stateC(adm func(*observed.Admission)) *observed.Snapshot {
	s := healthySnap(stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed))
	s.Admission = observed.NewAdmission()
	adm(s.Admission)
	return s
}

func TestFinalDeleteAdmission(t *testing.T) {
	withHook := func(policy admissionregistrationv1.FailurePolicyType, ready int, ops ...admissionregistrationv1.OperationType) func(*observed.Admission) {
		return func(a *observed.Admission) {
			a.Validating = append(a.Validating, deletePodsWebhook(policy, ops...))
			a.ServiceEndpoints[key("guard/guard-svc")] = ready
		}
	}
	cases := []struct {
		name     string
		s        *observed.Snapshot
		codes    []string
		severity report.Severity
		evidence string
	}{
		{"webhook down with failurePolicy Fail refuses it", stateC(withHook(admissionregistrationv1.Fail, 0)),
			[]string{"AdmissionWebhookDenied"}, report.Critical, "service guard/guard-svc: 0 ready endpoints"},
		{"webhook up may refuse it", stateC(withHook(admissionregistrationv1.Fail, 2)),
			[]string{"AdmissionWebhookDenied", "CgroupCleanupPending"}, report.Warning, "matches DELETE pods"},
		{"webhook down with failurePolicy Ignore is harmless", stateC(withHook(admissionregistrationv1.Ignore, 0)),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
		{"webhook on CREATE only does not see the delete", stateC(withHook(admissionregistrationv1.Fail, 0, admissionregistrationv1.Create)),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
		{"objectSelector that excludes the pod", stateC(func(a *observed.Admission) {
			w := deletePodsWebhook(admissionregistrationv1.Fail)
			w.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}
			a.Validating = append(a.Validating, w)
			a.ServiceEndpoints[key("guard/guard-svc")] = 0
		}), []string{"CgroupCleanupPending"}, report.Warning, ""},
		{"a Deny policy whose validation is false for the kubelet's DELETE refuses it", stateC(withPolicy("request.operation != 'DELETE'", nil)),
			[]string{"AdmissionPolicyDenied"}, report.Critical, "validation request.operation != 'DELETE' is false for this request"},
		{"a Deny policy that exempts the nodes lets it through", stateC(withPolicy("request.operation != 'DELETE' || 'system:nodes' in request.userInfo.groups", nil)),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
		{"a Deny policy whose matchConditions exclude the pod", stateC(withPolicy("false", []admissionregistrationv1.MatchCondition{{Name: "only-protected", Expression: "has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels"}})),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
		{"a Deny policy that reads params may refuse it", stateC(withPolicy("oldObject.metadata.name != params.name", nil)),
			[]string{"AdmissionPolicyDenied", "CgroupCleanupPending"}, report.Warning, "cannot be evaluated here"},
		{"a webhook down whose matchConditions exclude the kubelet", stateC(withConditions(0, `!("system:nodes" in request.userInfo.groups)`)),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
		{"a webhook down whose matchConditions include the pod", stateC(withConditions(0, `oldObject.metadata.name == "web-0"`)),
			[]string{"AdmissionWebhookDenied"}, report.Critical, "is true for this request"},
		{"admission not read: no claim either way", healthySnap(stopped(terminatingPod(10*time.Minute, 30), corev1.PodFailed)),
			[]string{"CgroupCleanupPending"}, report.Warning, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(tc.s).Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
		})
	}
}

// withPolicy binds, with Deny, a policy on every DELETE with one validation.
func withPolicy(validation string, conditions []admissionregistrationv1.MatchCondition) func(*observed.Admission) {
	return func(a *observed.Admission) {
		a.Policies = []admissionregistrationv1.ValidatingAdmissionPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "no-pod-deletes"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}},
				MatchConditions: conditions,
				Validations:     []admissionregistrationv1.Validation{{Expression: validation}}}}}
		a.PolicyBindings = []admissionregistrationv1.ValidatingAdmissionPolicyBinding{{ObjectMeta: metav1.ObjectMeta{Name: "no-pod-deletes"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-pod-deletes", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}}
	}
}

// withConditions adds the DELETE pods webhook with matchConditions, its service with ready endpoints.
func withConditions(ready int, exprs ...string) func(*observed.Admission) {
	return func(a *observed.Admission) {
		w := deletePodsWebhook(admissionregistrationv1.Fail)
		for i, e := range exprs {
			w.Webhooks[0].MatchConditions = append(w.Webhooks[0].MatchConditions, admissionregistrationv1.MatchCondition{Name: fmt.Sprint("c", i), Expression: e})
		}
		a.Validating = append(a.Validating, w)
		a.ServiceEndpoints[key("guard/guard-svc")] = ready
	}
}

// Class e: the UPDATE that removes a finalizer is sent by a controller the
// plugin cannot name, so a matchCondition on the sender stays unknown and
// halves the confidence; one on the object is decided.
func TestFinalizerRemovalAdmissionConditions(t *testing.T) {
	for _, tc := range []struct {
		expr       string
		blamed     bool
		confidence float64
	}{
		{`request.userInfo.username != "system:serviceaccount:acme:operator"`, true, 0.45},
		{`oldObject.metadata.name == "w"`, true, 0.9},
		{`oldObject.metadata.name == "other"`, false, 0},
	} {
		w := heldObject("ConfigMap", "configmaps", "w", 10*time.Minute, "acme.io/keep")
		s := snapOf(w)
		s.Admission = observed.NewAdmission()
		hook := deletePodsWebhook(admissionregistrationv1.Fail, admissionregistrationv1.Update)
		hook.Webhooks[0].Rules[0].Resources = []string{"configmaps"}
		hook.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: tc.expr}}
		s.Admission.Validating = []admissionregistrationv1.ValidatingWebhookConfiguration{hook}
		s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 0
		it := Diagnose(s).Items[0]
		i := slices.Index(codes(it), "AdmissionWebhookDenied")
		if (i >= 0) != tc.blamed || (tc.blamed && it.Causes[i].Confidence != tc.confidence) {
			t.Errorf("%s: codes %v, want blamed %t at confidence %.2f", tc.expr, codes(it), tc.blamed, tc.confidence)
		}
	}
}

func TestWebhookRemediationEndsWithTheRiskiest(t *testing.T) {
	s := stateC(func(a *observed.Admission) {
		a.Validating = append(a.Validating, deletePodsWebhook(admissionregistrationv1.Fail))
		a.ServiceEndpoints[key("guard/guard-svc")] = 0
	})
	c := Diagnose(s).Items[0].Causes[0]
	if c.Remediation[0].Risk != "none: read-only" || !strings.Contains(c.Remediation[0].Command, "kubernetes.io/service-name=guard-svc") {
		t.Errorf("first step: %+v", c.Remediation[0])
	}
	if !strings.Contains(c.Remediation[2].Command, `"path":"/webhooks/0/failurePolicy","value":"Ignore"`) {
		t.Errorf("third step: %+v", c.Remediation[2])
	}
	if last := c.Remediation[len(c.Remediation)-1]; !strings.Contains(last.Command, "kubectl delete validatingwebhookconfiguration pod-guard") ||
		last.Apply == nil || last.Apply.Verb != report.ActionDelete || last.Apply.Object.Name != "pod-guard" || last.Apply.Object.Kind != "ValidatingWebhookConfiguration" {
		t.Errorf("last step, which fix may send (the backend has no endpoint): %+v", last)
	}
	check := Diagnose(s).Items[0].Checks
	if !slices.ContainsFunc(check, func(c report.Check) bool {
		return c.Name == "final delete admitted" && c.Status == report.Fail && strings.Contains(c.Detail, "no ready endpoints")
	}) {
		t.Errorf("checks: %+v", check)
	}
	// A backend that answers: the webhook may be right to refuse, fix may not delete it.
	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 1
	for _, c := range Diagnose(s).Items[0].Causes {
		for _, st := range c.Remediation {
			if st.Apply != nil && st.Apply.Verb == report.ActionDelete {
				t.Errorf("%s: a delete fix may send for a webhook whose backend answers: %+v", c.Code, st)
			}
		}
	}
}

func TestNamespaceSelector(t *testing.T) {
	hook := deletePodsWebhook(admissionregistrationv1.Fail)
	hook.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	h := hooksOf(observed.Admission{Validating: []admissionregistrationv1.ValidatingWebhookConfiguration{hook}})[0]
	r := request{operation: admissionregistrationv1.Delete, version: "v1", resource: "pods", namespaced: true}
	if r.nsLabels = map[string]string{"env": "dev"}; h.matches(r) {
		t.Error("matched a namespace outside its selector")
	}
	if r.nsLabels = map[string]string{"env": "prod"}; !h.matches(r) {
		t.Error("did not match a namespace inside its selector")
	}
	if r.nsLabels = nil; !h.matches(r) {
		t.Error("an unread namespace must count as a possible match")
	}
	// A namespace read without labels (a snapshot drops the keys no selector
	// uses, and the field with them) is known to have none: no match.
	if r.nsLabels = namespaceLabels(&corev1.Namespace{}); h.matches(r) {
		t.Error("a namespace read with no labels counts as unread")
	}
}
