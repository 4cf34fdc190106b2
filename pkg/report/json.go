package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonIndent is kubectl's -o json indent.
const jsonIndent = "    "

// WriteJSON writes the report as -o json does: four-space indent, the
// fields in the schema's order (apiVersion and kind first, as kubectl prints
// a typed object). The bytes are json.Encoder's for the whole report, but
// the items are encoded one at a time through reused buffers (compact, then
// indented by appendIndented) and written as they come: a report of
// hundreds of items never sits whole in memory as text, nor converted to a
// map (ToUnstructured) and re-indented, which took twice the time and ten
// times the memory.
func WriteJSON(w io.Writer, r Report) error {
	items := r.Items
	r.Items = nil
	var head bytes.Buffer
	if err := encoder(&head, "").Encode(r); err != nil {
		return err
	}
	// The report without its items has `"items": null` where they go.
	before, after, ok := bytes.Cut(head.Bytes(), []byte(`"items": null`))
	if !ok {
		return fmt.Errorf("encoding the report: no items field")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(before)
	bw.WriteString(`"items": [`)
	var compact, item bytes.Buffer
	enc := json.NewEncoder(&compact)
	for i := range items {
		compact.Reset()
		if err := enc.Encode(&items[i]); err != nil {
			return err
		}
		item.Reset()
		appendIndented(&item, compact.Bytes(), jsonIndent+jsonIndent, jsonIndent)
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n" + jsonIndent + jsonIndent)
		bw.Write(item.Bytes())
	}
	if len(items) > 0 {
		bw.WriteString("\n" + jsonIndent)
	}
	bw.WriteString("]")
	bw.Write(after)
	return bw.Flush()
}

// encoder indents as kubectl does, each line after the first prefixed.
func encoder(w io.Writer, prefix string) *json.Encoder {
	e := json.NewEncoder(w)
	e.SetIndent(prefix, jsonIndent)
	return e
}
