package report

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxText is how much of one cluster-sourced text a person is shown; JSON
// and YAML keep it whole.
const maxText = 2000

// maxTimeline is how many moments of an object's timeline a person is shown.
const maxTimeline = 20

// Safe makes cluster-sourced text printable on one line of a terminal:
// control characters (C0 and C1, ESC, DEL, CR, BEL, newlines, tabs), Unicode
// bidirectional overrides and invalid UTF-8 are shown escaped, so that no
// text from the cluster can move the cursor, clear the screen, set a window
// title or forge a line of the report; very long texts are cut, saying so.
func Safe(s string) string {
	if len(s) > maxText {
		cut := maxText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return Safe(s[:cut]) + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
	}
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune: a control character, or a format character that reorders or
// hides text (bidirectional overrides and isolates, zero-width marks).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// painted is text the renderer coloured itself: printed as it is.
type painted string
