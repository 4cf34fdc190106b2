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
	if n := strings.Count(concise.String(), "FinalizerPending"); n != 5 || !strings.Contains(concise.String(), "and 2 more object(s), held 2 other way(s): -o wide") {
		t.Errorf("concise: %d blocker lines, want 5 and a count of the rest:\n%s", n, concise.String())
	}
	for i := range 7 {
		if !strings.Contains(wide.String(), fmt.Sprintf("cm-%d", i)) {
			t.Errorf("-o wide lacks cm-%d", i)
		}
	}
}
