package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 38: why ns/NAME lists only the types the namespace controller's
// conditions name as left, and pods, when they are current, with the verdict
// a scan of every type gives; --full-scan and a namespace whose pods are
// still going (the controller names the other types only after them) scan
// every type, and the report says which way it read.
func TestNamespaceConditionsIndexTheScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deleteHeld := func(ns string) time.Time {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Finalizers: []string{"ledger.tidy.io/archive"}}}
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return deleted
	}
	// remaining waits until the namespace controller says what is left
	// (want), or has written its conditions ("").
	remaining := func(ns, want string) {
		t.Helper()
		for end := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			n, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NamespaceContentRemaining && (want == "" || c.Status == corev1.ConditionTrue && strings.Contains(c.Message, want)) {
					return
				}
			}
			if time.Now().After(end) {
				t.Fatalf("namespace %s: no NamespaceContentRemaining naming %s after a minute: %+v", ns, want, n.Status.Conditions)
			}
		}
	}
	verdict := func(it item) string {
		var out []string
		for _, c := range it.Causes {
			out = append(out, c.Code+": "+c.Summary)
		}
		return strings.Join(out, "\n")
	}
	// fallsBack checks that why ns/NAME scanned every type, saying why, and
	// gave the verdict --full-scan gives.
	fallsBack := func(ns, why string) {
		t.Helper()
		r, _ := diagnose(t, "why", "ns/"+ns)
		full, _ := diagnose(t, "why", "ns/"+ns, "--full-scan")
		if rd := only(t, r).ContentsRead; rd == nil || rd.Index || !strings.Contains(rd.Why, why) || rd.Types < 20 {
			t.Errorf("%s: read %+v; want every type, because %s", ns, rd, why)
		}
		if verdict(only(t, r)) != verdict(only(t, full)) {
			t.Errorf("%s: the verdict is not the full scan's:\n%s\n---\n%s", ns, verdict(only(t, r)), verdict(only(t, full)))
		}
	}

	ns := namespace(t, "indexed")
	deleted := deleteHeld(ns)
	remaining(ns, "configmaps. has 1 resource instances")
	settle(t, deleted) // past the settle time: stuck, exit 2
	r, res := diagnose(t, "why", "ns/"+ns)
	indexed := only(t, r)
	full, fullRes := diagnose(t, "why", "ns/"+ns, "--full-scan")
	all := only(t, full)
	if rd := indexed.ContentsRead; res.code != 2 || rd == nil || !rd.Index || rd.Types != 2 {
		t.Errorf("indexed: exit %d, read %+v; want the conditions' configmaps and pods", res.code, rd)
	}
	if rd := all.ContentsRead; fullRes.code != 2 || rd == nil || rd.Index || rd.Why != "--full-scan" || rd.Types < 20 {
		t.Errorf("--full-scan: exit %d, read %+v; want every namespaced type", fullRes.code, rd)
	}
	if verdict(indexed) != verdict(all) || !strings.Contains(verdict(indexed), "ledger.tidy.io/archive") {
		t.Errorf("the index's verdict is not the full scan's:\n%s\n---\n%s", verdict(indexed), verdict(all))
	}
	table := run(t, "why", "ns/"+ns)
	if !strings.Contains(table.prose(), "read: the types the namespace controller's conditions name as left, and pods: 2 types") {
		t.Errorf("the table does not say how it read:\n%s", table.stdout)
	}

	// Conditions older than the deletion (as a namespace deleted, restored
	// from a backup with its status and deleted again would carry) do not
	// describe it: every type is listed, with the same verdict. The
	// controller keeps a condition whose status, reason and message it
	// would write again, so the backdated time stays.
	stale := namespace(t, "indexed-stale")
	staleDeleted := deleteHeld(stale)
	remaining(stale, "configmaps. has 1 resource instances")
	n, err := env.Client.CoreV1().Namespaces().Get(ctx, stale, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(staleDeleted.Add(-time.Hour))
	}
	if _, err := env.Client.CoreV1().Namespaces().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fallsBack(stale, "condition is older than the deletion")

	// Conditions absent (a namespace the controller has not synced since
	// its deletion, or whose status it cannot write): every type is
	// listed, with the same verdict. An admission policy refuses the
	// controller's status writes on this namespace, so they stay absent
	// (and the controller, which writes them first, deletes nothing).
	absent := namespace(t, "indexed-absent")
	freezeStatus(t, absent)
	deleteHeld(absent)
	fallsBack(absent, "the namespace controller has not written its")

	// Pods go first: while they remain the controller neither deletes nor
	// counts the other types (its conditions say "All content successfully
	// removed" meanwhile); every type is listed.
	withPods := namespace(t, "indexed-pods")
	heldByFinalizer(t, withPods, "cache-0", "example.com/drain")
	deleteHeld(withPods) // its verdict is not compared: no need to settle
	remaining(withPods, "")
	r, _ = diagnose(t, "why", "ns/"+withPods)
	if rd := only(t, r).ContentsRead; rd == nil || rd.Index || !strings.Contains(rd.Why, "pods remain") || rd.Types < 20 {
		t.Errorf("pods first: read %+v; want every type, because pods remain", rd)
	}
}

// freezeStatus binds an admission policy that refuses every write of
// namespace ns's status (the namespace controller's conditions among them),
// and waits until it is in force: a write of the status is refused.
func freezeStatus(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	name := "freeze-status-" + ns
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces/status"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != '" + ns + "'", Message: "the status of " + ns + " is frozen by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	api := env.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
	for end := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		n, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.CoreV1().Namespaces().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil && strings.Contains(err.Error(), "frozen by the test") {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the policy freezing %s's status is not in force after a minute", ns)
		}
	}
}
