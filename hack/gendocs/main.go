// Command gendocs writes docs/rbac.md's table from the declarations of what
// each reader reads (pkg/collect's sources, pkg/cmd's commands). Run it from
// the repository's root after gencatalog (make generate); the unit tests
// fail while the table is stale.
package main

import (
	"fmt"
	"os"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/cmd"
)

func main() {
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
