package report

import (
	"fmt"
	"reflect"
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
// title or forge a line of the report; so are the runes that draw nothing,
// look like a space or strike through the letter before them (Escaped), so
// that no name can pass for another; very long texts are cut, saying so.
func Safe(s string) string {
	if len(s) > maxText {
		cut := maxText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return Safe(s[:cut]) + fmt.Sprintf("... (%s)", Count(len(s)-cut, "more byte"))
	}
	if !Escaped(s) {
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
		case unsafeRune(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Escaped reports whether Safe shows some of s escaped (cutting it aside):
// a rune it escapes, or bytes that are not UTF-8. Suggested commands quote
// such words so that they show them escaped too (diagnose's command).
func Escaped(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// EscapedRune reports whether Safe shows r escaped.
func EscapedRune(r rune) bool { return unsafeRune(r) }

// unsafe is what Safe escapes, besides invalid UTF-8:
//   - control characters (Cc), and format characters (Cf), which reorder or
//     hide text: bidirectional overrides and isolates, zero-width marks,
//     the soft hyphen, tags;
//   - the rest of Unicode's Default_Ignorable_Code_Point (Cf, Variation_Selector
//     and Other_Default_Ignorable_Code_Point): runes a renderer draws as
//     nothing, such as the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0,
//     the combining grapheme joiner U+034F, the variation selectors, Khmer's
//     inherent vowels U+17B4 and U+17B5;
//   - private use (Co): runes with no agreed glyph, drawn as nothing, a
//     box or whatever a font puts there (and the wrapping's own glue,
//     which no cluster text may hold);
//   - invisible: glyphs that are blank (U+2800 braille pattern blank, U+1D159
//     musical null notehead), as the invisible-character lists of editors and
//     code hosts have them, and the noncharacters (U+FFFE, U+FFFF, U+FDD0...),
//     which have no glyph;
//   - every White_Space rune but the ASCII space: a no-break, en, em, thin,
//     ideographic... space (U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F,
//     U+3000) or a line or paragraph separator (U+2028, U+2029) is drawn as
//     a space or nothing, so `web-0` followed by U+3000 looks like `web-0`
//     and `web 0` with U+00A0 looks like a name with an ASCII space, and in a
//     table such a rune looks like a column gap; cluster names cannot hold
//     the ASCII space (but RBAC names), messages hold it everywhere, so only
//     it is printed as it is;
//   - overlays: the combining marks drawn through the letter before them
//     (canonical combining class Overlay, 1, in the generic combining blocks:
//     the tilde, stroke and solidus overlays U+0334-U+0338, U+20D2, U+20D3,
//     U+20D8-U+20DA, U+20E5, U+20E6, U+20EA, U+20EB, and the musical tremolos
//     U+1D167-U+1D169; `web-0` with U+0338 reads as `web-0̸`, with U+20E5 as a
//     backslash), and the enclosing marks (Me: circle, square, keycap, the
//     parentheses overlay U+1ABE...). The Overlay marks of real scripts
//     (Vedic U+1CD4, U+1CE2-U+1CE8, Kharoshthi, Bassa Vah, Duployan) are left,
//     as are all other combining marks: accents (U+0301), Devanagari signs...
var unsafe = []*unicode.RangeTable{
	unicode.Cc, unicode.Cf,
	unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Co,
	unicode.Noncharacter_Code_Point, invisible,
	unicode.White_Space,
	overlays, unicode.Me,
}

// invisible: blank glyphs.
var invisible = &unicode.RangeTable{
	R16: []unicode.Range16{{Lo: 0x2800, Hi: 0x2800, Stride: 1}},
	R32: []unicode.Range32{{Lo: 0x1d159, Hi: 0x1d159, Stride: 1}},
}

// overlays: the Overlay combining marks (canonical combining class 1) of the
// generic combining blocks (Unicode 15).
var overlays = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0334, Hi: 0x0338, Stride: 1},
		{Lo: 0x20d2, Hi: 0x20d3, Stride: 1},
		{Lo: 0x20d8, Hi: 0x20da, Stride: 1},
		{Lo: 0x20e5, Hi: 0x20e6, Stride: 1},
		{Lo: 0x20ea, Hi: 0x20eb, Stride: 1},
	},
	R32: []unicode.Range32{{Lo: 0x1d167, Hi: 0x1d169, Stride: 1}},
}

// unsafeRune: a rune Safe escapes (unsafe), the ASCII space aside.
func unsafeRune(r rune) bool {
	if r >= ' ' && r < 0x7f {
		return false // printable ASCII: most text, quickly
	}
	return unicode.In(r, unsafe...)
}

// painted is text ready for a terminal: every piece of it made safe (Safe),
// and the colours the renderer added after (Style.paint). It is printed as
// it is, never escaped again: a colour is never shown as text.
type painted string

// safef formats as fmt.Sprintf does, every string argument (whatever its
// type: Severity, SkipReason...) made safe and every painted one kept: the
// one way cluster text, colours and the renderer's words make a line.
func safef(format string, args ...any) painted {
	for i, a := range args {
		if _, ok := a.(painted); ok {
			continue
		}
		if v := reflect.ValueOf(a); v.Kind() == reflect.String {
			args[i] = Safe(v.String())
		}
	}
	return painted(fmt.Sprintf(format, args...))
}

// cells is a row of a table, each value shown as safef shows it; the
// strings, most cells of thousands of rows, without formatting them.
func cells(values ...any) []string {
	row := make([]string, len(values))
	for i, v := range values {
		switch s := v.(type) {
		case painted:
			row[i] = string(s)
		case string:
			row[i] = Safe(s)
		default:
			row[i] = string(safef("%v", v))
		}
	}
	return row
}
