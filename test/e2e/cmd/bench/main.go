// Command bench is `make bench`: it builds the workloads of issue 6 on lab
// control planes and measures the plugin beside the kubectl one-liner and a
// floor program (`bench floor`, which only lists), then prints the ratios
// and, with -out, writes them to docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		floor(os.Args[2:])
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "rss" {
		os.Exit(bench.RSS(os.Args[2:]))
	}
	var o bench.Options
	flag.StringVar(&o.Scale, "scale", "full", "full (issue 6's sizes) or smoke (tiny, for make test)")
	flag.IntVar(&o.Runs, "runs", 5, "runs of the one-liners of cases 1 and 3 (12 s each); the median is reported")
	flag.IntVar(&o.QuickRuns, "quick-runs", 15, "runs of each program that takes a second or less (all but the one-liners)")
	flag.StringVar(&o.Cases, "cases", "1,2,3,4,5,6,7", "the cases to run (4 runs in the lab of 1; 5, 6 and 7 each in a lab of its own)")
	flag.StringVar(&o.Out, "out", "", "write the report (markdown) to this file")
	flag.StringVar(&o.Plugin, "plugin", "../../bin/kubectl-terminating", "the plugin binary")
	flag.StringVar(&o.BinDir, "bin", "../../.lab/bin", "the lab binaries")
	flag.BoolVar(&o.Keep, "keep", false, "build the lab of case 4, 6 or 7, print its kubeconfig and hold it until interrupted (no measuring)")
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	o.Self, bench.RSSHelper = self, self
	for _, p := range []*string{&o.Plugin, &o.BinDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			fail(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench.Run(ctx, o); err != nil {
		fail(err)
	}
}

// floor runs the floor program: `bench floor -kubeconfig K [-namespace NS]`.
func floor(args []string) {
	klog.SetOutput(io.Discard) // client-go's deprecation warnings; the plugin silences them too
	klog.LogToStderr(false)
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	kc := fs.String("kubeconfig", "", "kubeconfig")
	ns := fs.String("namespace", "", "namespace; empty: every namespace and cluster-scoped types")
	_ = fs.Parse(args)
	n, err := bench.Floor(context.Background(), *kc, *ns)
	if err != nil {
		fail(err)
	}
	fmt.Println(n)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
