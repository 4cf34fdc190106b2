// Command etcd is etcd's own server main, built from the Go module proxy:
// `go install` of etcd's main fails on its replace directives, a main of our own does not.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
