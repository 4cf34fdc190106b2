// Command lab runs the lab control plane for `make demo` and for people who
// want to explore: `lab up`, `lab gallery`, `lab down`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

func main() {
	fs := flag.NewFlagSet("lab", flag.ExitOnError)
	dir := fs.String("dir", ".lab/run", "the lab's state directory")
	bin := fs.String("bin", ".lab/bin", "where `make lab-bin` put etcd, kube-apiserver, kube-controller-manager and kwok")
	apf := fs.Int("apf-seats", 0, "run the apiserver with priority and fairness, as a real cluster does, serving at most this many reads at once (0: off, the suite's lab)")
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lab up|gallery|down [-dir DIR] [-bin DIR]")
		os.Exit(1)
	}
	_ = fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, *dir, *bin, *apf)
	case "gallery":
		err = gallery(ctx, *dir)
	case "down":
		err = down(*dir)
	default:
		err = fmt.Errorf("unknown command %q: use up, gallery or down", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab: "+err.Error())
		os.Exit(1)
	}
}

func up(ctx context.Context, dir, bin string, apfSeats int) error {
	if err := down(dir); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	start := time.Now()
	l, err := lab.Start(ctx, lab.Options{BinDir: bin, Dir: abs, Detach: true, APFSeats: apfSeats})
	if err != nil {
		return err
	}
	fmt.Printf("lab: control plane up at %s in %s\nlab: kubeconfig %s\n", l.Server, time.Since(start).Round(time.Second), l.Kubeconfig)
	return nil
}

func gallery(ctx context.Context, dir string) error {
	st, err := lab.LoadState(dir)
	if err != nil {
		return fmt.Errorf("no lab running in %s (run `lab up` first): %w", dir, err)
	}
	env, err := scenario.NewEnv(st.Kubeconfig)
	if err != nil {
		return err
	}
	start := time.Now()
	err = env.Gallery(ctx, func(s string) { fmt.Println("lab: " + s) })
	if err == nil {
		fmt.Printf("lab: gallery ready in %s\n", time.Since(start).Round(time.Second))
	}
	return err
}

func down(dir string) error {
	st, err := lab.LoadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lab.StopPIDs(st.PIDs)
	return os.Remove(filepath.Join(dir, "lab.json"))
}
