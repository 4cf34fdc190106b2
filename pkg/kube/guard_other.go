//go:build !unix

package kube

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
)

// GuardArg: see guard.go. Outside unix the credential plugin runs as
// client-go starts it: the run still ends at its bound (pkg/cmd/root.go),
// but a plugin that hangs is not killed.
const GuardArg = "__credential-plugin-guard"

func guardExec(*rest.Config) {}

// RunGuard is never asked for outside unix.
func RunGuard([]string) int {
	fmt.Fprintln(os.Stderr, "kubectl-terminating: "+GuardArg+" is not supported on this system")
	return 1
}
