package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteTable prints a table as every table of the plugin is printed.
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	return writeTable(w, "", header, rows)
}

// writeTable prints rows the way kubectl does: no borders, no rules,
// left-aligned columns three spaces apart, headers as given.
func writeTable(w io.Writer, indent string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Header: tw.CellConfig{
				Formatting: tw.CellFormatting{AutoFormat: tw.Off, AutoWrap: tw.WrapNone},
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   ", Overwrite: true}, PerColumn: firstPadded(len(header), indent)},
			},
			Row: tw.CellConfig{
				Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone},
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   ", Overwrite: true}, PerColumn: firstPadded(len(header), indent)},
			},
		}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(toAny(header)...)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return writeTrimmed(w, buf.String())
}

// writeTrimmed drops the trailing blanks tablewriter pads the last column with.
func writeTrimmed(w io.Writer, s string) error {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		nl := strings.HasSuffix(line, "\n")
		b.WriteString(strings.TrimRight(line, " \n"))
		if nl {
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// firstPadded indents the first column; the last column gets no right padding.
func firstPadded(n int, indent string) []tw.Padding {
	p := make([]tw.Padding, n)
	for i := range p {
		p[i] = tw.Padding{Left: "", Right: "   ", Overwrite: true}
	}
	if n > 0 {
		p[0].Left = indent
		p[n-1].Right = ""
	}
	return p
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
