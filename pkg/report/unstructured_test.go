package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// printersYAML is what cli-runtime's YAMLPrinter prints of ToUnstructured's
// object: -o yaml's output as kubectl's printers make it, which WriteYAML
// must equal byte for byte.
func printersYAML(t testing.TB, r Report) ([]byte, error) {
	t.Helper()
	u, err := ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = (&printers.YAMLPrinter{}).PrintObj(u, &b)
	return b.Bytes(), err
}

// asYAML prints the report as -o yaml does, and fails unless that is what
// kubectl's printer prints, whole or cut into the smallest parts.
func asYAML(t testing.TB, r Report) ([]byte, error) {
	t.Helper()
	want, printerErr := printersYAML(t, r)
	var got []byte
	var err error
	for _, partNodes := range []int{yamlPartNodes, 1} {
		var b bytes.Buffer
		err = writeYAML(&b, r, partNodes)
		if (err == nil) != (printerErr == nil) || !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("WriteYAML in parts of %d nodes (error %v):\n%s\nis not the printer's output (error %v):\n%s", partNodes, err, b.Bytes(), printerErr, want)
		}
		got = b.Bytes()
	}
	return got, err
}

// decoded is a document as a program reading it sees it.
func decoded(t testing.TB, doc []byte, unmarshal func([]byte, any) error) any {
	t.Helper()
	var v any
	if err := unmarshal(doc, &v); err != nil {
		t.Fatalf("%v in:\n%s", err, doc)
	}
	return v
}

// sameAsJSON fails unless -o yaml of r holds exactly what -o json holds.
func sameAsJSON(t testing.TB, r Report) []byte {
	t.Helper()
	y, err := asYAML(t, r)
	if err != nil {
		t.Fatalf("-o yaml: %v", err)
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded(t, y, func(b []byte, v any) error { return yaml.Unmarshal(b, v) }), decoded(t, j.Bytes(), json.Unmarshal)) {
		t.Fatalf("-o yaml does not hold what -o json holds:\n%s", y)
	}
	return y
}

// Every rune YAML's reader would refuse or alter reaches -o yaml escaped and
// comes back exact: all of the BMP (where YAML's printable set has its
// holes) and the edges of the other planes in one string, and some alone,
// first and last (where YAML trims or folds). Every rune, one at a time, was
// checked so once (a minute).
func TestYAMLHoldsEveryRune(t *testing.T) {
	var all strings.Builder
	for _, span := range [][2]rune{{0, 0xffff}, {0x10000, 0x10fff}, {0xe0000, 0xe0fff}, {0x10fff0, utf8.MaxRune}} {
		for r := span[0]; r <= span[1]; r++ {
			if utf8.ValidRune(r) {
				all.WriteRune(r)
			}
		}
	}
	sameAsJSON(t, hostile(all.String()))
	for _, r := range []rune{0, 0x1b, '\t', '\n', 0x7f, 0x80, 0x84, 0x85, 0x86, 0x9b, 0x9f, 0xa0, 0x2028, 0x2029, 0x3164, 0xfeff, 0xfffe, 0xffff, 0x1f600, 0xe0001} {
		for _, s := range []string{string(r), " " + string(r), string(r) + " ", "a" + string(r) + "b"} {
			sameAsJSON(t, hostile(s))
		}
	}
}

// The runes of the issue: -o yaml failed as a whole on them.
func TestYAMLEscapesWhatItCannotHoldRaw(t *testing.T) {
	y := sameAsJSON(t, hostile("web\x7f\u0085\u009b\ufffe\uffff\x00\x1b[2J"))
	if !bytes.Contains(y, []byte(`web\x7F\N\x9B\uFFFE\uFFFF\0\e[2J`)) {
		t.Errorf("the text is not shown with YAML's escapes:\n%s", y)
	}
}

// Strings without such runes print as they always did: one scan, no copy.
func TestEscapeForYAMLKeepsPlainJSON(t *testing.T) {
	plain := []byte(`{"a":"ünïcode \u001b \u2028","b":"ㅤ"}`)
	if got := escapeForYAML(plain); &got[0] != &plain[0] {
		t.Errorf("plain JSON was copied")
	}
	if got, want := string(escapeForYAML([]byte("{\"a\":\"\x7f\u0085\uffff\"}"))), `{"a":"\u007f\u0085\uffff"}`; got != want {
		t.Errorf("escapeForYAML = %s, want %s", got, want)
	}
}

// -o yaml never fails, whatever the cluster's text.
func FuzzYAMLReport(f *testing.F) {
	for _, s := range []string{"web-0", "\x7f", "\u0080\u0085\u009f", "\ufffe\uffff", "\x00\x1b[2J\x07", "\xed\xa0\x80\xed\xbf\xbf", "\xff\xfe", "a\u2028b", "\ufeff-", "ㅤ\u0338"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsJSON(t, hostile(s))
	})
}

// -o yaml is kubectl's printer's output, byte for byte, for reports of no
// item, of several, and of long text that YAML folds at its columns.
func TestWriteYAMLIsThePrinters(t *testing.T) {
	long := strings.Repeat("a long message, folded at the 80th column; ", 12)
	several := sample()
	for i := range 3 {
		it := hostile(fmt.Sprintf("web-%d %s", i, long)).Items[0]
		several.Items = append(several.Items, it)
	}
	empty := sample()
	empty.Items = nil
	none := sample()
	none.Items = []Item{}
	for name, r := range map[string]Report{"sample": sample(), "several": several, "no items (nil)": empty, "no items": none, "invalid UTF-8": hostile("web\xff\xfe-0 " + long)} {
		t.Run(name, func(t *testing.T) { asYAML(t, r) })
	}
}
