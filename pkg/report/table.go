package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteProseTable prints a table of plain text whose last column is prose
// (writeProseTable), each cell made safe.
func WriteProseTable(w io.Writer, header []string, rows [][]string, width int) error {
	safe := make([][]string, len(rows))
	for i, r := range rows {
		safe[i] = cells(toAny(r)...)
	}
	return writeProseTable(w, "", header, safe, width)
}

// minProse is the narrowest a table's last column of prose is wrapped to
// beside the others; narrower, it goes under them.
const minProse = 30

// writeProseTable prints a table whose last column is prose (a checklist's
// DETAIL, explain's MEANING), wrapped to the room the other columns leave
// of width (0: whole); where that room is narrower than minProse (a narrow
// terminal, a deep tree), each row's prose goes on the lines under it.
func writeProseTable(w io.Writer, indent string, header []string, rows [][]string, width int) error {
	last := len(header) - 1
	widths := widen(nil, append([][]string{header[:last]}, rows...)...)
	left := twwidth.Width(indent)
	for col := range last {
		left += widths.Get(col) + len(columnGap)
	}
	if width <= 0 || width-left >= minProse {
		for _, r := range rows {
			if width > 0 {
				r[last] = strings.Join(wrapText("", "", r[last], width-left), "\n")
			}
		}
		return writeTable(w, indent, header, rows)
	}
	var b bytes.Buffer
	_ = alignRows(&b, indent, [][]string{header[:last]}, widths) // a buffer takes every write
	under := trunk.Replace(indent) + hangIndent
	for _, r := range rows {
		_ = alignRows(&b, indent, [][]string{r[:last]}, widths)
		for _, l := range wrapText(under, under, r[last], width) {
			b.WriteString(l + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTable prints rows the way kubectl does: no borders, no rules,
// left-aligned columns three spaces apart, each as wide as its widest cell,
// headers as given, each line after indent. The cells are printed as they are
// (cells makes them), colours included: they take no width.
//
// The three spaces between columns are tablewriter's column separator, not
// the cells' right padding: a padding is a fill character, which the
// Blueprint renderer repeats once per column of width the cell lacks, so a
// right padding of "   " filled three times too much and the renderer cut
// the cell back to its width with twwidth.Truncate, which ends any text it
// cuts that holds an escape sequence with a reset (\x1b[0m). That was the
// stray reset after a coloured cell's blanks, before the next cell (and the
// blanks before it stayed at the end of a line). Without padding, cells are
// filled with single spaces to their width exactly and never cut: nothing
// is added to a colour.
func writeTable(w io.Writer, indent string, header []string, rows [][]string) error {
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoFormat: tw.Off},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		// The indent is the first column's left padding, written once.
		Padding: tw.CellPadding{Global: tw.PaddingNone, PerColumn: []tw.Padding{{Left: indent, Overwrite: true}}},
	}
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbolCustom("kubectl").WithColumn(columnGap),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.On},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{Header: cell, Row: cell}),
		// Cells are kept whole, spaces and all: WrapNone is the zero value,
		// which WithConfig takes for "unset" (wrapping then joins a cell's
		// words with single spaces wherever widths are given).
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(toAny(header)...)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	return writeTrimmed(w, buf.String())
}

// cellWidth is a cell's width on screen: its length when it is printable
// ASCII, as the thousands of names and verdicts of a list are, without
// tablewriter's cache; else what tablewriter measures (wide and combining
// runes, colour).
func cellWidth(s string) int {
	for i := range len(s) {
		if s[i] < ' ' || s[i] > '~' {
			return twwidth.Width(s)
		}
	}
	return len(s)
}

// alignRows prints rows as writeTable lays them out (each column as wide as
// widths says or as its widest cell, three spaces apart, nothing at a line's
// end), one row a line after indent: the cells are single lines (cells makes
// them safe).
// List's tables, which grow with the cluster, are printed so: tablewriter
// takes 10 µs and 100 allocations a row (30 ms for 3,000 objects, a tenth of
// list -A's CPU), this a few hundred nanoseconds; it measures cells with
// tablewriter's own width (colours take none, wide runes two), and
// TestAlignRowsAsTablewriter holds the two layouts equal.
func alignRows(w io.Writer, indent string, rows [][]string, widths tw.Mapper[int, int]) error {
	widths = widen(widths, rows...)
	var b bytes.Buffer
	for _, row := range rows {
		line := b.Len()
		b.WriteString(indent)
		for col, cell := range row {
			if col > 0 {
				b.WriteString(columnGap)
			}
			b.WriteString(cell)
			if col < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths.Get(col)-cellWidth(cell)))
			}
		}
		b.Truncate(line + len(bytes.TrimRight(b.Bytes()[line:], " ")))
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTrimmed drops the blanks at the end of each line, as kubectl prints
// none: tablewriter pads every cell to its column's width, the last column's
// too, and has no setting to leave the last one unpadded.
func writeTrimmed(w io.Writer, s string) error {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// columnGap is what separates a table's columns, as in kubectl's tables.
const columnGap = "   "

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Ellipsis ends a table cell cut to fit its column.
const Ellipsis = "…"

// minColumn is the narrowest a column is cut to (its header if wider):
// enough to tell most names apart by their beginning.
const minColumn = 8

// fitColumns cuts the cells of the columns listed in shrink, each ending
// with Ellipsis, so that the table's lines fit width (0: any width): one
// column at a time, the widest first, none narrower than its header or
// minColumn (a table that cannot fit then is as narrow as it can be). It
// returns the columns' widths, which later rows keep (list -w).
func fitColumns(header []string, rows [][]string, width int, shrink ...int) tw.Mapper[int, int] {
	widths := widen(nil, append([][]string{header}, rows...)...)
	if width <= 0 {
		return widths
	}
	total := len(columnGap) * (widths.Len() - 1)
	for _, w := range widths {
		total += w
	}
	floor := func(col int) int {
		if col < len(header) {
			return max(minColumn, twwidth.Width(header[col]))
		}
		return minColumn
	}
	for total > width {
		widest := -1
		for _, col := range shrink {
			if widths.Get(col) > floor(col) && (widest < 0 || widths.Get(col) > widths.Get(widest)) {
				widest = col
			}
		}
		if widest < 0 {
			break
		}
		widths.Set(widest, widths.Get(widest)-1)
		total--
	}
	for _, row := range rows {
		cutRow(row, widths, shrink)
	}
	return widths
}

// cutRow cuts a row's cells in the shrink columns to the columns' widths.
func cutRow(row []string, widths tw.Mapper[int, int], shrink []int) {
	for _, col := range shrink {
		if col < len(row) && twwidth.Width(row[col]) > widths.Get(col) {
			row[col] = twwidth.Truncate(row[col], widths.Get(col)-twwidth.Width(Ellipsis)) + Ellipsis
		}
	}
}
