package diagnose

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Names that look like web-0: one ends in U+3164 HANGUL FILLER (drawn as
// nothing), one in U+0338 COMBINING LONG SOLIDUS OVERLAY (a stroke through
// the 0), one in U+00A0 (a space). Their table cells show the rune escaped;
// their commands show it too, and run by bash pass the exact name.
func TestLookAlikeNamesAreShownAndTargeted(t *testing.T) {
	names := map[string]string{
		"web-0\u3164": `web-0\u3164`,
		"web-0\u0338": `web-0\u0338`,
		"web-0\u00a0": `web-0\u00a0`,
	}
	quoted := map[string]string{
		"web-0\u3164": `$'web-0\xe3\x85\xa4'`,
		"web-0\u0338": `$'web-0\xcc\xb8'`,
		"web-0\u00a0": `$'web-0\xc2\xa0'`,
	}
	var targets []*observed.Target
	for name := range names {
		targets = append(targets, heldObject("ConfigMap", "configmaps", name, 10*time.Minute, "acme.io/keep"))
	}
	rep := Diagnose(snapOf(targets...))

	var out bytes.Buffer
	if err := report.WriteList(&out, rep, report.Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteWhy(&out, rep, report.Style{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\u3164\u0338\u00a0") {
		t.Errorf("a look-alike rune reached the output raw:\n%s", &out)
	}
	for _, cell := range names {
		if !strings.Contains(out.String(), "configmap/"+cell) {
			t.Errorf("no cell shows configmap/%s:\n%s", cell, &out)
		}
	}

	dir, log := stubs(t)
	for _, it := range rep.Items {
		var commands []string
		for _, c := range it.Causes {
			for _, st := range c.Remediation {
				if st.Command != "" {
					commands = append(commands, st.Command)
				}
			}
		}
		name := it.Object.Name
		var passed bool
		for _, cmd := range commands {
			if strings.Contains(cmd, "web-0") && !strings.Contains(cmd, quoted[name]) {
				t.Errorf("%q: the command does not quote it as %s: %s", name, quoted[name], cmd)
			}
			// Printed as it is: nothing left for the renderer to escape.
			if !strings.Contains(out.String(), "$ "+cmd+"\n") {
				t.Errorf("the command is not printed as it is: %s\n%s", cmd, &out)
			}
			for _, call := range runSuggested(t, dir, log, cmd) {
				if call[0] == "kubectl" && slices.Contains(call[1:], name) {
					passed = true
				}
			}
		}
		if !passed {
			t.Errorf("no command passed kubectl %q exactly: %q", name, commands)
		}
	}
}

// The words the report shows as they are keep shellescape's quoting; the
// others are $'...' with exactly the odd runes escaped.
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"web-0":               "web-0",
		"a b":                 "'a b'",
		"it's":                `'it'"'"'s'`,
		"é":                   "'é'",
		"":                    "''",
		"web-0\u3164":         `$'web-0\xe3\x85\xa4'`,
		"a\u0338'!\\b\n\t\r":  `$'a\xcc\xb8\x27\x21\\b\n\t\r'`,
		"\x1b[2J\x7f\xff":     `$'\x1b[2J\x7f\xff'`,
		"caf\u00e9 \u3000":    `$'café \xe3\x80\x80'`,
		"web\x00x":            `$'web\\x00x'`,
		"\U000e0041 $(x) `y`": `$'\xf3\xa0\x81\x81 $(x) ` + "`y`'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
