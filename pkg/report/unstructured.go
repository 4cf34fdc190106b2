package report

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Printable is the report as cli-runtime's printers take it (yaml, jsonpath,
// go-template): an unstructured object whose JSON escapes the runes YAML
// cannot read raw, so that -o yaml never fails on cluster text.
//
// cli-runtime's YAMLPrinter (sigs.k8s.io/yaml) marshals the object to JSON
// and reads that JSON back with go-yaml v2, whose reader refuses any raw
// rune outside YAML's printable set: DEL (U+007F), the C1 controls but NEL
// (U+0080-U+0084, U+0086-U+009F) and U+FFFE, U+FFFF ("yaml: control
// characters are not allowed": the whole report lost for one event
// message). NEL (U+0085) it takes, as a line break, and folds into a space:
// the text changes silently. encoding/json escapes the C0 controls, U+2028
// and U+2029 already, and writes invalid UTF-8 as U+FFFD, as -o json does.
// Written as \u escapes in the JSON, which YAML reads in a double-quoted
// scalar, these runes reach the YAML emitter, which writes every rune it
// cannot print raw as an escape ("\x7F", "\N", "\uFFFE"): -o yaml then holds
// exactly the strings -o json holds, visibly escaped.
//
// jsonpath reads the map itself and go-template decodes this JSON again:
// both see the exact strings. -o json does not come here (WriteJSON).
type Printable struct {
	*unstructured.Unstructured
}

// ToUnstructured turns the report into the object cli-runtime's printers take
// (yaml, jsonpath, go-template; -o json is WriteJSON).
func ToUnstructured(r Report) (*Printable, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	if err != nil {
		return nil, err
	}
	return &Printable{&unstructured.Unstructured{Object: m}}, nil
}

// MarshalJSON is the unstructured object's JSON with the runes YAML's reader
// refuses or alters escaped.
func (p *Printable) MarshalJSON() ([]byte, error) {
	b, err := p.Unstructured.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return escapeForYAML(b), nil
}

// DeepCopyObject keeps the copy printable (a printer that copies the object
// before printing it would otherwise print a bare Unstructured).
func (p *Printable) DeepCopyObject() runtime.Object {
	return &Printable{p.Unstructured.DeepCopy()}
}

// yamlUnreadable: the runes go-yaml v2 refuses raw (DEL, C1 but NEL, U+FFFE,
// U+FFFF) and NEL, which it reads as a line break. Tested over every rune
// (TestYAMLHoldsEveryRune).
func yamlUnreadable(r rune) bool {
	return r >= 0x7f && r <= 0x9f || r == 0xfffe || r == 0xffff
}

// escapeForYAML writes yamlUnreadable runes of a JSON text as \u escapes: in
// encoding/json's output they occur only inside strings, where the escape
// stands for the same rune.
func escapeForYAML(b []byte) []byte {
	first := -1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if yamlUnreadable(r) {
			first = i
			break
		}
		i += size
	}
	if first < 0 {
		return b
	}
	out := bytes.NewBuffer(make([]byte, 0, len(b)+64))
	out.Write(b[:first])
	for i := first; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if yamlUnreadable(r) {
			fmt.Fprintf(out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}
