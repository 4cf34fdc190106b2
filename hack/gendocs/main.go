// Command gendocs writes the documentation generated from the code:
// docs/causes.md from the cause catalogue (pkg/catalog/causes.yaml). Run it
// from the repository's root (make generate); the unit tests fail while a
// generated file is stale.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
)

func main() {
	if err := os.WriteFile("docs/causes.md", []byte(catalog.Markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
