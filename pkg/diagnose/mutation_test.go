package diagnose

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

func mutatingPodsWebhook(policy admissionregistrationv1.FailurePolicyType, mutate func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.MutatingWebhookConfiguration {
	w := admissionregistrationv1.MutatingWebhook{
		Name:          "defaults.example.com",
		FailurePolicy: &policy,
		ClientConfig:  admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "guard", Name: "guard-svc"}},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
	}
	if mutate != nil {
		mutate(&w)
	}
	return admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pod-defaults"}, Webhooks: []admissionregistrationv1.MutatingWebhook{w}}
}

// A finished pod the job controller cannot release: a mutating webhook that
// answers intercepts the patch that removes batch.kubernetes.io/job-tracking
// and makes it an invalid update, whatever its failurePolicy. A suspect on
// its own; confirmed by what the controller says about the pod.
func TestMutatingWebhookOnFinalizerRemoval(t *testing.T) {
	held := func() *snapshot.Snapshot {
		p := stopped(terminatingPod(10*time.Minute, 30), corev1.PodSucceeded)
		p.UID = "uid-job-pod"
		p.DeletionGracePeriodSeconds = int64p(0)
		p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
		s := healthySnap(p)
		s.Admission = snapshot.NewAdmission()
		s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 1
		return s
	}
	invalid := corev1.Event{Type: corev1.EventTypeWarning, Reason: "FailedUpdate", Count: 1, LastTimestamp: *ago(time.Minute),
		Message:        `Pod "job-pod" is invalid: spec: Forbidden: pod updates may not change fields other than spec.containers[*].image`,
		InvolvedObject: corev1.ObjectReference{UID: "uid-job-pod"}}
	ignore := admissionregistrationv1.Ignore
	for _, tc := range []struct {
		name     string
		hook     func(*admissionregistrationv1.MutatingWebhook)
		policy   admissionregistrationv1.FailurePolicyType
		events   []corev1.Event
		severity report.Severity
		summary  string
	}{
		{"an answering webhook is a suspect", nil, admissionregistrationv1.Fail, nil, report.Warning, "turns it into an invalid update the apiserver rejects whatever the webhook's failurePolicy"},
		{"whatever its failurePolicy", nil, ignore, nil, report.Warning, "mutating webhook defaults.example.com (pod-defaults) changes UPDATE pods"},
		{"confirmed by what the controller says", nil, admissionregistrationv1.Fail, []corev1.Event{invalid}, report.Critical, "the controller reports: Pod \"job-pod\" is invalid"},
		{"not matching UPDATE", func(w *admissionregistrationv1.MutatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		}, admissionregistrationv1.Fail, nil, "", ""},
		{"a matchCondition excluding the pod", func(w *admissionregistrationv1.MutatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "other-pods", Expression: "object.metadata.name == 'someone-else'"}}
		}, admissionregistrationv1.Fail, nil, "", ""},
		{"a matchCondition on the sender, the job controller", func(w *admissionregistrationv1.MutatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "controllers", Expression: "request.userInfo.username.startsWith('system:serviceaccount:kube-system:')"}}
		}, admissionregistrationv1.Fail, nil, report.Warning, "changes UPDATE pods"},
		{"a matchCondition excluding controllers", func(w *admissionregistrationv1.MutatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "people", Expression: "!('system:serviceaccounts' in request.userInfo.groups)"}}
		}, admissionregistrationv1.Fail, nil, "", ""},
		{"an objectSelector excluding the pod", func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "true"}}
		}, admissionregistrationv1.Fail, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := held()
			s.Admission.Mutating = append(s.Admission.Mutating, mutatingPodsWebhook(tc.policy, tc.hook))
			s.Events = map[types.UID][]corev1.Event{"uid-job-pod": tc.events}
			it := Diagnose(s).Items[0]
			top := it.Causes[0]
			if tc.severity == "" {
				if top.Code == "AdmissionWebhookDenied" {
					t.Errorf("a webhook that leaves the patch alone is blamed: %s", top.Summary)
				}
				return
			}
			if top.Code != "AdmissionWebhookDenied" || top.Severity != tc.severity || !strings.Contains(top.Summary, tc.summary) {
				t.Errorf("%v: %s %s: %s", codes(it), top.Code, top.Severity, top.Summary)
			}
			if tc.severity == report.Warning && top.Confidence != 0.4 {
				t.Errorf("confidence %.2f: the sender is known (the catalogue's writer), every condition evaluates", top.Confidence)
			}
			expectGradedSteps(t, it)
		})
	}
	// A validating webhook that answers is no suspect: it may well allow the patch.
	s := held()
	hook := deletePodsWebhook(admissionregistrationv1.Fail, admissionregistrationv1.Update)
	s.Admission.Validating = append(s.Admission.Validating, hook)
	if top := Diagnose(s).Items[0].Causes[0]; top.Code == "AdmissionWebhookDenied" {
		t.Errorf("an answering validating webhook: %s", top.Summary)
	}
}
