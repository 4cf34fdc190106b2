package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A sentence the rules compose into several texts (a blocker's summary
// quoted by its holder's, a cause's by a checklist row, an event's message
// by the evidence and the timeline), as they record it (Quotes, a fact's
// quote, a moment's message), is printed once per object, concise or wide;
// the other places point to it. What no rule says it quotes is printed as
// it is, whatever it holds.
func TestNoSentenceTwiceInAnObjectsReport(t *testing.T) {
	ts := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	nobody := "no controller that could remove demo.example.com/release-quota is found in the cluster"
	held := "3 instances of Widget are held by finalizer demo.example.com/release-quota: " + nobody
	widget := Item{Object: ObjectRef{APIVersion: "demo.example.com/v1", Kind: "Widget", Name: "widget-1", Namespace: "w"}, DeletionTimestamp: ts, Stuck: true, Severity: Critical,
		Causes: []Cause{{Code: "FinalizerPending", Severity: Critical, Summary: nobody}}}
	crd := Item{Object: ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.demo.example.com"}, DeletionTimestamp: ts, Stuck: true, Severity: Critical,
		Causes: []Cause{
			{Code: "CRDInstancesRemaining", Severity: Critical, Summary: "3 Widget instances remain: " + held, Quotes: []string{held, nobody}, BlockedBy: []Item{widget}},
			{Code: "FinalizerPending", Severity: Critical, Summary: held, Quotes: []string{nobody}},
		}}
	refused := "validatingwebhookconfiguration shop webhook guard.shop.example.com refuses DELETE pods"
	message := "error killing pod: failed to \"KillPodSandbox\" for \"0b6f3c1e\" with KillPodSandboxError"
	pod := Item{Object: ObjectRef{APIVersion: "v1", Kind: "Pod", Name: "pay-0", Namespace: "shop"}, DeletionTimestamp: ts, Stuck: true, Severity: Critical,
		Checks: []Check{{Name: "final delete admitted", Status: Fail, Detail: "metadata.deletionGracePeriodSeconds: 5; " + refused, Quotes: []string{refused}}},
		Causes: []Cause{{Code: "AdmissionWebhookDenied", Severity: Critical, Summary: refused, Evidence: []string{"event Warning FailedKillPod 41s ago: " + message},
			Facts: []Fact{{Text: "event Warning FailedKillPod 41s ago: " + message, Field: "event", Reason: "FailedKillPod", Quote: message}}}},
		Timeline: []Moment{{Time: ts, Event: "event FailedKillPod: " + message, Reason: "FailedKillPod", Message: message}}}
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteWhy(&b, Report{Items: []Item{crd, pod}}, Style{Wide: wide}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		crdPart, podPart, _ := strings.Cut(out, "\n\npod/")
		for _, c := range []struct{ part, sentence string }{{crdPart, held}, {podPart, refused}, {podPart, message}} {
			if n := strings.Count(c.part, c.sentence); n != 1 {
				t.Errorf("wide %v: %q printed %d times:\n%s", wide, c.sentence, n, out)
			}
		}
		for _, want := range []string{
			"2. critical FinalizerPending (confidence 0.00): see cause 1",
			"metadata.deletionGracePeriodSeconds: 5; see cause 1",
			"event FailedKillPod: its message is in the evidence above",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("wide %v: no %q:\n%s", wide, want, out)
			}
		}
		if !wide && !strings.Contains(out, "└── widget.demo.example.com/widget-1 -n w  critical FinalizerPending\n") {
			t.Errorf("the blocker repeats what its holder's summary says:\n%s", out)
		}
	}
	// A short text may well appear twice: only sentences are replaced.
	if got := checkDetail(Check{Detail: "running: app", Quotes: []string{"running: app"}}, []Cause{{Summary: "running: app"}}); got != "running: app" {
		t.Errorf("a short detail replaced: %q", got)
	}
}
