package report

import (
	"bytes"
	"testing"
)

// TestNarrowProseTableLayout: where the room beside the other columns is
// narrower than minProse, each row's prose goes on the lines under it, the
// rows laid out as the table's would be (under an indent, columns three
// spaces apart, nothing at a line's end).
func TestNarrowProseTableLayout(t *testing.T) {
	header := []string{"CHECK", "STATUS", "DETAIL"}
	rows := [][]string{
		{"containers stopped", "pass", "all 2 containers exited (app: 0, sidecar: 137)"},
		{"volumes unmounted", "pending", "1 of 3 volumes still mounted: data"},
	}
	var b bytes.Buffer
	if err := writeProseTable(&b, "│  ", header, rows, 50); err != nil {
		t.Fatal(err)
	}
	want := "│  CHECK                STATUS\n" +
		"│  containers stopped   pass\n" +
		"│      all 2 containers exited (app: 0, sidecar:\n" +
		"│      137)\n" +
		"│  volumes unmounted    pending\n" +
		"│      1 of 3 volumes still mounted: data\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
