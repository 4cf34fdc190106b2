package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fatih/color"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// TestAlignRowsAsTablewriter holds the row writer of list's tables and of
// narrow prose tables to the layout tablewriter gives writeTable, on cells
// as list makes them (coloured, wide runes, escapes, blanks at either end,
// empty, long) and under a tree's indents.
func TestAlignRowsAsTablewriter(t *testing.T) {
	red := color.New(color.FgRed, color.Bold)
	red.EnableColor()
	words := []string{
		"", "-", "held-00", "thing000/o000040", "FinalizerPending", "115s", "critical",
		red.Sprint("STUCK"), red.Sprint("critical") + " and more", "名前空間", "crd/widgets.例え.com",
		string(safef("%v", "a\tb\x1b[2Jc")), "  lead", "trail  ", "e\u0301", strings.Repeat("long-", 30),
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return words[rnd.IntN(len(words))] }
	for round := range 300 {
		columns := 1 + rnd.IntN(6)
		header := make([]string, columns)
		for i := range header { // a list's headers are never empty
			for header[i] == "" {
				header[i] = strings.ToUpper(pick())
			}
		}
		var rows [][]string
		for range rnd.IntN(8) {
			row := make([]string, columns)
			for i := range row {
				row[i] = pick()
			}
			rows = append(rows, row)
		}
		indent := []string{"", "  ", "│  ", "    └─ "}[rnd.IntN(4)]
		var want, got bytes.Buffer
		if err := writeTable(&want, indent, header, rows); err != nil {
			t.Fatal(err)
		}
		if err := alignRows(&got, indent, append([][]string{header}, rows...), nil); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("round %d: rows %q\nalignRows:\n%s\ntablewriter:\n%s", round, fmt.Sprint(append([][]string{header}, rows...)), got.String(), want.String())
		}
	}
}

// cellWidth measures as tablewriter does: each printable ASCII character
// alone and in a run, and what is not printable ASCII (colour, wide and
// combining runes, controls).
func TestCellWidthAsTablewriter(t *testing.T) {
	var ascii strings.Builder
	cells := []string{"", "名前空間", "e\u0301", "\x1b[31mred\x1b[0m", "a\tb", "é", "\x7f", "crd/widgets.例え.com"}
	for c := byte(' '); c <= '~'; c++ {
		cells = append(cells, string(c))
		ascii.WriteByte(c)
	}
	cells = append(cells, ascii.String())
	for _, cell := range cells {
		if got, want := cellWidth(cell), twwidth.Width(cell); got != want {
			t.Errorf("cellWidth(%q) = %d, tablewriter's %d", cell, got, want)
		}
	}
}
