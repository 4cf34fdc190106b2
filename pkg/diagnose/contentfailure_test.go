package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// configMapsLeft is a namespace whose content deletion failed with msg, and
// whose live scan found one configmap left.
func configMapsLeft(msg string) *observed.Snapshot {
	ns := terminatingNamespace(10*time.Minute, allConditions(
		nsCond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", msg))...)
	ns.Labels = map[string]string{"kubernetes.io/metadata.name": "shop"}
	s := snap(ns)
	s.Targets[0].Contents = &observed.Contents{
		Counts:    byType(map[string]int{"configmaps": 1}),
		Resources: map[schema.GroupResource]schema.GroupVersionResource{{Resource: "configmaps"}: {Version: "v1", Resource: "configmaps"}, {Resource: "secrets"}: {Version: "v1", Resource: "secrets"}},
	}
	return s
}

func deleteConfigMapsWebhook(name string) admissionregistrationv1.ValidatingWebhookConfiguration {
	w := deletePodsWebhook(admissionregistrationv1.Fail)
	w.Name = "cm-guard"
	w.Webhooks[0].Name = name
	w.Webhooks[0].Rules[0].Resources = []string{"configmaps"}
	w.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}
	return w
}

func TestNamespaceWebhookRefusals(t *testing.T) {
	named := `Failed to delete all resource types, 1 remaining: Internal error occurred: failed calling webhook "cm.guard.example.com": failed to call webhook: Post "https://guard-svc.guard.svc:443/validate?timeout=10s": service "guard-svc" not found`
	for _, tc := range []struct {
		name       string
		msg        string
		read       bool
		ready      int
		want       []string
		confidence float64
		evidence   string
	}{
		{"named by the controller, its service down", named, true, 0, []string{"AdmissionWebhookDenied", "NamespaceContentFailure", "NamespaceContentRemaining"}, 0.95, `names webhook "cm.guard.example.com"`},
		{"named by the controller, configuration not readable", named, false, 0, []string{"AdmissionWebhookDenied", "NamespaceContentFailure", "NamespaceContentRemaining"}, 0.8, "webhook configurations: not read"},
		{"named, though its service has endpoints (it answered no)", named, true, 2, []string{"AdmissionWebhookDenied", "NamespaceContentFailure", "NamespaceContentRemaining"}, 0.95, "service guard/guard-svc: 2 ready endpoints"},
		{"not named, service down, matches a leftover type", "Failed to delete all resource types, 1 remaining: something else", true, 0, []string{"AdmissionWebhookDenied", "NamespaceContentFailure", "NamespaceContentRemaining"}, 0.9, "matches the namespace controller's DELETE of configmaps in namespace shop"},
		{"not named, service up: it may well allow the deletes", "Failed to delete all resource types, 1 remaining: something else", true, 3, []string{"NamespaceContentFailure", "NamespaceContentRemaining"}, 0.8, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := configMapsLeft(tc.msg)
			if tc.read {
				s.Admission = observed.NewAdmission()
				s.Admission.Validating = []admissionregistrationv1.ValidatingWebhookConfiguration{deleteConfigMapsWebhook("cm.guard.example.com")}
				s.Admission.ServiceEndpoints[key("guard/guard-svc")] = tc.ready
			}
			it := Diagnose(s).Items[0]
			expectCauses(t, it, tc.want, "critical", tc.evidence)
			if top := it.Causes[0]; top.Confidence != tc.confidence {
				t.Errorf("confidence = %v, want %v", top.Confidence, tc.confidence)
			}
		})
	}
}

func TestWebhookWithAnObjectSelectorIsBlamedOnlyWhenNamed(t *testing.T) {
	s := configMapsLeft("Failed to delete all resource types, 1 remaining: something else")
	s.Admission = observed.NewAdmission()
	w := deleteConfigMapsWebhook("cm.guard.example.com")
	w.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"guarded-by": "other-test"}}
	s.Admission.Validating = append(s.Admission.Validating, w)
	s.Admission.ServiceEndpoints[key("guard/guard-svc")] = 0
	if got := codes(Diagnose(s).Items[0]); !slices.Equal(got, []string{"NamespaceContentFailure", "NamespaceContentRemaining"}) {
		t.Errorf("codes = %v: the leftovers' labels are unknown, the webhook may guard other objects", got)
	}
}

func TestWebhookOnAnotherTypeIsNotBlamed(t *testing.T) {
	s := configMapsLeft("Failed to delete all resource types, 1 remaining: something else")
	s.Admission = observed.NewAdmission()
	w := deleteConfigMapsWebhook("secrets.guard.example.com")
	w.Webhooks[0].Rules[0].Resources = []string{"secrets"} // no secret is left
	s.Admission.Validating = append(s.Admission.Validating, w)
	if got := codes(Diagnose(s).Items[0]); !slices.Equal(got, []string{"NamespaceContentFailure", "NamespaceContentRemaining"}) {
		t.Errorf("codes = %v", got)
	}
}

func gadgetsWithDownConversion() *observed.Snapshot {
	s := configMapsLeft(conversionFailureMessage)
	s.CRDs["gadgets.conv.example.com"] = &observed.CRD{Name: "gadgets.conv.example.com", Group: "conv.example.com", Kind: "Gadget", Plural: "gadgets",
		Namespaced: true, StorageVersion: "v1", Served: []string{"v1", "v2"}, StoredVersions: []string{"v1"},
		ConversionStrategy: "Webhook", ConversionService: "default/conv-down", ConversionServiceEndpoints: new(int)}
	return s
}

func TestConversionWebhookFailing(t *testing.T) {
	it := Diagnose(gadgetsWithDownConversion()).Items[0]
	expectCauses(t, it, []string{"ConversionWebhookFailing", "NamespaceContentFailure", "NamespaceContentRemaining"}, "critical", "service default/conv-down: 0 ready endpoints")
	top := it.Causes[0]
	if !strings.Contains(top.Summary, "CRD gadgets.conv.example.com fails (its service default/conv-down has no ready endpoints)") {
		t.Errorf("summary: %q", top.Summary)
	}
	last := top.Remediation[len(top.Remediation)-1]
	if last.Command != "kubectl delete crd gadgets.conv.example.com" || !strings.Contains(last.Risk, "every object of that kind") {
		t.Errorf("the riskiest step comes last and says so: %+v", last)
	}
}

func TestStaleConversionFailureIsNotBlamed(t *testing.T) {
	s := gadgetsWithDownConversion()
	// The live scan listed gadgets in the namespace without error: the
	// condition's message is older than the repair.
	s.Targets[0].Contents.Resources[schema.ParseGroupResource("gadgets.conv.example.com")] = schema.GroupVersionResource{Group: "conv.example.com", Version: "v2", Resource: "gadgets"}
	if got := codes(Diagnose(s).Items[0]); !slices.Equal(got, []string{"NamespaceContentFailure", "NamespaceContentRemaining"}) {
		t.Errorf("codes = %v", got)
	}
	s.Targets[0].Contents.Skipped = []report.Skip{{Check: "list gadgets.conv.example.com in namespace shop", Reason: report.SkipError, Detail: "the server is currently unable to handle the request",
		Resource: schema.GroupVersionResource{Group: "conv.example.com", Version: "v2", Resource: "gadgets"}}}
	if got := codes(Diagnose(s).Items[0]); got[0] != "ConversionWebhookFailing" {
		t.Errorf("when the scan could not list them either, the condition is believed: %v", got)
	}
}

func TestConversionFailureSeenOnlyByTheScan(t *testing.T) {
	s := snap(terminatingNamespace(10*time.Minute, allConditions()...))
	s.Targets[0].Contents = &observed.Contents{Counts: byType(nil), Skipped: []report.Skip{{Check: "list gadgets.conv.example.com in namespace shop", Reason: "Error",
		APIMessage: `conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://conv-down.default.svc:443/convert?timeout=30s": service "conv-down" not found`}}}
	it := Diagnose(s).Items[0]
	if got := codes(it); len(got) == 0 || got[0] != "ConversionWebhookFailing" {
		t.Fatalf("codes = %v", got)
	}
	if !strings.Contains(it.Causes[0].Summary, "CRD gadgets.conv.example.com") {
		t.Errorf("without the CRD, its name is guessed from kind and group: %q", it.Causes[0].Summary)
	}
}
