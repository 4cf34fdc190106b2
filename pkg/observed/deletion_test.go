package observed

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DeletionTime reads what GetDeletionTimestamp reads, whatever the field holds.
func TestDeletionTimeAsGetDeletionTimestamp(t *testing.T) {
	for _, value := range []any{nil, "", "null", "yesterday", "2026-11-28T02:30:00Z", "2026-11-28T03:30:00+01:00", "0001-01-01T00:00:00Z", 42, map[string]any{}} {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
		if value != nil {
			u.Object["metadata"].(map[string]any)["deletionTimestamp"] = value
		}
		got, deleted := DeletionTime(u)
		want := u.GetDeletionTimestamp()
		if deleted != (want != nil) || (want != nil && !got.Equal(want.Time)) {
			t.Errorf("%#v: %v %v, GetDeletionTimestamp %v", value, got, deleted, want)
		}
	}
	if _, deleted := DeletionTime(&unstructured.Unstructured{Object: map[string]any{}}); deleted {
		t.Error("no metadata: not deleted")
	}
}
