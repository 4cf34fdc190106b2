package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The concise report folds the blocking objects past a few groups into one
// counted line; it never drops them silently (JSON and -o wide have them all).
func TestConciseFoldsBlockersItCannotShow(t *testing.T) {
	var blockers []Item
	for i := range 7 {
		blockers = append(blockers, Item{Object: ObjectRef{Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i)},
			Stuck: true, Severity: Warning, Finalizers: []string{fmt.Sprintf("example.com/f%d", i)},
			Causes: []Cause{{Code: "FinalizerPending", Severity: Warning, Summary: fmt.Sprintf("held by example.com/f%d", i)}}})
	}
	r := Report{Items: []Item{{Object: ObjectRef{Kind: "Namespace", Resource: "namespaces", Name: "shop"}, Stuck: true, Severity: Warning,
		Causes: []Cause{{Code: "NamespaceContentRemaining", Severity: Warning, Summary: "7 objects remain", BlockedBy: blockers}}}}}
	var concise, wide bytes.Buffer
	if err := WriteWhy(&concise, r, Style{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhy(&wide, r, Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(concise.String(), "FinalizerPending"); n != 5 || !strings.Contains(concise.String(), "and 2 more objects, held 2 other ways: -o wide") {
		t.Errorf("concise: %d blocker lines, want 5 and a count of the rest:\n%s", n, concise.String())
	}
	for i := range 7 {
		if !strings.Contains(wide.String(), fmt.Sprintf("cm-%d", i)) {
			t.Errorf("-o wide lacks cm-%d", i)
		}
	}
}

// A blocker with no deletion of its own (a Gateway that uses a class being
// deleted, a snapshot being taken from a claim) is named as holding the
// object, never given a Terminating header or a "<none>" cause; a blocker
// cut off by the depth bound is not mistaken for one.
func TestBlockersWithNoDeletionOfTheirOwn(t *testing.T) {
	live := Item{Object: ObjectRef{Kind: "Gateway", Resource: "gateways.gateway.networking.k8s.io", Namespace: "shop", Name: "web"}, Causes: []Cause{}}
	cut := Item{Object: ObjectRef{Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "deep"}, Causes: []Cause{}, Skipped: []Skip{{Check: "diagnosis of pods/deep", Reason: "error", Detail: "nested deeper than 8 levels"}}}
	r := Report{Items: []Item{{Object: ObjectRef{Kind: "GatewayClass", Resource: "gatewayclasses.gateway.networking.k8s.io", Name: "shared"}, Stuck: true, Severity: Warning,
		Causes: []Cause{{Code: "ObjectInUse", Severity: Warning, Summary: "1 gateway(s) still use gatewayclass shared", BlockedBy: []Item{live, cut}}}}}}
	for _, st := range []Style{{}, {Wide: true}} {
		var out bytes.Buffer
		if err := WriteWhy(&out, r, st); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		line := func(name string) string {
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, name) {
					return l
				}
			}
			return ""
		}
		if l := line("/web"); !strings.Contains(l, "no deletion of its own to diagnose") || strings.Contains(l, "Terminating") || strings.Contains(l, "<none>") {
			t.Errorf("wide %v: the live blocker reads %q", st.Wide, l)
		}
		if l := line("/deep"); strings.Contains(l, "no deletion of its own") {
			t.Errorf("wide %v: the blocker cut by the depth bound reads %q", st.Wide, l)
		}
	}
}
