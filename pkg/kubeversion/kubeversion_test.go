package kubeversion

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestOrderedNamespaceDeletionByRelease(t *testing.T) {
	for minor, want := range map[int]bool{0: true, 29: false, 30: false, 31: false, 32: false, 33: true, 34: true, 37: true} {
		if got := OrderedNamespaceDeletion.On(minor); got.On != want || got.Why == "" {
			t.Errorf("1.%d: %+v, want on=%t", minor, got, want)
		}
	}
	if why := OrderedNamespaceDeletion.On(33).Why; !strings.Contains(why, "assumes the default") {
		t.Errorf("1.33 (a default a cluster can change): %q", why)
	}
	if why := OrderedNamespaceDeletion.On(34).Why; strings.Contains(why, "assumes") {
		t.Errorf("1.34 (locked): %q", why)
	}
}

func TestMinor(t *testing.T) {
	for in, want := range map[string]int{"v1.31.14": 31, "v1.33.2-eks-1234": 33, "v1.37.0-rc.1": 37, "1.30": 30, "": 0, "v2.1.0": 0, "garbage": 0} {
		if got := Minor(in); got != want {
			t.Errorf("Minor(%q) = %d, want %d", in, got, want)
		}
	}
}

// docs/versions.md lists every gate the rules consult, with its releases.
func TestDocsListEveryGate(t *testing.T) {
	doc, err := os.ReadFile("../../docs/versions.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range Gates {
		row := fmt.Sprintf("| `%s` | %s | %s | %s |", g.Name, release(g.Since), release(g.DefaultOn), release(g.Locked))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/versions.md has no row %q", row)
		}
	}
}

func release(minor int) string {
	if minor == 0 {
		return "never"
	}
	return fmt.Sprintf("1.%d", minor)
}
