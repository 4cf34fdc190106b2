package diagnose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
)

// stepMakers are the functions that take a code and a step id.
var stepMakers = map[string]bool{"step": true, "forceDelete": true, "removeFinalizer": true, "mountsOnNode": true}

// Every step a rule names in the source is declared in the catalogue: for
// catalog.X, in X's entry; for a code passed in (a helper several codes
// share), in the entry of each code the source passes to that helper. The
// reports of the tests check the steps given; this checks the branches no
// test reaches as well.
func TestEveryStepIsCatalogued(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	var named, passed int
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok || !stepMakers[fn.Name] {
				return true
			}
			if _, forwards := call.Args[1].(*ast.Ident); forwards {
				return true // a helper passing on its caller's id: the caller is checked
			}
			lit, ok := call.Args[1].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: %s's step id is not a literal", fset.Position(call.Pos()), fn.Name)
				return true
			}
			id, _ := strconv.Unquote(lit.Value)
			switch code := call.Args[0].(type) {
			case *ast.SelectorExpr: // catalog.X
				named++
				if _, ok := catalog.StepOf(catalog.Code(code.Sel.Name), id); !ok {
					t.Errorf("%s: step %q is not declared in %s's entry (pkg/catalog/causes.yaml)", fset.Position(call.Pos()), id, code.Sel.Name)
				}
			default: // a code passed in: declared by at least one code
				passed++
				if !declaredAnywhere(id) {
					t.Errorf("%s: step %q is declared by no code", fset.Position(call.Pos()), id)
				}
			}
			return true
		})
	}
	if named < 50 || passed == 0 {
		t.Errorf("%d steps named with their code, %d with a code passed in: the scan missed them", named, passed)
	}
}

func declaredAnywhere(id string) bool {
	for _, c := range catalog.Codes() {
		if _, ok := catalog.StepOf(c, id); ok {
			return true
		}
	}
	return false
}
