// Command krew-manifest rewrites plugins.yaml for a release from goreleaser's
// dist folder: version, download uris and sha256 sums.
//
//	go run ./release/cmd/krew-manifest -version v0.2.0 -dist ../../dist -manifest ../../plugins.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/release"
)

func main() {
	version := flag.String("version", "", "the release tag, e.g. v0.2.0")
	dist := flag.String("dist", "dist", "goreleaser's dist folder")
	manifest := flag.String("manifest", "plugins.yaml", "the manifest to rewrite")
	prefix := flag.String("uri-prefix", "https://github.com/kubectl-terminating/kubectl-terminating/releases/download", "where release archives are downloaded from")
	flag.Parse()
	if err := run(*version, *dist, *manifest, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "krew-manifest:", err)
		os.Exit(1)
	}
}

func run(version, dist, manifest, prefix string) error {
	m, err := release.Load(manifest)
	if err != nil {
		return err
	}
	if m, err = release.Generate(m, version, prefix, dist); err != nil {
		return err
	}
	if err := release.Validate("terminating", m); err != nil {
		return err
	}
	if err := release.CheckArchives(m, dist, true); err != nil {
		return err
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(manifest, data, 0o644)
}
