package collect

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A target's namespace is read for its labels only when a webhook or a
// policy could match on them: without any, no read (nor a skip if it is
// forbidden).
func TestReadAdmissionReadsNamespacesOnlyToMatch(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}}
		if webhook {
			objs = append(objs, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard"}})
		}
		fake := kubefake.NewClientset(objs...)
		s := observed.New(time.Now())
		s.Targets = append(s.Targets, podTarget(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop",
			Finalizers: []string{"example.com/hold"}, DeletionTimestamp: &metav1.Time{}}}))
		c := &Collector{Clients: &kube.Clients{Typed: fake}}
		c.readAdmission(context.Background(), s)
		if s.Admission == nil {
			t.Fatalf("webhook %v: no admission read", webhook)
		}
		reads := 0
		for _, a := range fake.Actions() {
			if a.GetResource().Resource == "namespaces" {
				reads++
			}
		}
		ns := s.Namespaces["shop"]
		switch {
		case webhook && (reads != 1 || ns == nil || ns.Labels["team"] != "a"):
			t.Errorf("with a webhook: %d namespace reads, namespace %v; want one read and its labels", reads, ns)
		case !webhook && (reads != 0 || ns != nil):
			t.Errorf("without webhooks or policies: %d namespace reads, namespace %v; want none", reads, ns)
		}
	}
}

// A server that does not serve ValidatingAdmissionPolicy (before 1.30)
// answers its list with 404: not applicable, never a skipped read, and the
// webhooks are still judged.
func TestAdmissionPoliciesNotServed(t *testing.T) {
	fake := kubefake.NewClientset()
	fake.PrependReactor("list", "validatingadmissionpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(admissionregistrationv1.Resource("validatingadmissionpolicies"), "")
	})
	s := observed.New(time.Now())
	s.Targets = append(s.Targets, podTarget(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop",
		Finalizers: []string{"example.com/hold"}, DeletionTimestamp: &metav1.Time{}}}))
	c := &Collector{Clients: &kube.Clients{Typed: fake}}
	c.readAdmission(context.Background(), s)
	if s.Admission == nil || len(c.Skips()) != 0 {
		t.Fatalf("admission %v, skips %v: want the webhooks read and no skip", s.Admission, c.Skips())
	}
	if len(s.NotServed) != 1 || s.NotServed[0].Check != "validatingadmissionpolicies" {
		t.Errorf("notServed %+v", s.NotServed)
	}
}
