package cmd

import (
	"os"
	"testing"
)

// docs/rbac.md's table is what the readers declare they read (make
// generate writes it): a source added without its permissions, or a row
// edited by hand, fails here.
func TestRBACDocIsGenerated(t *testing.T) {
	data, err := os.ReadFile("../../docs/rbac.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := RBACDoc(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != want {
		t.Error("docs/rbac.md's table is not what the readers declare: run `make generate`")
	}
}
