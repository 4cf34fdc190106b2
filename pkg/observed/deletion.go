package observed

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DeletionTime is u's metadata.deletionTimestamp as GetDeletionTimestamp
// reads it (absent, empty or unreadable: not being deleted), without the
// allocations: the scan and the rules ask it several times of each of
// thousands of held objects.
func DeletionTime(u *unstructured.Unstructured) (time.Time, bool) {
	md, _ := u.Object["metadata"].(map[string]any)
	text, _ := md["deletionTimestamp"].(string)
	if text == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, text)
	if err != nil || t.IsZero() {
		return time.Time{}, false
	}
	return t.Local(), true
}
