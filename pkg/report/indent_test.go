package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// appendIndented indents as json.Indent does, byte for byte, whatever valid
// JSON it is given compact (as json.Marshal writes it): the seeds are the
// shapes a report has (empty and nested objects and arrays, escapes and
// brackets inside strings, numbers, literals).
func FuzzIndentAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[{}]}`, `[1,2.5e-7,true,false,null]`,
		`{"text":"a \"quoted\" [bracket] {brace}, colon: \\ back\\\\slash","n":-3}`,
		`{"items":[{"object":{"kind":"Pod","name":"web-0"},"causes":[{"code":"X","evidence":["a","b"]}]}]}`,
		`"just a string"`, `  { "spaced" : [ 1 , { } ] }  `, `{"u":"\u003c\u2028é"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(in)); err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "        ", "    "); err != nil {
			t.Fatal(err)
		}
		appendIndented(&got, compact.Bytes(), "        ", "    ")
		if got.String() != want.String() {
			t.Errorf("indented %q:\n%s\nwant\n%s", compact.String(), got.String(), want.String())
		}
		// Whitespace between tokens is dropped, as Indent drops it.
		got.Reset()
		appendIndented(&got, bytes.TrimSpace([]byte(in)), "        ", "    ")
		if got.String() != want.String() {
			t.Errorf("indented %q as given:\n%s\nwant\n%s", in, got.String(), want.String())
		}
	})
}
