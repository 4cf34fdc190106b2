package diagnose

import (
	"strings"
	"testing"
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
