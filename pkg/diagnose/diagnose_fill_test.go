package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A step's text is filled in one pass, as strings.Replacer would: a value
// that holds a {name} (cluster text) is not filled again, an unknown name
// and stray braces stay.
func TestFillInIsOnePass(t *testing.T) {
	args := []string{"finalizer", "acme.io/{objects}", "objects", "3 widgets"}
	for template, want := range map[string]string{
		"remove {finalizer} from {objects}": "remove acme.io/{objects} from 3 widgets",
		"{unknown} {objects}":               "{unknown} 3 widgets",
		"{{objects}} and {":                 "{3 widgets} and {",
		"no names":                          "no names",
		"}{objects":                         "}{objects",
		"":                                  "",
	} {
		pairs := make([]string, 0, len(args))
		for i := 0; i < len(args); i += 2 {
			pairs = append(pairs, "{"+args[i]+"}", args[i+1])
		}
		if got, replacer := fillIn(template, args), strings.NewReplacer(pairs...).Replace(template); got != want || got != replacer {
			t.Errorf("fillIn(%q) = %q, want %q (strings.Replacer: %q)", template, got, want, replacer)
		}
	}
}

// Targets are judged on several goroutines; a rule that panics on one
// reaches the caller (where the command recovers it and exits 1), instead
// of ending the process with Go's status 2, which runbooks read as "stuck".
func TestAPanickingJudgementReachesTheCaller(t *testing.T) {
	s := observed.New(time.Now())
	for range 8 {
		s.Targets = append(s.Targets, &observed.Target{})
	}
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "boom") || !strings.Contains(msg, "in a goroutine of the diagnosis") {
			t.Errorf("recovered %q, want the judgement's panic", msg)
		}
	}()
	reportOf(s, func(_ *observed.Snapshot, tg *observed.Target) report.Item {
		if tg == s.Targets[5] {
			panic("boom")
		}
		return report.Item{}
	})
	t.Error("reportOf returned without raising the panic")
}
