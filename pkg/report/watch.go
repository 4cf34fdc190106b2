package report

import (
	"io"
	"slices"

	"github.com/olekukonko/tablewriter/tw"
)

// WatchTable is list -w's table: printed once, then a row under the same
// columns each time an object's diagnosis changes or it goes, as kubectl
// get -w adds rows.
type WatchTable struct {
	w  io.Writer
	st Style
	// widths are the columns' widths in the first table, which the rows
	// keep; shrink are the columns whose cells are cut to them (the table
	// fits the terminal), the others taking the room they need.
	widths tw.Mapper[int, int]
	shrink []int
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
	shrink := listShrink(header)
	t := &WatchTable{w: w, st: st, widths: fitColumns(header, rows, st.fit(), shrink...), ambiguous: ambiguous}
	if st.fit() > 0 {
		t.shrink = shrink
	}
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

// write prints each row on its own under the table's columns. A cell wider
// than its column is cut to it when the table fits the terminal; else it
// takes the room it needs, moving the rest of its row only, as kubectl get
// -w does.
func (t *WatchTable) write(rows [][]string) error {
	for _, row := range rows {
		cutRow(row, t.widths, t.shrink)
		if err := alignRows(t.w, "", [][]string{row}, t.widths); err != nil {
			return err
		}
	}
	return nil
}

// widen is widths with each column widened to the widest of the rows'
// cells in it, as tablewriter measures them.
func widen(widths tw.Mapper[int, int], rows ...[]string) tw.Mapper[int, int] {
	out := widths.Clone()
	for _, row := range rows {
		for i, cell := range row {
			out.Set(i, max(out.Get(i), cellWidth(cell)))
		}
	}
	return out
}
