package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The namespace controller's conditions stand in for a scan of every type
// only when they are all there, written since the deletion, and say that
// discovery and deletion went through; pods named as left mean the other
// types are not listed yet (ordered deletion).
func TestContentIndex(t *testing.T) {
	current := func(conds ...corev1.NamespaceCondition) *corev1.Namespace {
		return terminatingNamespace(10*time.Minute, allConditions(conds...)...)
	}
	remaining := func(msg string) corev1.NamespaceCondition {
		return nsCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", msg)
	}
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	configmaps := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		ns   *corev1.Namespace
		left map[schema.GroupResource]int
		why  string
	}{
		{"the types named", current(remaining("Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 3 resource instances")),
			map[schema.GroupResource]int{configmaps: 1, widgets: 3}, ""},
		{"nothing left", current(), map[schema.GroupResource]int{}, ""},
		{"no conditions yet", terminatingNamespace(10 * time.Minute), nil, "has not written its"},
		{"discovery failed", current(nsCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", "Discovery failed for some groups")),
			nil, "NamespaceDeletionDiscoveryFailure condition is True"},
		{"content failed", current(nsCond(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types")),
			nil, "NamespaceDeletionContentFailure condition is True"},
		{"pods first", current(remaining("Some resources are remaining: pods. has 2 resource instances")), nil, "pods remain"},
		{"a message it cannot read", current(remaining("something else")), nil, "names no type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, why := ContentIndex(tc.ns)
			if tc.why == "" && (why != "" || len(left) != len(tc.left)) || tc.why != "" && !strings.Contains(why, tc.why) {
				t.Fatalf("left %v, why %q; want %v, %q", left, why, tc.left, tc.why)
			}
			for gr, n := range tc.left {
				if left[gr] != n {
					t.Errorf("%s: %d, want %d", gr, left[gr], n)
				}
			}
		})
	}
	// Conditions from an earlier deletion say nothing of this one.
	ns := current(remaining("Some resources are remaining: configmaps. has 1 resource instances"))
	later := metav1.NewTime(now.Add(-30 * time.Second)) // after the conditions, written a minute ago
	ns.DeletionTimestamp = &later
	if _, why := ContentIndex(ns); !strings.Contains(why, "older than the deletion") {
		t.Errorf("stale conditions: %q", why)
	}
}
