package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sample is one run of a measured program.
type Sample struct {
	Wall     time.Duration
	Requests int64
	Bytes    int64
	RSSKiB   int64
	CPU      time.Duration // user and system time of the process and its children
	Objects  int64         // what the program saw, to check they agree
	Top      string        // the plugin's top cause code, when it reports one
	Exit     int
}

// Result is the median of a program's runs on one case.
type Result struct {
	Case, Program string
	Sample
	Runs int
	// Snapshot and SnapshotGz are the sizes of the run's --save-snapshot
	// file, plain and gzip-compressed (namespace cases, the plugin only).
	Snapshot, SnapshotGz int64
	// Lines is the length of the program's table (cases 4 and 7, the plugin only).
	Lines int
	// Read is how a namespace's contents were read (case 6, the plugin only).
	Read string
}

// program is how to run one measured program and read what it saw.
type program struct {
	name  string
	cmd   func() *exec.Cmd
	count func(stdout string) (int64, string)
	// rounds, when not 0, runs the program in the first rounds recorded
	// only, with no warm-up: the one-liners take 12 s a run (cases 1 and 3:
	// as many rounds as -runs) to minutes (cases 6 and 7: one), the programs
	// they are measured beside a second or less.
	rounds int
}

// RSSHelper is the bench's own binary, which runs each measured program
// (`bench rss PROGRAM ARGS...`) and reports its peak RSS: a program started
// by the bench itself would be charged the bench's own RSS (Linux counts the
// memory of the process it was forked from, until its exec, in its peak),
// which grows with the reports it holds.
var RSSHelper string

// sample runs p once through the proxy.
func sample(px *Proxy, p program) (Sample, error) {
	cmd, rss, err := withRSS(p.cmd())
	if err != nil {
		return Sample{}, err
	}
	// The program writes to a file, as `> out.json` does: through a pipe,
	// the bench's copying of a 17 MB report into memory, and its
	// collecting of the last run's, ran beside the program and were
	// charged to its time.
	out, err := os.CreateTemp("", "bench-stdout-")
	if err != nil {
		return Sample{}, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errOut
	runtime.GC()
	px.Reset()
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	req, by := px.Reset()
	s := Sample{Wall: wall, Requests: req, Bytes: by, RSSKiB: rss()}
	if ee, ok := err.(*exec.ExitError); ok {
		s.Exit = ee.ExitCode()
	} else if err != nil {
		return s, fmt.Errorf("%s: %w", p.name, err)
	}
	s.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() // the helper's and the program's
	stdout, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		return s, rerr
	}
	s.Objects, s.Top = p.count(string(stdout))
	if s.Exit == 1 && p.name != oneLinerName { // the one-liner exits 1 on any failing type
		return s, fmt.Errorf("%s failed: %s", p.name, strings.TrimSpace(errOut.String()))
	}
	return s, nil
}

// median is the sample of median wall time, with the requests, bytes and
// peak RSS of that run.
func median(c string, p program, samples []Sample) Result {
	sort.Slice(samples, func(i, j int) bool { return samples[i].Wall < samples[j].Wall })
	return Result{Case: c, Program: p.name, Sample: samples[len(samples)/2], Runs: len(samples)}
}

const (
	pluginName   = "kubectl terminating"
	floorName    = "floor (list only)"
	oneLinerName = "kubectl one-liner"
)

// liveScanRE reads the plugin's live-scan evidence: "live scan: things001.g01.bench.example.com: 250 objects left".
var liveScanRE = regexp.MustCompile(`^live scan: \S+: (\d+) objects? left$`)

// pluginCount sums the live scan's counts in a `why ns/...` JSON report
// (each resource once: the same lines may appear under several causes).
func pluginCount(stdout string) (int64, string) {
	var r struct {
		Items []struct {
			Causes []struct {
				Code     string
				Evidence []string
			} `json:"causes"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(stdout), &r) != nil || len(r.Items) == 0 || len(r.Items[0].Causes) == 0 {
		return -1, ""
	}
	seen := map[string]bool{}
	var n int64
	for _, c := range r.Items[0].Causes {
		for _, e := range c.Evidence {
			if m := liveScanRE.FindStringSubmatch(e); m != nil && !seen[e] {
				seen[e] = true
				v, _ := strconv.ParseInt(m[1], 10, 64)
				n += v
			}
		}
	}
	return n, r.Items[0].Causes[0].Code
}

// itemsCount counts the items of a `list -A` or `why -A` JSON report.
func itemsCount(stdout string) (int64, string) {
	var r struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal([]byte(stdout), &r) != nil {
		return -1, ""
	}
	return int64(len(r.Items)), ""
}

// rowsCount counts the rows of the plugin's table: the lines before the
// blank line that heads its footer, less the header.
func rowsCount(stdout string) (int64, string) {
	table, _, _ := strings.Cut(stdout, "\n\n")
	return int64(strings.Count(table, "\n")), "" // the header's newline for the last row's, which Cut took
}

// linesCount counts the objects the one-liner prints (one line each, less the headers).
func linesCount(stdout string) (int64, string) {
	var n int64
	for _, l := range strings.Split(stdout, "\n") {
		if l != "" && !strings.HasPrefix(l, "NAME ") && !strings.HasPrefix(l, "NAMESPACE ") {
			n++
		}
	}
	return n, ""
}

func numberCount(stdout string) (int64, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(stdout), 10, 64)
	if err != nil {
		return -1, ""
	}
	return n, ""
}

// pluginRun runs the plugin with args and -o json.
func pluginRun(o Options, kubeconfig string, count func(string) (int64, string), args ...string) program {
	return program{name: pluginName + " " + strings.Join(args, " "), count: count, cmd: func() *exec.Cmd {
		return exec.Command(o.Plugin, append(append([]string{"--kubeconfig", kubeconfig}, args...), "-o", "json")...)
	}}
}

// tableRun runs the plugin with args, printing its table (what a person
// reads), as "PROGRAM (table)".
func tableRun(o Options, kubeconfig string, args ...string) program {
	return program{name: pluginName + " " + strings.Join(args, " ") + tableSuffix, count: rowsCount, cmd: func() *exec.Cmd {
		return exec.Command(o.Plugin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}}
}

// tableSuffix names a program that prints the plugin's table.
const tableSuffix = " (table)"

// floorRun runs the floor program over namespace (every namespace when
// empty).
func floorRun(o Options, kubeconfig, namespace string) program {
	args := []string{"floor", "-kubeconfig", kubeconfig}
	if namespace != "" {
		args = append(args, "-namespace", namespace)
	}
	return program{name: floorName, count: numberCount, cmd: func() *exec.Cmd { return exec.Command(o.Self, args...) }}
}

// oneLinerRun runs the operators' one-liner over namespace (every
// namespace and cluster-scoped type when empty).
func oneLinerRun(o Options, kubeconfig, namespace string, rounds int) program {
	script := "kubectl api-resources --verbs=list -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -A"
	if namespace != "" {
		script = "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n " + namespace
	}
	return program{name: oneLinerName, count: linesCount, rounds: rounds, cmd: func() *exec.Cmd {
		return withEnv(exec.Command("sh", "-c", script), "KUBECONFIG="+kubeconfig, "PATH="+o.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}}
}

// withRSS runs cmd through RSSHelper, which writes the program's peak RSS
// (KiB) to a pipe; rss reads it once cmd has run.
func withRSS(cmd *exec.Cmd) (wrapped *exec.Cmd, rss func() int64, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	wrapped = exec.Command(RSSHelper, append([]string{"rss", cmd.Path}, cmd.Args[1:]...)...)
	wrapped.Env, wrapped.ExtraFiles = cmd.Env, []*os.File{w}
	return wrapped, func() int64 {
		_ = w.Close()
		defer r.Close()
		data, _ := io.ReadAll(r)
		n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return n
	}, nil
}

// RSS runs a program (`bench rss PROGRAM ARGS...`) with the helper's
// standard streams and environment, writes its peak RSS in KiB to file
// descriptor 3, and returns its exit code.
func RSS(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "bench rss:", err)
		return 1
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		report := os.NewFile(3, "rss")
		fmt.Fprintln(report, ru.Maxrss) // the largest of the process and its children
		_ = report.Close()
	}
	return cmd.ProcessState.ExitCode()
}

func withEnv(cmd *exec.Cmd, env ...string) *exec.Cmd {
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
