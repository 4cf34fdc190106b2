package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Options configure a bench run.
type Options struct {
	Scale, Out, Plugin, BinDir, Self string
	Runs                             int
	// QuickRuns is Runs for the programs that take a second or less (all
	// but the one-liners): their medians of 5 moved the ratio of a program to
	// the floor between 0.73x and 2.16x from one bench to the next (case 4's
	// why -A), with the lab's apiserver; more rounds cost seconds.
	QuickRuns int
	// Cases picks the cases to run: "1,2,3,4,5,6,7" (1, 3 and 4 share a lab).
	Cases string
	// Keep holds the lab of case 4, 6 or 7 once built, instead
	// of measuring, and prints its kubeconfig: for profiling by hand.
	// Interrupt to end it.
	Keep bool
}

// sizes are the workloads of one scale.
type sizes struct {
	crds, groups, kinds int   // CRDs, their API groups, the kinds holding objects
	objects             []int // leftover objects per namespace, one namespace each
	oneLinerMax         int   // the one-liner runs up to this many objects
	nodes, podsPerNode  int
	// manyNamespaces terminating namespaces of perNamespace leftovers each.
	manyNamespaces, perNamespace int
	stuckPods, stuckMisc         int
	// dependents: the pods of case 5's Deployment deleted in the foreground.
	dependents int
	// Case 6: manyCRDs in manyGroups API groups, liveObjects live objects
	// and a namespace held by heldCRs custom resources and heldConfigMaps
	// configmaps.
	manyCRDs, manyGroups, liveObjects, heldCRs, heldConfigMaps int
	// Case 7: heldNamespaces terminating namespaces of heldPerNamespace
	// leftovers each, all held.
	heldNamespaces, heldPerNamespace int
	// settle waits past the stuck objects' deadlines and the plugin's settle
	// time, so that they count as stuck (the smoke run checks no figure).
	settle time.Duration
}

var scales = map[string]sizes{
	"full": {crds: 150, groups: 30, kinds: 40, objects: []int{1000, 10000, 100000}, oneLinerMax: 10000, manyNamespaces: 50, perNamespace: 100, nodes: 200, podsPerNode: 100, stuckPods: 100, stuckMisc: 300, dependents: 100, settle: 65 * time.Second,
		manyCRDs: 1000, manyGroups: 100, liveObjects: 300, heldCRs: 30, heldConfigMaps: 10, heldNamespaces: 6, heldPerNamespace: 500},
	"smoke": {crds: 6, groups: 3, kinds: 4, objects: []int{100}, oneLinerMax: 100, manyNamespaces: 3, perNamespace: 10, nodes: 4, podsPerNode: 10, stuckPods: 4, stuckMisc: 4, dependents: 3,
		manyCRDs: 12, manyGroups: 4, liveObjects: 12, heldCRs: 6, heldConfigMaps: 2, heldNamespaces: 2, heldPerNamespace: 8},
}

// Run builds the workloads, measures, checks that every program saw the
// same objects, and prints (and writes) the report.
func Run(ctx context.Context, o Options) error {
	sz, ok := scales[o.Scale]
	if !ok {
		return fmt.Errorf("unknown scale %q: full or smoke", o.Scale)
	}
	start := time.Now()
	var results []Result
	if strings.ContainsAny(o.Cases, "134") {
		r, err := namespaceCases(ctx, o, sz)
		results = append(results, r...)
		if err != nil {
			return err
		}
	}
	if strings.Contains(o.Cases, "2") {
		r, err := clusterCase(ctx, o, sz)
		results = append(results, r...)
		if err != nil {
			return err
		}
	}
	for _, c := range []struct {
		name string
		run  func(context.Context, Options, sizes) ([]Result, error)
	}{{"5", usersCase}, {"6", manyTypesCase}, {"7", heldLeftoversCase}} {
		if !strings.Contains(o.Cases, c.name) {
			continue
		}
		r, err := c.run(ctx, o, sz)
		results = append(results, r...)
		if err != nil {
			return err
		}
	}
	rep := report(o, sz, results, time.Since(start))
	fmt.Print(rep)
	if o.Out != "" {
		if err := os.WriteFile(o.Out, []byte(rep), 0o644); err != nil {
			return err
		}
	}
	return checkAgreement(results)
}

// labFor starts a bench lab and a counting proxy in front of it.
func labFor(ctx context.Context, o Options) (*lab.Lab, *Proxy, string, *scenario.Env, error) {
	return labWith(ctx, o, lab.Options{})
}

// labWithKinds is labWith, the scale's CRDs served in it.
func labWithKinds(ctx context.Context, o Options, lo lab.Options, sz sizes) (*lab.Lab, *Proxy, string, *scenario.Env, []scenario.BulkKind, error) {
	l, px, kc, env, err := labWith(ctx, o, lo)
	if err != nil {
		return nil, nil, "", nil, nil, err
	}
	kinds, err := servedKinds(ctx, env, sz)
	if err != nil {
		cleanup(l, px)
		return nil, nil, "", nil, nil, err
	}
	return l, px, kc, env, kinds, nil
}

// labWith starts a bench lab tuned by lo (its BinDir, Dir and Bench are set
// here) and a counting proxy in front of it.
func labWith(ctx context.Context, o Options, lo lab.Options) (*lab.Lab, *Proxy, string, *scenario.Env, error) {
	dir, err := os.MkdirTemp("", "kubectl-terminating-bench-")
	if err != nil {
		return nil, nil, "", nil, err
	}
	lo.BinDir, lo.Dir, lo.Bench, lo.APFSeats = o.BinDir, dir, true, apfSeats
	l, err := lab.Start(ctx, lo)
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("%w (lab state kept in %s)", err, dir)
	}
	px, err := StartProxy(l.Server, lab.AdminToken)
	if err != nil {
		l.Stop()
		return nil, nil, "", nil, err
	}
	kc, err := px.Kubeconfig(dir)
	if err == nil {
		var env *scenario.Env
		if env, err = scenario.NewEnvQPS(l.Kubeconfig, 2000); err == nil {
			return l, px, kc, env, nil
		}
	}
	px.Close()
	l.Stop()
	return nil, nil, "", nil, err
}

// cleanup stops a bench lab and removes its state.
func cleanup(l *lab.Lab, px *Proxy) {
	px.Close()
	l.Stop()
	_ = os.RemoveAll(l.Dir)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// namespaceCases are issue 6's cases 1 (a terminating namespace with N
// leftovers among ~200 types) and 3 (the same with a hung aggregated API).
func namespaceCases(ctx context.Context, o Options, sz sizes) ([]Result, error) {
	l, px, kc, env, kinds, err := labWithKinds(ctx, o, lab.Options{}, sz)
	if err != nil {
		return nil, err
	}
	defer cleanup(l, px)
	var results []Result
	for _, n := range sz.objects {
		if !strings.Contains(o.Cases, "1") && (n != sz.oneLinerMax || !strings.Contains(o.Cases, "3")) {
			continue // case 3 alone needs only its own namespace, case 4 none of them
		}
		ns := fmt.Sprintf("bench-%d", n)
		t := time.Now()
		if err := env.Namespace(ctx, ns); err != nil {
			return results, err
		}
		if err := Objects(ctx, env, ns, kinds[:sz.kinds], n); err != nil {
			return results, err
		}
		// No namespace controller in the bench lab: the namespace stays
		// Terminating with all its content, as when the controller is stuck.
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return results, err
		}
		progress("namespace %s: %d objects created and the namespace deleted in %s", ns, n, time.Since(t).Round(time.Second))
		if !strings.Contains(o.Cases, "1") {
			continue
		}
		c := fmt.Sprintf("1: %d objects", n)
		rs, err := measureNamespace(o, px, kc, c, ns, n <= sz.oneLinerMax)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	if strings.Contains(o.Cases, "4") {
		rs, err := manyNamespacesCase(ctx, o, sz, px, kc, env, kinds)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	if !strings.Contains(o.Cases, "3") {
		return results, nil
	}
	host, err := scenario.NewTestHost()
	if err != nil {
		progress("case 3 skipped: %v", err) // the report then has no line for it
		return results, nil
	}
	defer host.Close()
	stop, err := HungAPIService(ctx, env, host, "hung.bench.example.com")
	if stop != nil {
		defer stop()
	}
	if err != nil {
		return results, err
	}
	progress("a hung aggregated API is registered and unavailable")
	n := sz.oneLinerMax
	rs, err := measureNamespace(o, px, kc, fmt.Sprintf("3: %d objects, hung API", n), fmt.Sprintf("bench-%d", n), true)
	return append(results, rs...), err
}

// manyNamespacesCase is issue 12's case 4: many terminating namespaces, each
// with leftovers (a tenth of them deleted and held by a finalizer), in the lab
// of case 1; list -A and why -A against the floor over every namespace.
func manyNamespacesCase(ctx context.Context, o Options, sz sizes, px *Proxy, kc string, env *scenario.Env, kinds []scenario.BulkKind) ([]Result, error) {
	t := time.Now()
	for i := range sz.manyNamespaces {
		ns := fmt.Sprintf("preview-%03d", i)
		if err := env.Namespace(ctx, ns); err != nil {
			return nil, err
		}
		if err := Objects(ctx, env, ns, kinds[:sz.kinds], sz.perNamespace); err != nil {
			return nil, err
		}
		if err := DeleteHeld(ctx, env, ns, kinds[:sz.kinds], sz.perNamespace); err != nil {
			return nil, err
		}
		if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
	}
	progress("%d terminating namespaces of %d objects each in %s", sz.manyNamespaces, sz.perNamespace, time.Since(t).Round(time.Second))
	c := fmt.Sprintf("4: %d terminating namespaces", sz.manyNamespaces)
	return measureClusterWide(ctx, o, px, kc, c, floorRun(o, kc, ""))
}

// measureClusterWide measures list -A and why -A beside others, then the
// lengths of their tables: what a person reads.
func measureClusterWide(ctx context.Context, o Options, px *Proxy, kc, c string, others ...program) ([]Result, error) {
	if o.Keep {
		return nil, keepLab(ctx, kc)
	}
	progs := append([]program{pluginRun(o, kc, itemsCount, "list", "-A"), pluginRun(o, kc, itemsCount, "why", "-A")}, others...)
	rs, err := measureAll(px, c, progs, o.QuickRuns)
	if err != nil {
		return rs, err
	}
	for i, args := range [][]string{{"list", "-A"}, {"why", "-A"}} {
		if rs[i].Lines, err = tableLines(o, kc, args...); err != nil {
			return rs, err
		}
	}
	return rs, nil
}

// keepLab holds a case's lab, once built, until interrupted (-keep), and
// prints its kubeconfig: for profiling by hand.
func keepLab(ctx context.Context, kc string) error {
	fmt.Println("lab kept; its kubeconfig (through the counting proxy):", kc)
	<-ctx.Done()
	return ctx.Err()
}

// isExit reports whether err is the process exiting with code.
func isExit(err error, code int) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.ExitCode() == code
}

func measureNamespace(o Options, px *Proxy, kc, c, ns string, oneLiner bool) ([]Result, error) {
	progs := []program{
		{name: pluginName, cmd: func() *exec.Cmd { return exec.Command(o.Plugin, "--kubeconfig", kc, "why", "ns/"+ns, "-o", "json") }, count: pluginCount},
		floorRun(o, kc, ns),
	}
	if oneLiner {
		progs = append(progs, oneLinerRun(o, kc, ns, o.Runs))
	}
	rs, err := measureAll(px, c, progs, o.QuickRuns)
	if err != nil {
		return rs, err
	}
	if rs[0].Snapshot, rs[0].SnapshotGz, err = snapshotSizes(o.Plugin, kc, "why", "ns/"+ns); err != nil {
		return rs, err
	}
	rs[0].Read, err = contentsRead(progs[0])
	return rs, err
}

// snapshotSizes saves the run's snapshot, plain and gzip-compressed, and
// returns the two files' sizes.
func snapshotSizes(plugin, kubeconfig string, args ...string) (plain, gz int64, err error) {
	dir, err := os.MkdirTemp("", "bench-snapshot-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	var sizes [2]int64
	for i, name := range []string{"run.json", "run.json.gz"} {
		file := filepath.Join(dir, name)
		cmd := exec.Command(plugin, append(append([]string{"--kubeconfig", kubeconfig}, args...), "-o", "name", "--save-snapshot", file)...)
		if out, err := cmd.CombinedOutput(); err != nil && !isExit(err, 2) {
			return 0, 0, fmt.Errorf("saving a snapshot: %v\n%s", err, out)
		}
		st, err := os.Stat(file)
		if err != nil {
			return 0, 0, err
		}
		sizes[i] = st.Size()
	}
	return sizes[0], sizes[1], nil
}

// measureAll measures the programs of a case in rounds: one unrecorded
// warm-up round, then runs rounds each running every program once, so that
// none of them pays alone for a cold apiserver or the machine's drift (the
// first program measured used to run slower than the others). Each round
// starts one program further on, so that none always runs first, or always
// after the same one. A program given rounds runs in that many first
// recorded rounds only.
func measureAll(px *Proxy, c string, progs []program, runs int) ([]Result, error) {
	samples := make([][]Sample, len(progs))
	for round := range runs + 1 {
		for k := range progs {
			i := (round + k) % len(progs)
			p := progs[i]
			if p.rounds > 0 && (round == 0 || round > p.rounds) {
				continue // too slow to run every round
			}
			s, err := sample(px, p)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				samples[i] = append(samples[i], s)
			}
		}
	}
	out := make([]Result, len(progs))
	for i, p := range progs {
		out[i] = median(c, p, samples[i])
		r := out[i]
		progress("case %s: %s: %s, %d requests, %d objects", c, p.name, r.Wall.Round(time.Millisecond), r.Requests, r.Objects)
	}
	return out, nil
}

// clusterCase is issue 6's case 2: nodes, pods, some stuck, other stuck
// objects; list -A and why -A against the floor over every namespace.
func clusterCase(ctx context.Context, o Options, sz sizes) ([]Result, error) {
	l, px, kc, env, err := labFor(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup(l, px)
	t := time.Now()
	var nodes []string
	for i := range sz.nodes {
		name := fmt.Sprintf("node-%03d", i)
		if err := env.DyingNode(ctx, name); err != nil {
			return nil, err
		}
		nodes = append(nodes, name)
	}
	byNS, err := Pods(ctx, env, nodes, sz.podsPerNode, 200)
	if err != nil {
		return nil, err
	}
	progress("%d nodes and %d pods created in %s", len(nodes), len(nodes)*sz.podsPerNode, time.Since(t).Round(time.Second))
	if err := stuckObjects(ctx, env, byNS, sz); err != nil {
		return nil, err
	}
	// Past the deadlines (30 s) and the settle time (30 s); the Leases, written once, are stale.
	time.Sleep(sz.settle)
	c := fmt.Sprintf("2: %d nodes, %d pods", sz.nodes, sz.nodes*sz.podsPerNode)
	return measureAll(px, c, []program{
		pluginRun(o, kc, itemsCount, "list", "-A"),
		pluginRun(o, kc, itemsCount, "why", "-A"),
		floorRun(o, kc, ""),
	}, o.QuickRuns)
}

// stuckObjects deletes stuckPods pods (half held by a finalizer, half left
// to their dead nodes) and stuckMisc configmaps held by a finalizer.
func stuckObjects(ctx context.Context, env *scenario.Env, byNS map[string][]string, sz sizes) error {
	i := 0
	zero := int64(0)
	for ns, pods := range byNS {
		for _, name := range pods {
			if i >= sz.stuckPods {
				break
			}
			opts := metav1.DeleteOptions{}
			if i%2 == 0 {
				patch := []byte(`{"metadata":{"finalizers":["` + Finalizer + `"]}}`)
				if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
					return err
				}
				opts.GracePeriodSeconds = &zero
			}
			if err := env.Client.CoreV1().Pods(ns).Delete(ctx, name, opts); err != nil {
				return err
			}
			i++
		}
	}
	for j := range sz.stuckMisc {
		ns := fmt.Sprintf("apps-%03d", j%len(byNS))
		name := fmt.Sprintf("leftover-%04d", j)
		if err := env.ConfigMapWithFinalizer(ctx, ns, name, Finalizer); err != nil {
			return err
		}
	}
	return nil
}

// checkAgreement fails when programs that read the same thing saw different counts.
func checkAgreement(results []Result) error {
	byCase := map[string][]Result{}
	for _, r := range results {
		byCase[r.Case] = append(byCase[r.Case], r)
	}
	var problems []string
	for c, rs := range byCase {
		if strings.HasPrefix(c, "2:") || strings.HasPrefix(c, "4:") || strings.HasPrefix(c, "5:") || strings.HasPrefix(c, "7:") || strings.HasSuffix(c, ", the cluster") {
			continue // list -A counts terminating objects, the floor every object
		}
		for _, r := range rs[1:] {
			if r.Objects != rs[0].Objects {
				problems = append(problems, fmt.Sprintf("case %s: %s saw %d objects, %s %d", c, rs[0].Program, rs[0].Objects, r.Program, r.Objects))
			}
			if r.Top != "" && r.Top != rs[0].Top {
				problems = append(problems, fmt.Sprintf("case %s: %s's top cause is %s, %s's %s", c, rs[0].Program, rs[0].Top, r.Program, r.Top))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("counts disagree:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// machine describes where the figures were taken.
func machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, cpu, _ = strings.Cut(l, ": ")
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.Fields(strings.Split(string(data), "\n")[0])[1] + " kB RAM"
	}
	return fmt.Sprintf("%s, %d CPUs, %s, %s/%s, %s", cpu, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
