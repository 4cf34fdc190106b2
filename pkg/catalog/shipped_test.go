package catalog

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "add the catalogue's new codes to testdata/shipped-codes.golden")

const shippedFile = "testdata/shipped-codes.golden"

// shippedDiff compares the shipped codes with the catalogue's: gone are
// shipped codes the catalogue no longer has (removed or renamed), unshipped
// catalogue codes not yet recorded as shipped.
func shippedDiff(shipped, catalogue []Code) (gone, unshipped []Code) {
	for _, c := range shipped {
		if !slices.Contains(catalogue, c) {
			gone = append(gone, c)
		}
	}
	for _, c := range catalogue {
		if !slices.Contains(shipped, c) {
			unshipped = append(unshipped, c)
		}
	}
	return gone, unshipped
}

func readShipped(t *testing.T) []Code {
	t.Helper()
	data, err := os.ReadFile(shippedFile)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatalf("%v (make golden creates it)", err)
	}
	var out []Code
	for _, l := range strings.Fields(string(data)) {
		out = append(out, Code(l))
	}
	return out
}

// A shipped code keeps its name forever: runbooks match on it. The codes
// shipped are testdata/shipped-codes.golden, the catalogue's codes recorded
// as they ship: a code of the file the catalogue lacks (removed or renamed)
// fails whatever -update says; a catalogue code the file lacks fails until
// `make golden` adds it (shipping it, consciously). -update adds, never
// removes.
func TestShippedCodesKeepTheirNames(t *testing.T) {
	shipped := readShipped(t)
	gone, unshipped := shippedDiff(shipped, Codes())
	for _, c := range gone {
		t.Errorf("shipped code %s is gone from the catalogue (removed or renamed): runbooks match on it", c)
	}
	if !slices.IsSorted(shipped) || len(slices.Compact(slices.Clone(shipped))) != len(shipped) {
		t.Errorf("%s is not sorted, one code a line", shippedFile)
	}
	if len(unshipped) == 0 {
		return
	}
	if !*update {
		t.Errorf("codes %v are not in %s: a new code ships once recorded there (make golden)", unshipped, shippedFile)
		return
	}
	all := slices.Concat(shipped, unshipped)
	slices.Sort(all)
	var b strings.Builder
	for _, c := range all {
		b.WriteString(string(c) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(shippedFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shippedFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The check fails on a code renamed, removed or added unrecorded; the
// catalogues here are the real one changed, not lists of names.
func TestShippedCodesCatchesRenames(t *testing.T) {
	shipped := readShipped(t)
	codes := Codes()
	renamed := slices.Clone(codes)
	renamed[0] = renamed[0] + "Renamed"
	gone, unshipped := shippedDiff(shipped, renamed)
	if !slices.Equal(gone, codes[:1]) || !slices.Equal(unshipped, renamed[:1]) {
		t.Errorf("%s renamed: gone %v, unshipped %v", codes[0], gone, unshipped)
	}
	removed := codes[1:]
	if gone, unshipped := shippedDiff(shipped, removed); !slices.Equal(gone, codes[:1]) || len(unshipped) > 0 {
		t.Errorf("%s removed: gone %v, unshipped %v", codes[0], gone, unshipped)
	}
	added := append(slices.Clone(codes), "SomethingNew")
	if gone, unshipped := shippedDiff(shipped, added); len(gone) > 0 || !slices.Equal(unshipped, []Code{"SomethingNew"}) {
		t.Errorf("a code added: gone %v, unshipped %v", gone, unshipped)
	}
}

// Every constant of type Code declared in the package is in the catalogue
// (entries): a code declared and not catalogued has no title, depth or
// place in Codes(), and is missing from the shipped list's check.
func TestEveryCodeConstantIsCatalogued(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, ident := range vs.Names {
					var lit *ast.BasicLit
					if i < len(vs.Values) {
						lit, _ = vs.Values[i].(*ast.BasicLit)
					}
					if lit == nil {
						t.Errorf("%s: not a string literal", ident.Name)
						continue
					}
					value, _ := strconv.Unquote(lit.Value)
					n++
					if _, ok := Lookup(Code(value)); !ok {
						t.Errorf("code %s (%q) is declared but not catalogued (entries)", ident.Name, value)
					}
				}
			}
		}
	}
	if n != len(Codes()) {
		t.Errorf("%d Code constants, %d catalogued codes", n, len(Codes()))
	}
}
