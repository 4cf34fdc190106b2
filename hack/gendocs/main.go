// Command gendocs writes the documentation generated from the code:
// docs/causes.md and pkg/catalog/codes.go (the code constants) from the
// cause catalogue (pkg/catalog/causes.yaml), and
// docs/rbac.md's table from the declarations of what each reader reads
// (pkg/collect's sources, pkg/cmd's commands). Run it
// from the repository's root (make generate); the unit tests fail while a
// generated file is stale.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/cmd"
)

func main() {
	if err := os.WriteFile("docs/causes.md", []byte(catalog.Markdown()), 0o644); err != nil {
		fail(err)
	}
	if err := os.WriteFile("pkg/catalog/codes.go", []byte(catalog.GoCodes()), 0o644); err != nil {
		fail(err)
	}
	doc, err := os.ReadFile("docs/rbac.md")
	if err != nil {
		fail(err)
	}
	rbac, err := cmd.RBACDoc(string(doc))
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile("docs/rbac.md", []byte(rbac), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gendocs:", err)
	os.Exit(1)
}
