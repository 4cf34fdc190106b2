// Command gencatalog writes what is generated from the cause catalogue
// (pkg/catalog/causes.yaml): docs/causes.md, pkg/catalog/codes.go (the
// code constants) and pkg/catalog/data.go (both catalogues as Go values). It imports package catalog alone, so that it runs before
// a rule that uses a new code compiles (make generate runs it first, then
// gendocs). Run it from the repository's root; the unit tests fail while a
// generated file is stale.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
)

func main() {
	for path, text := range map[string]string{"docs/causes.md": catalog.Markdown(), "pkg/catalog/codes.go": catalog.GoCodes(), "pkg/catalog/data.go": catalog.GoData()} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gencatalog:", err)
			os.Exit(1)
		}
	}
}
