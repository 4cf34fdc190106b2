// Package version holds the build's version, stamped by ldflags:
// -X github.com/kubectl-terminating/kubectl-terminating/pkg/version.Version=v0.1.0
package version

import "runtime/debug"

// Set at build time by the Makefile and goreleaser.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// String returns the version, falling back to the module version `go install` records.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "v0.0.0-dev"
}

// UserAgent names the plugin in the apiserver's audit log.
func UserAgent() string { return "kubectl-terminating/" + String() }
