//go:build linux || darwin

package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A terminal is a pseudo-terminal the plugin writes to as to a user's: its
// own isTerminal says yes, so stdout is coloured and stderr shows progress.
type terminal struct {
	tty  *os.File // the plugin's side
	got  strings.Builder
	done chan struct{}
}

// fits says whether a line of a screen must fit the terminal's width:
// prose and tables must; a command (to paste whole: after "$ ", or an
// example in help), a link, a word alone
// on its line or after its label (a field path no line is wide enough for:
// words are never cut) and the tables of -o wide (as kubectl's: for wide
// terminals) need not.
func fits(args []string, line string) bool {
	wide := slices.Contains(args, "wide") && args[0] == "list"
	text := lineLabel.ReplaceAllString(line, "")
	command := strings.Contains(line, "$ ") || strings.HasPrefix(strings.TrimSpace(line), "kubectl ") // help's examples
	return !wide && !command && !strings.Contains(line, "://") && len(strings.Fields(text)) > 1
}

// lineLabel is what begins a line before its text: a tree's drawing, an
// indent, a label ("evidence: ", "1. ").
var lineLabel = regexp.MustCompile(`^[ │├└─]*(\d+\. |[a-z][a-z0-9 ]{0,15}: )?`)

// terminalWidths are the test terminals' widths: a narrow one, the
// classic one and a wide one.
var terminalWidths = []int{60, 80, 120}

func openTerminal(t *testing.T, cols int) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{tty: tty, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		_, _ = io.Copy(&term.got, ptmx) // ends when the plugin's side is closed (EIO)
		ptmx.Close()
	}()
	return term
}

// screen closes the plugin's side and returns what the terminal received,
// its line ends as the program wrote them (the tty writes "\r\n").
func (term *terminal) screen() string {
	term.tty.Close()
	<-term.done
	return strings.ReplaceAll(term.got.String(), "\r\n", "\n")
}

// A screen, and how to get the same run again: each run wants fresh fakes
// (and a clock of its own); stderr, when set, is what the terminal's stderr
// must show (its status line).
type screen struct {
	name    string
	args    []string
	clients func(t *testing.T) (func() (*kube.Clients, error), func(*Options))
	stderr  *regexp.Regexp
}

// Every screen as a terminal shows it: why (default and -o wide) for a pod,
// a namespace whose objects block it (a tree), a CRD; list, list -A and
// --group-by; wait's progress and its timeout report; list -w; explain. With
// colour on, no escape sequence is ever shown as text (colour added, then
// escaped), the only escape sequences are colours around the renderer's own
// words (and stderr's line erasing), and without its colours a screen is
// what the same run prints off a terminal.
func TestEveryScreenOnATerminal(t *testing.T) {
	replay := func(*testing.T) (func() (*kube.Clients, error), func(*Options)) { return nil, func(*Options) {} }
	live := func(objs func() []runtime.Object) func(*testing.T) (func() (*kube.Clients, error), func(*Options)) {
		return func(t *testing.T) (func() (*kube.Clients, error), func(*Options)) {
			fc := clocktesting.NewFakeClock(now)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			stepWhile(fc, 1, stop) // wait's deadline
			// Its timers only: the report's clock stays still, the same in both runs.
			return fakes(t, objs(), nil), func(o *Options) { o.clock = fc }
		}
	}
	watched := func(t *testing.T) (func() (*kube.Clients, error), func(*Options)) {
		fc := clocktesting.NewFakeClock(now)
		return playWatch(t, fc), fakeClock(fc)
	}
	var screens []screen
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json.gz"))
	for _, file := range fixtures {
		command := "why"
		if strings.HasPrefix(filepath.Base(file), "list") {
			command = "list"
		}
		for _, format := range []string{"", "wide"} {
			screens = append(screens, screen{filepath.Base(file) + " -o " + format, []string{command, "--snapshot", file, "-o", format}, replay, nil})
		}
	}
	screens = append(screens,
		screen{"list", []string{"list", "-n", "shop"}, live(cluster), nil},
		screen{"list -A", []string{"list", "-A"}, live(cluster), nil},
		screen{"list -A -o wide", []string{"list", "-A", "-o", "wide"}, live(cluster), nil},
		screen{"list --group-by", []string{"list", "-A", "--group-by", "cause"}, live(cluster), nil},
		screen{"why -A", []string{"why", "-A"}, live(cluster), nil},
		screen{"why, a namespace held by its pods", []string{"why", "-A"}, live(shopDeleted), nil},
		screen{"why -o wide, a namespace held by its pods", []string{"why", "-A", "-o", "wide"}, live(shopDeleted), nil},
		screen{"wait, timed out", []string{"wait", "ns/shop", "--timeout", "3s"}, live(shopDeleted),
			regexp.MustCompile(`\r\x1b\[Kwaiting for 1 object: \ds elapsed, \ds left \(--timeout 3s\)`)},
		screen{"list -A, a slow apiserver", []string{"list", "-A"}, slowAPIServer, regexp.MustCompile(`\r\x1b\[K\d+s: reading [^\r]*events`)},
		screen{"list -w", []string{"list", "pods", "-n", "shop", "--stuck-only", "-w"}, watched, nil},
		screen{"explain", []string{"explain"}, replay, nil},
		screen{"explain CODE", []string{"explain", "NodeUnreachable"}, replay, nil},
	)
	for _, c := range append(NewRoot(genericiooptions.IOStreams{}).Commands(), nil) {
		args := []string{"--help"}
		if c != nil {
			args = []string{c.Name(), "--help"}
		}
		screens = append(screens, screen{"help " + strings.Join(args, " "), args, replay, nil})
	}
	seen := map[string]bool{}
	for _, cols := range terminalWidths {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%d/%s", cols, sc.name), func(t *testing.T) {
				stdout, stderr := openTerminal(t, cols), openTerminal(t, cols)
				clients, customize := sc.clients(t)
				err := executeOn(t, genericiooptions.IOStreams{In: strings.NewReader(""), Out: stdout.tty, ErrOut: stderr.tty}, clients, customize, sc.args...)
				out, errOut := stdout.screen(), stderr.screen()
				if err != nil && !errors.As(err, new(*ExitCodeError)) {
					t.Fatalf("%v: %v\n%s", sc.args, err, errOut)
				}
				for _, m := range coloured.FindAllStringSubmatch(out, -1) {
					seen[m[2]] = true
				}
				coloursOnly(t, "stdout", out)
				coloursOnly(t, "stderr", strings.ReplaceAll(errOut, "\r\x1b[K", ""))
				if sc.stderr != nil && !sc.stderr.MatchString(errOut) {
					t.Errorf("stderr lacks its status line (%s): %q", sc.stderr, errOut)
				}
				if sc.name != "explain" && !strings.HasPrefix(sc.name, "help") && !colourCode.MatchString(out) {
					t.Errorf("no colour on a terminal:\n%s", out)
				}

				// The same screen as off a terminal told the same width
				// ($COLUMNS), and no line wider than the terminal but what is
				// never wrapped.
				clients, customize = sc.clients(t)
				t.Setenv("COLUMNS", strconv.Itoa(cols))
				plain, _, _ := executeWith(t, clients, customize, sc.args...)
				got := colourCode.ReplaceAllString(out, "")
				if got != plain {
					t.Errorf("on a terminal, without its colours:\n%s\noff a terminal:\n%s", got, plain)
				}
				for line := range strings.Lines(got) {
					if w := twwidth.Width(strings.TrimSuffix(line, "\n")); w > cols && fits(sc.args, line) {
						t.Errorf("a line of %d columns on a terminal of %d: %q", w, cols, line)
					}
				}
				// No word split: every word on the screen is a word of the
				// same screen on a terminal too wide to wrap anything (a
				// table cell cut short ends with its ellipsis).
				clients, customize = sc.clients(t)
				t.Setenv("COLUMNS", "10000")
				unwrapped, _, _ := executeWith(t, clients, customize, sc.args...)
				whole := map[string]bool{}
				for _, w := range strings.Fields(unwrapped) {
					whole[w] = true
				}
				for _, w := range strings.Fields(report.CutMark) { // where a long line is cut
					whole[w] = true
				}
				for _, w := range strings.Fields(got) {
					if !whole[w] && !strings.HasSuffix(w, report.Ellipsis) {
						t.Errorf("%q is not a word of the unwrapped screen: a word split, or a line cut mid-word", w)
					}
				}
			})
		}
	}
	for word := range colouredWords {
		if !seen[word] {
			t.Errorf("%q is never coloured on these screens", word)
		}
	}
}

var (
	// colourCode is an SGR sequence: what colours text.
	colourCode = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// coloured is a word between two of them, with the first's parameters
	// ("1": bold only, a heading).
	coloured = regexp.MustCompile("\x1b\\[([0-9;]*)m([^\x1b]*)\x1b\\[[0-9;]*m")
	// escapedEscape is an escape character written as text, in the ways
	// Go, C, YAML and a terminal's caret notation write it.
	escapedEscape = regexp.MustCompile(`\\x1[bB]|\\u001[bB]|\\033|\\e\[|\^\[`)
)

// colouredWords are the words the renderer colours: severities, checklist
// statuses and verdicts.
var colouredWords = map[string]bool{
	"critical": true, "warning": true, "info": true, "CRITICAL": true, "WARNING": true, "INFO": true,
	"pass": true, "fail": true, "pending": true, "STUCK": true, "progressing": true, "in grace period": true,
}

// coloursOnly fails when a screen shows an escape sequence as text, or has
// one that is not a colour around a known word or bold around a heading.
func coloursOnly(t *testing.T, stream, screen string) {
	t.Helper()
	if e := escapedEscape.FindString(screen); e != "" {
		t.Errorf("%s shows an escape sequence as text (%q):\n%s", stream, e, screen)
	}
	for _, m := range coloured.FindAllStringSubmatch(screen, -1) {
		if m[1] != "1" && !colouredWords[m[2]] {
			t.Errorf("%s colours %q, not one of the renderer's words:\n%s", stream, m[2], screen)
		}
	}
	if rest := coloured.ReplaceAllString(screen, ""); strings.Contains(rest, "\x1b") {
		t.Errorf("%s has an escape sequence that colours no word: %q", stream, rest)
	}
}

// shopDeleted is the command tests' cluster with namespace shop being
// deleted: its stuck pods hold it, a tree of blockers; ok-0 is deleted too,
// just past its deadline: progressing.
func shopDeleted() []runtime.Object {
	objs := cluster()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			if o.Name == "shop" {
				o.UID, o.DeletionTimestamp = "uid-shop", ago(5*time.Minute)
				o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
				o.Status.Phase = corev1.NamespaceTerminating
				o.Status.Conditions = []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
					Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 4 resource instances", LastTransitionTime: *ago(4 * time.Minute)}}
			}
		case *corev1.Pod:
			if o.Name == "ok-0" {
				o.DeletionTimestamp = ago(5 * time.Second)
			}
		}
	}
	return objs
}
