package diagnose

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A held object a scan read as metadata is read in full when a controller
// wrote it since its deletion began, to the second; a write in the second
// it was created is its creation (created and deleted within a second).
func TestReadInFullWhenWrittenSinceDeletion(t *testing.T) {
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                      string
		created, written, deleted time.Time
		want                      bool
	}{
		{"written after the deletion", base, base.Add(time.Minute), base.Add(30 * time.Second), true},
		{"written in the deletion's second, created before", base, base.Add(time.Minute), base.Add(time.Minute), true},
		{"written before the deletion", base, base.Add(time.Second), base.Add(time.Minute), false},
		{"created, written and deleted in one second", base, base, base, false},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "acme.io/v1", "kind": "Widget"}}
		u.SetNamespace("shop")
		u.SetName("w")
		u.SetFinalizers([]string{"acme.io/cleanup"})
		u.SetCreationTimestamp(metav1.NewTime(tc.created))
		deleted := metav1.NewTime(tc.deleted)
		u.SetDeletionTimestamp(&deleted)
		u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "acme-controller", "operation": "Update", "time": tc.written.Format(time.RFC3339)}}
		target := &observed.Target{Ref: observed.ObjectRef{Kind: "Widget", Namespace: "shop", Name: "w"}, Object: u}
		if got := Needs(target).Has(ObjectEvidence); got != tc.want {
			t.Errorf("%s: read in full %v, want %v", tc.name, got, tc.want)
		}
	}
}
