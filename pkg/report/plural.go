package report

import (
	"fmt"
	"strings"
)

// Count is n and a noun phrase whose last word is plural unless n is 1:
// Count(1, "object") is "1 object", Count(3, "more step") "3 more steps".
// Every count printed for a person goes through it, never "(s)".
func Count(n int, noun string) string {
	if n != 1 {
		noun = Plural(noun)
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// FirstFew joins the first few names and counts the rest. A list is named
// in full once (an item's finalizers: up to 317 bytes each, hundreds of
// them), not in every sentence about it.
func FirstFew(names []string) string {
	if len(names) <= fewShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(names[:fewShown], ", "), len(names)-fewShown)
}

// fewShown is how many names FirstFew shows.
const fewShown = 5

// Plural is a noun phrase with its last word made plural by the regular
// English rules, enough for the nouns and kinds the plugin counts (an
// ingress, two ingresses; a policy, two policies; a gateway, two gateways).
func Plural(noun string) string {
	lower := strings.ToLower(noun)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return noun + "es"
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}
