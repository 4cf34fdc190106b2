package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func terminatingNamespace(requested time.Duration, conds ...corev1.NamespaceCondition) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "ns-uid", DeletionTimestamp: ago(requested)},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: conds},
	}
}

func nsCond(t corev1.NamespaceConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: *ago(time.Minute)}
}

// The namespace controller writes all five conditions; only True ones are causes.
func allConditions(trueOnes ...corev1.NamespaceCondition) []corev1.NamespaceCondition {
	out := []corev1.NamespaceCondition{}
	for _, nc := range namespaceConditions {
		c := nsCond(nc.condition, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered")
		for _, tr := range trueOnes {
			if tr.Type == nc.condition {
				c = tr
			}
		}
		out = append(out, c)
	}
	return out
}

func TestNamespaceRules(t *testing.T) {
	cases := []struct {
		name     string
		ns       *corev1.Namespace
		codes    []string
		severity report.Severity
		evidence string
	}{
		{
			name: "content held by finalizers",
			ns: terminatingNamespace(10*time.Minute, allConditions(
				nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 3 resource instances"),
				nsCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/x in 3 resource instances"),
			)...),
			codes: []string{"NamespaceFinalizersRemaining", "NamespaceContentRemaining"}, severity: report.Warning,
			evidence: "example.com/x in 3 resource instances",
		},
		{
			name: "discovery failure outranks remaining content",
			ns: terminatingNamespace(10*time.Minute, allConditions(
				nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances"),
				nsCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
			)...),
			codes: []string{"NamespaceDiscoveryFailure", "NamespaceContentRemaining"}, severity: report.Critical,
			evidence: "metrics.k8s.io/v1beta1",
		},
		{
			name: "a group version that cannot be parsed",
			ns: terminatingNamespace(10*time.Minute, allConditions(
				nsCond(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionTrue, "GroupVersionParsingFailed", "Discovery failed for some groups, 1 failing: unexpected GroupVersion string: example.com/v1/extra"),
			)...),
			codes: []string{"NamespaceDiscoveryFailure"}, severity: report.Critical, evidence: "example.com/v1/extra",
		},
		{
			name: "content deletion failed",
			ns: terminatingNamespace(10*time.Minute, allConditions(
				nsCond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: shop for gvr: /v1, Resource=pods"),
			)...),
			// Only leftovers: a symptom, whose cause the live scan names.
			codes: []string{"NamespaceContentFailure"}, severity: report.Warning, evidence: "unexpected items still remain",
		},
		{
			name: "content deletion failed on a webhook and leftovers",
			ns: terminatingNamespace(10*time.Minute, allConditions(
				nsCond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: unexpected items still remain in namespace: shop for gvr: /v1, Resource=pods, Internal error occurred: failed calling webhook \"guard.example.com\": service unavailable"),
			)...),
			codes: []string{"AdmissionWebhookDenied", "NamespaceContentFailure"}, severity: report.Critical, evidence: "guard.example.com",
		},
		{
			name:  "no condition after minutes: the namespace controller is not running",
			ns:    terminatingNamespace(10 * time.Minute),
			codes: []string{"NamespaceControllerInactive"}, severity: report.Critical, evidence: "no NamespaceDeletion",
		},
		{
			name:  "no condition yet, seconds after the delete: the namespace controller's finalizer, too early to tell",
			ns:    terminatingNamespace(20 * time.Second),
			codes: []string{"FinalizerPending"}, severity: report.Info, evidence: "finalizer kubernetes: removed by namespace controller",
		},
		{
			name: "content remaining seconds after the delete is progress",
			ns: terminatingNamespace(10*time.Second, allConditions(
				nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances"))...),
			codes: []string{"NamespaceContentRemaining"}, severity: report.Info,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := Diagnose(snap(tc.ns)).Items[0]
			expectCauses(t, it, tc.codes, tc.severity, tc.evidence)
		})
	}
}

func TestNamespaceLastResortSaysLeftoversReappear(t *testing.T) {
	ns := terminatingNamespace(10*time.Minute, allConditions(
		nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"))...)
	steps := Diagnose(snap(ns)).Items[0].Causes[0].Remediation
	last := steps[len(steps)-1]
	if !strings.Contains(last.Command, "/api/v1/namespaces/shop/finalize") || !strings.Contains(last.Risk, "reappear") {
		t.Errorf("last step = %+v", last)
	}
	if !strings.Contains(steps[0].Command, "kubectl terminating why -n shop") {
		t.Errorf("first step should diagnose the leftovers in that namespace: %+v", steps[0])
	}
}

// The namespace controller writes its conditions together: those of one
// time are one moment, the True ones with their reason, the others named.
func TestNamespaceConditionsOfOneTimeAreOneMoment(t *testing.T) {
	conds := allConditions(
		nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"),
		nsCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances"))
	earlier := nsCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered")
	earlier.LastTransitionTime = *ago(5 * time.Minute)
	conds[0] = earlier
	var events []string
	for _, m := range Diagnose(snap(terminatingNamespace(10*time.Minute, conds...))).Items[0].Timeline {
		events = append(events, m.Event)
	}
	want := []string{
		"deletion requested",
		"condition NamespaceDeletionDiscoveryFailure=False (ResourcesDiscovered)",
		"conditions NamespaceFinalizersRemaining=True (SomeFinalizersRemain), NamespaceContentRemaining=True (SomeResourcesRemain); False: NamespaceDeletionGroupVersionParsingFailure, NamespaceDeletionContentFailure",
	}
	if !slices.Equal(events, want) {
		t.Errorf("timeline:\n%q\nwant\n%q", events, want)
	}
}

func TestNamespaceConditionsAreStructured(t *testing.T) {
	ns := terminatingNamespace(10*time.Minute, allConditions(
		nsCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/x in 3 resource instances"),
		nsCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"),
		nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances"),
	)...)
	var evidence []string
	for _, c := range Diagnose(snap(ns)).Items[0].Causes {
		evidence = append(evidence, c.Evidence...)
	}
	for _, want := range []string{
		"finalizer example.com/x on 3 objects: removed by a third-party controller",
		"discovery fails for metrics.k8s.io/v1beta1 (usually an APIService that is not Available: kubectl get apiservice v1beta1.metrics.k8s.io)",
		"remaining pods: 2 (as the namespace controller counted them)",
	} {
		if !slices.Contains(evidence, want) {
			t.Errorf("evidence lacks %q: %q", want, evidence)
		}
	}
}
