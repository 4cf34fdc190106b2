package report

import (
	"strings"
	"testing"
)

// An entry is wrapped to the width given, a code span never cut; labels
// are bold only on a terminal; steps are numbered with their risk as why
// words it; the Detected part comes last, as a sentence.
func TestWriteExplanation(t *testing.T) {
	e := Explanation{Code: "NodeGone", Title: "node is gone", Docs: "https://example.com/causes.md#nodegone", Detected: "v0.1.",
		Parts: []Part{
			{Label: "Signal", Text: []string{"the node named by `spec.nodeName` is gone: `kubectl get node NAME` says so"}},
			{Label: "With `--kubelet`", Nested: true, Text: []string{"more"}},
			{Label: "Remediation", Steps: []Step{{Action: "wait for pod GC", Risk: "none", RiskLevel: RiskNone},
				{Action: "force delete", Risk: "low: the node is gone, so nothing of the pod runs any more", RiskLevel: RiskLow}}},
		}}
	var b strings.Builder
	if err := WriteExplanation(&b, e, Style{Width: 40}); err != nil {
		t.Fatal(err)
	}
	want := `NodeGone: node is gone

Signal
  the node named by spec.nodeName is
  gone: kubectl get node NAME says so

  With --kubelet
    more

Remediation
  1. wait for pod GC
     risk: none
  2. force delete
     risk: low: the node is gone, so
           nothing of the pod runs any
           more

Detected since v0.1.
More: https://example.com/causes.md#nodegone
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteExplanation(&b, e, Style{Color: true, Width: 40}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[1mSignal\x1b[22m") && !strings.Contains(b.String(), "\x1b[1mSignal\x1b[0m") {
		t.Errorf("no bold label on a terminal: %q", b.String())
	}
	b.Reset()
	p := &printer{w: &b, width: 40}
	p.wrapped("  ", "  ", "to check it, see `kubectl get node NAME -o wide` now")
	if b.String() != "  to check it, see\n  kubectl get node NAME -o wide now\n" {
		t.Errorf("a code span cut: %q", b.String())
	}
}
