package report

import (
	"io"
	"slices"
	"strings"
)

// WatchTable is list -w's table: printed once, then a row under the same
// columns each time an object's diagnosis changes or it goes, as kubectl
// get -w adds rows.
type WatchTable struct {
	w      io.Writer
	st     Style
	widths []int
	// ambiguous are the kinds the table names with their group: later rows
	// name their objects as the table did.
	ambiguous map[string]bool
}

// NewWatchTable prints the report as list does (without the footer: rows
// follow) and keeps its column widths for the rows to come.
func NewWatchTable(w io.Writer, r Report, st Style) (*WatchTable, error) {
	st.Watching = true
	ambiguous := ambiguousKinds(r.Items)
	header, rows := listRows(r.Items, ambiguous, st)
	t := &WatchTable{w: w, st: st, widths: columnWidths(append([][]string{header}, rows...)), ambiguous: ambiguous}
	return t, WriteList(w, r, st)
}

// Changed prints the rows of items whose diagnosis changed.
func (t *WatchTable) Changed(items []Item) error {
	_, rows := listRows(items, t.ambiguous, t.st)
	return t.write(rows)
}

// Gone prints the row of an item that went: SEVERITY "-", TOP CAUSE "deleted".
func (t *WatchTable) Gone(it Item) error {
	header, rows := listRows([]Item{it}, t.ambiguous, t.st)
	sev := slices.Index(header, "SEVERITY")
	rows[0][sev], rows[0][sev+1] = "-", "deleted"
	return t.write(rows)
}

func (t *WatchTable) write(rows [][]string) error {
	var b strings.Builder
	for _, row := range rows {
		writeRow(&b, "", t.widths, row)
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}
