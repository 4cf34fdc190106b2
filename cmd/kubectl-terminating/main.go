// Command kubectl-terminating is the kubectl plugin `kubectl terminating`.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec, OIDC and cloud auth plugins
	"k8s.io/klog/v2"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/cmd"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
)

func main() {
	// The binary also runs the kubeconfig's credential plugin under a guard
	// that kills it if the run ends first (pkg/kube/guard.go).
	if len(os.Args) > 1 && os.Args[1] == kube.GuardArg {
		os.Exit(kube.RunGuard(os.Args[2:]))
	}
	// client-go logs retries and discovery errors through klog; the plugin
	// reports what matters itself, on one line.
	silenceKlog()
	cmd.TuneGarbageCollector()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cmd.NewRoot(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	code := cmd.Execute(ctx, root, os.Stderr)
	stop()
	os.Exit(code)
}

func silenceKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
