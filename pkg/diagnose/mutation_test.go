package diagnose

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
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
	held := func() *observed.Snapshot {
		p := stopped(terminatingPod(10*time.Minute, 30), corev1.PodSucceeded)
		p.UID = "uid-job-pod"
		p.DeletionGracePeriodSeconds = int64p(0)
		p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
		s := healthySnap(p)
		s.Admission = observed.NewAdmission()
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
			if tc.severity == report.Warning && top.Confidence < 0.4 {
				t.Errorf("confidence %.2f, halved: the sender is known (the catalogue's writer), every condition evaluates", top.Confidence)
			}
			expectGradedSteps(t, it)
		})
	}
	// Several suspects are ranked by how precisely their matching names the
	// write; the controller's words confirm the likeliest, the others stay
	// suspects.
	t.Run("ranked by what can be checked", func(t *testing.T) {
		s := held()
		wildcard := mutatingPodsWebhook(admissionregistrationv1.Fail, func(w *admissionregistrationv1.MutatingWebhook) {
			w.Name = "everything.example.com"
			w.Rules[0].Resources = []string{"*"}
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
		})
		wildcard.Name = "catch-all"
		ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
		precise := mutatingPodsWebhook(ignore, func(w *admissionregistrationv1.MutatingWebhook) {
			w.ReinvocationPolicy = &ifNeeded
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "finished", Expression: "object.status.phase == 'Succeeded'"}}
		})
		s.Admission.Mutating = append(s.Admission.Mutating, wildcard, precise)
		var suspects []report.Cause
		for _, c := range Diagnose(s).Items[0].Causes {
			if c.Code == "AdmissionWebhookDenied" {
				suspects = append(suspects, c)
			}
		}
		if len(suspects) != 2 || suspects[0].About.Object.Name != "pod-defaults" || suspects[0].Confidence <= suspects[1].Confidence {
			t.Fatalf("the webhook naming pods and UPDATE, selecting finished pods and reinvoked should rank first: %+v", suspects)
		}
		for _, want := range []string{"its rules name pods and UPDATE themselves", "reinvocationPolicy IfNeeded", "select this object's update", "failurePolicy Ignore does not help"} {
			if !strings.Contains(strings.Join(suspects[0].Evidence, "\n"), want) {
				t.Errorf("evidence lacks %q: %q", want, suspects[0].Evidence)
			}
		}
		s.Events = map[types.UID][]corev1.Event{"uid-job-pod": {invalid}}
		it := Diagnose(s).Items[0]
		if top := it.Causes[0]; top.Severity != report.Critical || top.About.Object.Name != "pod-defaults" || !strings.Contains(top.Summary, "the controller reports") {
			t.Errorf("confirmed: %s %s: %s", top.Severity, top.About.Object.Name, top.Summary)
		}
		for _, c := range it.Causes[1:] {
			if c.Code == "AdmissionWebhookDenied" && c.Severity == report.Critical {
				t.Errorf("the less precise suspect is confirmed too: %s", c.Summary)
			}
		}
	})

	// A validating webhook that answers is no suspect: it may well allow the patch.
	s := held()
	hook := deletePodsWebhook(admissionregistrationv1.Fail, admissionregistrationv1.Update)
	s.Admission.Validating = append(s.Admission.Validating, hook)
	if top := Diagnose(s).Items[0].Causes[0]; top.Code == "AdmissionWebhookDenied" {
		t.Errorf("an answering validating webhook: %s", top.Summary)
	}
}

// An operator's finalizer is removed by the operator, sent as its service
// account: a webhook's matchConditions on the sender evaluate against the
// service account of the workload that looks like the owner, when the
// workloads agree on one.
func TestTheOperatorSendsItsWritesAsItsServiceAccount(t *testing.T) {
	widgetsHook := func(expression string) admissionregistrationv1.MutatingWebhookConfiguration {
		return mutatingPodsWebhook(admissionregistrationv1.Fail, func(w *admissionregistrationv1.MutatingWebhook) {
			w.Rules[0].APIGroups, w.Rules[0].Resources = []string{"example.com"}, []string{"widgets"}
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "sender", Expression: expression}}
		})
	}
	operator := observed.Workload{Kind: "deployment", Namespace: "ops", Name: "widget-operator", Desired: 1, Ready: 1, ServiceAccount: "widget-operator"}
	for _, tc := range []struct {
		name       string
		workloads  []observed.Workload
		expression string
		suspect    bool
		halved     bool
	}{
		{"sent as the operator's account", []observed.Workload{operator}, "request.userInfo.username == 'system:serviceaccount:ops:widget-operator'", true, false},
		{"a condition that excludes the operator", []observed.Workload{operator}, "request.userInfo.username != 'system:serviceaccount:ops:widget-operator'", false, false},
		{"two candidate owners with different accounts: the sender is unknown", []observed.Workload{operator, {Kind: "deployment", Namespace: "ops2", Name: "widget-operator", Desired: 1, Ready: 1, ServiceAccount: "other"}},
			"request.userInfo.username == 'system:serviceaccount:ops:widget-operator'", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(heldWith("finalizer.widget.io"))
			s.Controllers = &observed.Controllers{Workloads: tc.workloads}
			s.Admission = observed.NewAdmission()
			s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 1
			s.Admission.Mutating = append(s.Admission.Mutating, widgetsHook(tc.expression))
			var suspect *report.Cause
			for _, c := range Diagnose(s).Items[0].Causes {
				if c.Code == "AdmissionWebhookDenied" {
					suspect = &c
				}
			}
			if (suspect != nil) != tc.suspect {
				t.Fatalf("suspect %v, want %v", suspect, tc.suspect)
			}
			if suspect != nil && (suspect.Confidence < 0.4) != tc.halved {
				t.Errorf("confidence %.2f: halved is %v when the sender is known %v", suspect.Confidence, tc.halved, !tc.halved)
			}
		})
	}
}
