package report

import (
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// WriteTable prints a table of plain text as every table of the plugin is
// printed, each cell made safe.
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	safe := make([][]string, len(rows))
	for i, r := range rows {
		safe[i] = cells(toAny(r)...)
	}
	return writeTable(w, "", header, safe)
}

// writeTable prints rows the way kubectl does: no borders, no rules,
// left-aligned columns three spaces apart, headers as given, each line after
// indent. The cells are printed as they are (cells makes them), colours
// included: they take no width.
func writeTable(w io.Writer, indent string, header []string, rows [][]string) error {
	all := append([][]string{header}, rows...)
	widths := columnWidths(all)
	var b strings.Builder
	for _, row := range all {
		writeRow(&b, indent, widths, row)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// columnWidths is how wide each column is drawn: its widest cell.
func columnWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], twwidth.Width(cell))
		}
	}
	return widths
}

// writeRow writes one line of a table: each cell but the last padded to
// its column's width and three spaces; no blanks at the end.
func writeRow(b *strings.Builder, indent string, widths []int, row []string) {
	line := indent
	for i, cell := range row {
		line += cell
		if i < len(row)-1 {
			line += strings.Repeat(" ", max(widths[i]-twwidth.Width(cell), 0)+3)
		}
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
