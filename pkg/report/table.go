package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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
// left-aligned columns three spaces apart, each as wide as its widest cell,
// headers as given, each line after indent. The cells are printed as they are
// (cells makes them), colours included: they take no width.
func writeTable(w io.Writer, indent string, header []string, rows [][]string) error {
	return renderTable(w, indent, header, rows, nil)
}

// renderTable lays the table out with tablewriter: each column as wide as
// widths says (the indent included), or as its widest cell without widths; a
// nil header prints none.
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
func renderTable(w io.Writer, indent string, header []string, rows [][]string, widths tw.Mapper[int, int]) error {
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
		tablewriter.WithConfig(tablewriter.Config{Header: cell, Row: cell, Widths: tw.CellWidth{PerColumn: widths}}),
		// Cells are kept whole, spaces and all: WrapNone is the zero value,
		// which WithConfig takes for "unset" (wrapping then joins a cell's
		// words with single spaces wherever widths are given).
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if header != nil {
		t.Header(toAny(header)...)
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	return writeTrimmed(w, buf.String())
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
