//go:build unix

package kube

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/term"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A credential plugin (the kubeconfig user's exec command) is run by
// client-go with exec.Command, without a context, inside the request that
// needs the credential: nothing in client-go stops it, so one that hangs
// holds the request for ever, and a process that gives up (--timeout,
// Ctrl-C) would leave it running. The run itself does not wait for it (the
// command's bound ends the run: pkg/cmd/root.go); the guard makes sure it
// does not outlive the run either.
//
// The design: the config's ExecProvider is rewritten to run this very
// binary as a guard (GuardArg, the plugin's resolved path and arguments,
// the parent's pid in the environment), so client-go still runs "the
// plugin" as it always does (same environment, stdin, stdout, stderr, exit
// status, same credential cache) while the guard starts the real plugin in
// a process group of its own and polls its parent: when the parent is gone
// (it exited at its bound, was interrupted or killed, even with SIGKILL) or
// the guard itself is signalled (Ctrl-C reaches the terminal's foreground
// group, which the guard is in), it sends SIGTERM to the plugin's group,
// then SIGKILL half a second later, so the plugin's own children go too.
// An interactive plugin (stdin a terminal) stays in the foreground group,
// where it can read the terminal, and is killed by its pid alone. A plugin
// that cannot be found, or a kubeconfig with a plugin policy (allowlist),
// is left to client-go as it is.

// GuardArg, as the first argument, makes the binary the guard of a
// credential plugin (main dispatches it to RunGuard).
const GuardArg = "__credential-plugin-guard"

// guardParentEnv carries the pid of the process the guard watches.
const guardParentEnv = "KUBECTL_TERMINATING_GUARD_PARENT"

// guardPoll is how often the guard looks for its parent.
const guardPoll = 100 * time.Millisecond

// guardExec makes the config's credential plugin start under the guard.
func guardExec(c *rest.Config) {
	e := c.ExecProvider
	if e == nil || (e.PluginPolicy.PolicyType != "" && e.PluginPolicy.PolicyType != clientcmdapi.PluginPolicyAllowAll) {
		return
	}
	self, err := os.Executable()
	if err != nil || (e.Command == self && len(e.Args) > 0 && e.Args[0] == GuardArg) {
		return
	}
	path, err := exec.LookPath(e.Command)
	if err != nil {
		return // client-go says it is not found, with its install hint
	}
	if path, err = filepath.Abs(path); err != nil {
		return
	}
	g := *e
	g.Command = self
	g.Args = append([]string{GuardArg, path}, e.Args...)
	g.Env = append(slices.Clone(e.Env), clientcmdapi.ExecEnvVar{Name: guardParentEnv, Value: strconv.Itoa(os.Getpid())})
	c.ExecProvider = &g
}

// RunGuard runs the credential plugin args[0] with args[1:] and returns its
// exit status; it stops the plugin when its own parent goes away or it is
// signalled.
func RunGuard(args []string) int {
	parent, err := strconv.Atoi(os.Getenv(guardParentEnv))
	if err != nil || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "kubectl-terminating: "+GuardArg+" is run by kubectl-terminating itself, for a credential plugin")
		return 1
	}
	_ = os.Unsetenv(guardParentEnv)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if os.Getppid() != parent {
		return 1 // the parent is already gone
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	group := !term.IsTerminal(int(os.Stdin.Fd()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "credential plugin: %v\n", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	poll := time.NewTicker(guardPoll)
	defer poll.Stop()
	for {
		select {
		case <-done:
			return exitStatus(cmd.ProcessState)
		case <-sigs:
			stopPlugin(cmd.Process.Pid, group, done)
			return 1
		case <-poll.C:
			if os.Getppid() != parent {
				stopPlugin(cmd.Process.Pid, group, done)
				return 1
			}
		}
	}
}

// stopPlugin ends the plugin (its whole process group when it has one):
// SIGTERM, then SIGKILL after half a second.
func stopPlugin(pid int, group bool, done <-chan struct{}) {
	signal := func(s syscall.Signal) {
		if group {
			_ = syscall.Kill(-pid, s)
		} else {
			_ = syscall.Kill(pid, s)
		}
	}
	signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(500 * time.Millisecond):
	}
	signal(syscall.SIGKILL)
}

func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
