package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
)

// jsonIndent is kubectl's -o json indent.
const jsonIndent = "    "

// WriteJSON writes the report as -o json does: four-space indent, the
// fields in the schema's order (apiVersion and kind first, as kubectl prints
// a typed object). The bytes are json.Encoder's for the whole report, but
// the items are encoded apart (compact, then indented by appendIndented)
// and written as they come, a batch at a time: a report of hundreds of
// items never sits whole in memory as text, nor converted to a map
// (ToUnstructured) and re-indented, which took twice the time and ten times
// the memory. A batch's items are encoded on every CPU: 17 MB of JSON for
// three thousand held objects took a tenth of list -A's time on one.
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
	slots := make([]itemSlot, min(len(items), itemBatch))
	for start := 0; start < len(items); start += len(slots) {
		batch := items[start:min(start+len(slots), len(items))]
		parallel.Run("the JSON encoding", runtime.GOMAXPROCS(0), len(batch), func(i int) { slots[i].encode(&batch[i]) })
		for i := range batch {
			if slots[i].err != nil {
				return slots[i].err
			}
			if start+i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n" + jsonIndent + jsonIndent)
			bw.Write(slots[i].indented.Bytes())
		}
	}
	if len(items) > 0 {
		bw.WriteString("\n" + jsonIndent)
	}
	bw.WriteString("]")
	bw.Write(after)
	return bw.Flush()
}

// itemBatch is how many items are encoded at once: enough to keep every
// CPU busy, few enough that their text stays small (some 6 KB each).
const itemBatch = 64

// itemSlot encodes one item of a batch, its buffers reused by the next.
type itemSlot struct {
	compact, indented bytes.Buffer
	enc               *json.Encoder
	err               error
}

func (s *itemSlot) encode(it *Item) {
	if s.enc == nil {
		s.enc = json.NewEncoder(&s.compact)
	}
	s.compact.Reset()
	s.indented.Reset()
	if s.err = s.enc.Encode(it); s.err == nil {
		appendIndented(&s.indented, s.compact.Bytes(), jsonIndent+jsonIndent, jsonIndent)
	}
}

// encoder indents as kubectl does, each line after the first prefixed.
func encoder(w io.Writer, prefix string) *json.Encoder {
	e := json.NewEncoder(w)
	e.SetIndent(prefix, jsonIndent)
	return e
}
