package report

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

// WriteYAML writes the report as -o yaml: what cli-runtime's YAMLPrinter
// prints of ToUnstructured's object, byte for byte (asYAML checks it in
// every YAML test and fuzz target), a part at a time.
//
// The printer goes through JSON, reads it back and encodes the whole
// report with go.yaml.in/yaml/v2, whose emitter keeps every event of a
// document until it ends: 41 MiB of YAML allocated 1.9 GiB. Here the same
// encoder writes parts of at most yamlPartNodes nodes, each inside the
// keys and list entries that lead to it, so that it is indented and folded
// at the columns it has in the whole document; the lines of what leads to
// it that were already written are dropped.
func WriteYAML(w io.Writer, r Report) error { return writeYAML(w, r, yamlPartNodes) }

// writeYAML writes parts of at most partNodes nodes (tests try 1, which cuts
// the report into every part it can be).
func writeYAML(w io.Writer, r Report, partNodes int) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	y := yamlWriter{w: bw, partNodes: partNodes}
	if err := y.write(nil, validStrings(m)); err != nil {
		return err
	}
	return bw.Flush()
}

// yamlPartNodes is the most nodes WriteYAML encodes at once.
const yamlPartNodes = 256

// yamlWriter writes a document a part at a time; last is the path of the
// part it wrote last: string keys and int list indexes from the root.
type yamlWriter struct {
	w         *bufio.Writer
	partNodes int
	last      []any
}

// write writes v, found at path, whole or one entry at a time.
func (y *yamlWriter) write(path []any, v any) error {
	if !splittable(path, v) || nodes(v, y.partNodes) <= y.partNodes && len(path) > 0 {
		return y.part(path, v)
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the encoder's order, for keys of ASCII letters
		for _, k := range keys {
			if err := y.write(append(slices.Clip(path), k), v[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := y.write(append(slices.Clip(path), i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

// part encodes v at path inside what leads to it and writes the lines that
// are not written yet: one line per key on the path before v's own, then v.
// The first line written begins a list entry ("- ") only if that entry was
// not begun by an earlier part.
func (y *yamlWriter) part(path []any, v any) error {
	doc := v
	for i := len(path) - 1; i >= 0; i-- {
		switch step := path[i].(type) {
		case string:
			doc = map[string]any{step: doc}
		case int:
			doc = []any{doc}
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	shared := 0 // how much of the path the last part shares
	for shared < len(path) && shared < len(y.last) && y.last[shared] == path[shared] {
		shared++
	}
	if len(path) == 0 {
		_, err = y.w.Write(b)
		return err
	}
	first := true
	for i, step := range path[:len(path)-1] {
		if !isKey(step) {
			continue
		}
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		b = rest
		if i < shared {
			continue // written with an earlier part
		}
		if err := y.line(line, i > 0 && !isKey(path[i-1]) && i-1 < shared); err != nil {
			return err
		}
		first = false
	}
	if n := len(path); first && n > 1 && isKey(path[n-1]) && !isKey(path[n-2]) && n-2 < shared {
		// v is not the first entry of the map in a list entry that holds it
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		if err := y.line(line, true); err != nil {
			return err
		}
		b = rest
	}
	y.last = path
	_, err = y.w.Write(b)
	return err
}

// line writes one line, its list entry's "- " as spaces when the entry was
// begun above.
func (y *yamlWriter) line(line []byte, begun bool) error {
	if begun {
		if i := bytes.IndexFunc(line, func(r rune) bool { return r != ' ' }); i >= 0 && bytes.HasPrefix(line[i:], []byte("- ")) {
			line = append(append(bytes.Clone(line[:i]), "  "...), line[i+2:]...)
		}
	}
	y.w.Write(line)
	return y.w.WriteByte('\n')
}

// splittable: v can be written an entry at a time. A map's keys must sort
// as the encoder sorts them (ASCII letters: the report's field names) and
// each take one line; an entry of a list in a list shares a line with its
// list's entry, so such a list is written whole.
func splittable(path []any, v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			if k == "" || !isLetters(k) {
				return false
			}
		}
		return len(v) > 0
	case []any:
		if len(path) > 0 && !isKey(path[len(path)-1]) {
			return false
		}
		return len(v) > 0
	}
	return false
}

// isKey: a step of a path is a map's key, not a list's index.
func isKey(step any) bool {
	_, key := step.(string)
	return key
}

func isLetters(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// nodes counts v's nodes, up to more than limit.
func nodes(v any, limit int) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if n += nodes(x, limit-n); n > limit {
				return n
			}
		}
	case []any:
		for _, x := range v {
			if n += nodes(x, limit-n); n > limit {
				return n
			}
		}
	}
	return n
}

// validStrings makes every string in a JSON-shaped value valid UTF-8 as
// encoding/json writes it, as the printer's JSON did (the encoder writes a
// string that is not as !!binary).
func validStrings(v any) any {
	switch v := v.(type) {
	case string:
		return validUTF8(v)
	case map[string]any:
		for k, x := range v {
			if valid := validUTF8(k); valid != k {
				delete(v, k)
				k = valid
			}
			v[k] = validStrings(x)
		}
	case []any:
		for i, x := range v {
			v[i] = validStrings(x)
		}
	}
	return v
}

// validUTF8 is s with each byte that begins no rune written as U+FFFD, as
// encoding/json writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
