// Package realnode runs a real node beside a lab control plane (issue 28):
// containerd (Debian's, with runc and the CNI plugins) and the kubelet
// v1.36.3 built from Go modules (setup.sh), both inside a network namespace
// of their own whose only non-loopback address is a test-host address in
// 198.18.0.0/15. The kubelet reaches the lab's apiserver through a forwarder
// listening on the namespace's 127.0.0.1 and dialling the apiserver on the
// machine's 127.0.0.1: no traffic ever goes to the machine's interface
// address or a ClusterIP. Stop tears it all down (processes by PID, mounts,
// cgroups, the namespaces, shim sockets) and writes back the kernel settings
// the kubelet changes; Preflight says plainly why a machine cannot run it.
package realnode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// Images setup.sh makes and Start imports into the node's containerd.
const (
	PauseImage = "registry.k8s.io/pause:3.10"
	TestImage  = "lab.local/busybox:1"
)

// Sysctls the kubelet sets host-wide (it has no namespace of its own for
// them): Start records them and Stop writes them back.
var Sysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// Options configure a real node.
type Options struct {
	// BinDir holds the kubelet and images/ (setup.sh's output, .lab/bin/realnode).
	BinDir string
	// Dir holds the node's state and logs (logs/containerd.log, logs/kubelet.log).
	Dir string
	// Name is the node's name.
	Name string
}

// Node is a running real node.
type Node struct {
	Name, IP string
	// NetNS is the network namespace containerd, the kubelet and the pods run in.
	NetNS string
	Dir   string
	// Restored names the kernel settings Stop wrote back (the kubelet's changes).
	Restored []string
	opts     Options

	before  HostState
	sysctls map[string]string
	veth    string
	fwd     net.Listener
	procs   map[string]*exec.Cmd
	client  *kubernetes.Clientset
	// recovered: made by Recover from a state file, not by Start.
	recovered bool
	stopped   sync.Once
	stopErr   error
}

// Preflight says why this machine cannot run a real node, or nil.
func Preflight(binDir string) error {
	var why []string
	if os.Geteuid() != 0 {
		why = append(why, "not root (network namespaces, cgroups, mounts and containerd need it)")
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			why = append(why, "no cgroup v1 memory hierarchy and no cgroup v2 at /sys/fs/cgroup")
		}
	}
	for _, f := range []string{"containerd", "runc", "ctr", "nsenter", "ip"} {
		if _, err := exec.LookPath(f); err != nil {
			why = append(why, f+" not found (run test/e2e/realnode/setup.sh)")
		}
	}
	for _, f := range []string{"/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback",
		filepath.Join(binDir, "kubelet"), filepath.Join(binDir, "images", "pause.tar"), filepath.Join(binDir, "images", "busybox.tar")} {
		if _, err := os.Stat(f); err != nil {
			why = append(why, f+" missing (run test/e2e/realnode/setup.sh)")
		}
	}
	if len(why) > 0 {
		return errors.New("a real node cannot run here: " + strings.Join(why, "; "))
	}
	return nil
}

// Start starts a real node registered with l and waits until it is Ready.
// On error everything started is torn down again.
func Start(ctx context.Context, l *lab.Lab, o Options) (n *Node, err error) {
	if err := Preflight(o.BinDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	tag := strconv.Itoa(os.Getpid() % 100000)
	n = &Node{Name: o.Name, NetNS: "ktrn-" + tag, veth: "krn" + tag, Dir: o.Dir, opts: o, procs: map[string]*exec.Cmd{}}
	// A leftover of an earlier run that died before its Stop would make the
	// state recorded here wrong, and its cgroups would mix with this node's.
	if left := leftovers(); len(left) > 0 {
		return nil, fmt.Errorf("a real node cannot run here: an earlier real node left %s (remove it, or reboot)", strings.Join(left, ", "))
	}
	n.before = Snapshot()
	n.sysctls = n.before.Sysctls
	if err := n.saveState(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	if err := n.makeNetNS(); err != nil {
		return nil, err
	}
	apiPort, err := n.forwardAPI(l.Server)
	if err != nil {
		return nil, err
	}
	if err := n.writeFiles(apiPort, l); err != nil {
		return nil, err
	}
	if err := n.spawn("containerd", "containerd", "--config", n.path("containerd.toml")); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 30*time.Second, func() bool {
		return exec.Command("ctr", "--address", n.path("containerd.sock"), "version").Run() == nil
	}); err != nil {
		return nil, fmt.Errorf("containerd did not serve: %w (see %s)", err, n.path("logs/containerd.log"))
	}
	for _, img := range []string{"pause.tar", "busybox.tar"} {
		out, err := exec.CommandContext(ctx, "ctr", "--address", n.path("containerd.sock"), "-n", "k8s.io",
			"images", "import", filepath.Join(o.BinDir, "images", img)).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("importing %s: %v: %s", img, err, out)
		}
	}
	n.client, err = Clientset(l)
	if err != nil {
		return nil, err
	}
	if err := n.StartKubelet(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// StopKubelet stops the node's kubelet (SIGTERM, as systemd would), leaving
// containerd and the pods' containers running: a node whose kubelet is
// down, as after a crash or a bad upgrade.
func (n *Node) StopKubelet() { n.kill("kubelet", 10*time.Second) }

// FreezeKubelet stops the kubelet's process (SIGSTOP) without ending it:
// its port still accepts connections that nothing answers, as a kubelet
// that hangs. ThawKubelet lets it run on (SIGCONT).
func (n *Node) FreezeKubelet() error { return n.signal("kubelet", syscall.SIGSTOP) }

// ThawKubelet resumes a kubelet FreezeKubelet stopped.
func (n *Node) ThawKubelet() error { return n.signal("kubelet", syscall.SIGCONT) }

func (n *Node) signal(name string, sig syscall.Signal) error {
	cmd := n.procs[name]
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("%s is not running", name)
	}
	return cmd.Process.Signal(sig)
}

// StartKubelet starts the node's kubelet and waits until the node is Ready.
func (n *Node) StartKubelet(ctx context.Context) error {
	// A restarted kubelet logs after the one before it.
	_ = os.Rename(n.path("logs/kubelet.log"), n.path(fmt.Sprintf("logs/kubelet.%d.log", time.Now().UnixNano())))
	if err := n.spawn("kubelet", filepath.Join(n.opts.BinDir, "kubelet"),
		"--config="+n.path("kubelet.yaml"), "--kubeconfig="+n.path("kubelet.kubeconfig"),
		"--root-dir="+n.path("kubelet"), "--cert-dir="+n.path("kubelet/pki"),
		"--hostname-override="+n.Name, "--node-ip="+n.IP, "--v=2"); err != nil {
		return err
	}
	if err := waitFor(ctx, 90*time.Second, func() bool {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("node %s not Ready: %w (see %s)", n.Name, err, n.path("logs/kubelet.log"))
	}
	return nil
}

func (n *Node) path(p string) string { return filepath.Join(n.Dir, p) }

// makeNetNS makes the node's network namespace, joined to the machine by a
// veth pair in a free /30 of 198.19.252.0/22 (198.19.0.0/16 is the real
// node's; the main lab's test hosts, whose suite runs beside this one, are in
// 198.18.0.0/16): the node's address is the peer's.
func (n *Node) makeNetNS() error {
	used, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	var machine, peer string
	for i := range 256 {
		b := (os.Getpid() + i) % 256
		base := fmt.Sprintf("198.19.%d.%d", 252+b/64, (b%64)*4)
		ip := net.ParseIP(base).To4()
		machine, peer = net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String(), net.IPv4(ip[0], ip[1], ip[2], ip[3]+2).String()
		if !strings.Contains(string(used), " "+machine+"/") && !strings.Contains(string(used), " "+peer+"/") {
			break
		}
	}
	n.IP = peer
	machineEnd, peerEnd := n.veth+"a", n.veth+"b"
	steps := [][]string{
		{"netns", "add", n.NetNS},
		{"link", "add", machineEnd, "type", "veth", "peer", "name", peerEnd},
		{"link", "set", peerEnd, "netns", n.NetNS},
		{"addr", "add", machine + "/30", "dev", machineEnd},
		{"link", "set", machineEnd, "up"},
		{"-n", n.NetNS, "addr", "add", peer + "/30", "dev", peerEnd},
		{"-n", n.NetNS, "link", "set", peerEnd, "up"},
		{"-n", n.NetNS, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("making the node's network namespace %s: ip %s: %v: %s", n.NetNS, strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// forwardAPI listens on 127.0.0.1 inside the node's namespace and forwards
// each connection to the apiserver on the machine's 127.0.0.1: its port.
func (n *Node) forwardAPI(server string) (int, error) {
	u, err := url.Parse(server)
	if err != nil {
		return 0, err
	}
	ln, err := n.listenInside("127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	n.fwd = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// listenInside makes a TCP listener inside the node's namespace; the socket
// stays there whichever thread accepts on it.
func (n *Node) listenInside(addr string) (net.Listener, error) {
	return scenario.ListenIn(n.NetNS, addr)
}

func (n *Node) writeFiles(apiPort int, l *lab.Lab) error {
	// The kubelet is the node's own user, as a kubeadm node's: the Node
	// authorizer and NodeRestriction hold it to its node and its pods.
	cert, key, err := l.ClientCert("system:node:"+n.Name, "system:nodes")
	if err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml": fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower the pause container's oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[8]q
`, n.path("containerd/root"), n.path("containerd/state"), n.path("containerd.sock"), n.path("containerd.sock.ttrpc"),
			n.path("containerd/opt"), PauseImage, n.path("runc"), n.path("cni/net.d")),
		// Pods get addresses of 198.19.251.0/24 on a bridge inside the node's
		// namespace: nothing routes there from the machine, nothing out.
		"cni/net.d/10-realnode.conflist": fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "realnode", "plugins": [
  {"type": "bridge", "bridge": "rn0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.19.251.0/24"}]], "dataDir": %q}}]}
`, n.path("cni/ipam")),
		"kubelet.kubeconfig": fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
users:
- name: %[2]s
  user: {client-certificate-data: %[3]s, client-key-data: %[4]s}
contexts:
- name: node
  context: {cluster: lab, user: %[2]s}
current-context: node
`, apiPort, "system:node:"+n.Name, base64.StdEncoding.EncodeToString(cert), base64.StdEncoding.EncodeToString(key)),
		"kubelet.yaml": fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
makeIPTablesUtilChains: false
podLogsDir: %[3]s
volumePluginDir: %[4]s
resolvConf: ""
# The apiserver's node proxy presents a certificate the lab's CA signed.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[5]s}
authorization:
  mode: Webhook
# A runtime call that hangs (a frozen pod) fails after 15 s, not 2 min.
runtimeRequestTimeout: 15s
# The machine's disk may be fuller than the defaults allow: never evict, never collect the images.
# Sizes, not percentages: 1%% of a 250 GB disk is 2.5 GB, and a machine with less free than that
# rejected every pod under DiskPressure (phase Failed, reason Evicted).
evictionHard: {memory.available: "1Mi", nodefs.available: "1Mi", imagefs.available: "1Mi", nodefs.inodesFree: "1"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, n.path("containerd.sock"), n.IP, n.path("pod-logs"), n.path("volume-plugins"), l.ClientCA),
	}
	for name, data := range files {
		p := n.path(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// spawn starts bin inside the node's network namespace (nsenter changes
// only the network namespace: mounts stay shared with the machine, as the
// kubelet and containerd need), logging to logs/NAME.log.
func (n *Node) spawn(name, bin string, args ...string) error {
	logf, err := os.Create(n.path("logs/" + name + ".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + n.NetNS, "--", bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	n.procs[name] = cmd
	go func() { _ = cmd.Wait() }()
	return nil
}

// Clientset is an administrator's client of the lab.
func Clientset(l *lab.Lab) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// state is what Start saves in StateFile, for Recover: enough to tear the
// node down after a run killed outright (SIGKILL, a panic) never ran Stop.
type state struct {
	Name, NetNS, Veth, Dir string
	Before                 HostState
}

// StateFile is where a node's state is saved, under its directory.
const StateFile = "realnode.json"

func (n *Node) saveState() error {
	b, err := json.Marshal(state{Name: n.Name, NetNS: n.NetNS, Veth: n.veth, Dir: n.Dir, Before: n.before})
	if err != nil {
		return err
	}
	return os.WriteFile(n.path(StateFile), b, 0o600)
}

// Recover tears down the real nodes whose state files match glob (e.g.
// /tmp/ktrn-*/node/realnode.json) and whose network namespace still
// exists: what a run killed outright left, kernel settings included. It
// removes each state file it handled and names the nodes.
func Recover(glob string) ([]string, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		if _, err := os.Stat("/var/run/netns/" + st.NetNS); err != nil {
			continue // stopped already, or by another run's Recover
		}
		n := &Node{Name: st.Name, NetNS: st.NetNS, veth: st.Veth, Dir: st.Dir, before: st.Before, sysctls: st.Before.Sysctls,
			procs: map[string]*exec.Cmd{}, recovered: true}
		if err := n.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("node %s (%s): %w", n.Name, n.Dir, err))
			continue
		}
		_ = os.Remove(f)
		done = append(done, fmt.Sprintf("%s (%s; kernel settings written back: %s)", n.Name, n.Dir, strings.Join(n.Restored, ", ")))
	}
	return done, errors.Join(errs...)
}

// Stop tears the node down, whatever state it is in, and returns what it
// could not undo. It is safe to call more than once.
func (n *Node) Stop() error {
	n.stopped.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	var errs []error
	// The kubelet first, so it restarts nothing; then every process of the
	// pods (their cgroups), the shims of this containerd, containerd.
	n.kill("kubelet", 10*time.Second)
	thawAll() // a frozen process takes no signal, not even SIGKILL
	killAll(podPIDs())
	killAll(shimPIDs(n.path("containerd.sock")))
	n.kill("containerd", 10*time.Second)
	if n.fwd != nil {
		n.fwd.Close()
	}
	// Mounts: under the node's directory (rootfs, shm, volumes) and the
	// pods' network namespaces containerd pinned in /var/run/netns.
	for _, m := range newMounts(n.before.Mounts, n.Dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	for _, ns := range newEntries(n.before.NetNS, "/var/run/netns") {
		if strings.HasPrefix(ns, "cni-") {
			_ = os.Remove(filepath.Join("/var/run/netns", ns))
		}
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	for _, s := range newEntries(n.before.ShimSockets, "/run/containerd/s") {
		_ = os.Remove(filepath.Join("/run/containerd/s", s))
	}
	for _, d := range createdDirs {
		if !slices.Contains(n.before.Dirs, d) {
			if d == "/var/log/containers" {
				for _, e := range newEntries(nil, d) {
					_ = os.Remove(filepath.Join(d, e))
				}
				_ = os.Remove(d)
			} else if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for k, v := range n.sysctls {
		b, _ := os.ReadFile("/proc/sys/" + k)
		if now := strings.TrimSpace(string(b)); now != v {
			n.Restored = append(n.Restored, fmt.Sprintf("%s %s -> %s", k, now, v))
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", k, v, err))
		}
	}
	if n.NetNS != "" {
		_ = exec.Command("ip", "netns", "del", n.NetNS).Run()
		_ = exec.Command("ip", "link", "del", n.veth+"a").Run()
	}
	if after := Snapshot(); !n.before.Equal(after) {
		errs = append(errs, fmt.Errorf("the machine is not as it was: %s", n.before.Diff(after)))
	}
	if len(errs) == 0 {
		_ = os.Remove(n.path(StateFile))
	}
	return errors.Join(errs...)
}

// kill stops the process NAME by its PID: SIGTERM, then SIGKILL after grace.
// A node recovered from its state file has no exec.Cmd: its processes are
// found by the node's directory in their command line.
func (n *Node) kill(name string, grace time.Duration) {
	var pids []int
	if cmd := n.procs[name]; cmd != nil && cmd.Process != nil {
		pids = []int{cmd.Process.Pid}
	} else if n.recovered {
		pids = pidsWith(name, n.Dir+"/")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT) // a frozen kubelet takes its SIGTERM only once resumed
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; alive(pid) && i < 50; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// pidsWith are the processes whose program's name ends in name and one of
// whose arguments contains arg.
func pidsWith(name, arg string) []int {
	return processes(func(args []string) bool {
		return len(args) >= 2 && filepath.Base(args[0]) == name && slices.ContainsFunc(args[1:], func(a string) bool { return strings.Contains(a, arg) })
	})
}

// processes are the PIDs whose command line (program and arguments) match.
func processes(match func(args []string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if match(strings.Split(string(b), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3, after the parenthesised command: Z is a zombie (dead).
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func killAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for i := 0; i < 50; i++ {
		left := false
		for _, p := range pids {
			left = left || alive(p)
		}
		if !left {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupRoots are the hierarchies the kubelet (cgroupfs driver) makes its
// kubepods tree in: every v1 hierarchy, or the v2 root.
func cgroupRoots() []string {
	var roots []string
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		roots = append(roots, "/sys/fs/cgroup")
	}
	return roots
}

// podPIDs are the processes in the kubelet's kubepods cgroups.
func podPIDs() []int {
	seen := map[int]bool{}
	for _, r := range cgroupRoots() {
		_ = filepath.WalkDir(filepath.Join(r, "kubepods"), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	var pids []int
	for p := range seen {
		pids = append(pids, p)
	}
	return pids
}

// shimPIDs are the containerd shims serving the containerd at sock.
func shimPIDs(sock string) []int {
	return processes(func(args []string) bool {
		return strings.Contains(args[0], "containerd-shim") && slices.Contains(args, sock)
	})
}

// removeCgroups removes the kubepods trees, deepest first; a cgroup whose
// last process is still exiting is retried for a few seconds.
func removeCgroups() error {
	var left []string
	for try := 0; try < 50; try++ {
		left = nil
		for _, r := range cgroupRoots() {
			var dirs []string
			_ = filepath.WalkDir(filepath.Join(r, "kubepods"), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
			for _, d := range dirs {
				if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
					left = append(left, d)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cgroups left: %s", strings.Join(left, ", "))
}

// FreezePod freezes the pod's cgroup (the pod-level freezer: freezing a
// container's own cgroup does not stick, runc thaws it to kill): from then
// on the runtime can neither stop nor kill its processes. Thaw with ThawPod.
func FreezePod(uid string) error { return setFrozen(uid, true) }

// ThawPod thaws a pod FreezePod froze.
func ThawPod(uid string) error { return setFrozen(uid, false) }

// setFrozen freezes or thaws the pod's cgroup, cgroup v1 (freezer.state) or
// v2 (cgroup.freeze), and waits until the kernel says it is done.
func setFrozen(uid string, frozen bool) error {
	dir, err := podCgroup(uid)
	if err != nil {
		return err
	}
	file, value, doneFile, done := "freezer.state", "THAWED", "freezer.state", "THAWED"
	if frozen {
		value, done = "FROZEN", "FROZEN"
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.freeze")); err == nil {
		file, value, doneFile, done = "cgroup.freeze", "0", "cgroup.events", "frozen 0"
		if frozen {
			value, done = "1", "frozen 1"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("writing %s to %s: %w", value, filepath.Join(dir, file), err)
	}
	return waitFor(context.Background(), 10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, doneFile))
		return err == nil && strings.Contains(string(b), done)
	})
}

// podCgroup is the pod's cgroup in the freezer hierarchy (v1) or the v2
// root: kubepods[/<qos>]/pod<uid>, as the kubelet's cgroupfs driver names it.
func podCgroup(uid string) (string, error) {
	root := freezerRoot()
	var found string
	_ = filepath.WalkDir(filepath.Join(root, "kubepods"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "pod"+uid {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		return "", fmt.Errorf("no cgroup for pod %s under %s", uid, filepath.Join(root, "kubepods"))
	}
	return found, nil
}

// freezerRoot is the v1 freezer hierarchy, or the v2 root.
func freezerRoot() string {
	if _, err := os.Stat("/sys/fs/cgroup/freezer"); err == nil {
		return "/sys/fs/cgroup/freezer"
	}
	return "/sys/fs/cgroup"
}

// thawAll thaws every kubepods cgroup, for the teardown.
func thawAll() {
	_ = filepath.WalkDir(filepath.Join(freezerRoot(), "kubepods"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			for file, value := range map[string]string{"freezer.state": "THAWED", "cgroup.freeze": "0"} {
				if _, err := os.Stat(filepath.Join(p, file)); err == nil {
					_ = os.WriteFile(filepath.Join(p, file), []byte(value), 0o644)
				}
			}
		}
		return nil
	})
}

// createdDirs are directories outside the node's own that the kubelet or
// containerd create when missing: Stop removes those that did not exist.
var createdDirs = []string{"/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd", "/var/lib/kubelet",
	"/etc/kubernetes", "/opt/cni", "/etc/cni", "/usr/libexec/kubernetes"}

// HostState is what a real node may change on the machine.
type HostState struct {
	Sysctls     map[string]string
	Mounts      []string
	Cgroups     []string
	NetNS       []string
	ShimSockets []string
	Dirs        []string
	// Firewall is the machine's iptables and ip6tables rules (iptables-save,
	// counters and comments left out); Links its network interfaces.
	Firewall []string
	Links    []string
}

// Snapshot reads the machine's state a real node may change.
func Snapshot() HostState {
	s := HostState{Sysctls: map[string]string{}}
	for _, k := range Sysctls {
		b, _ := os.ReadFile("/proc/sys/" + k)
		s.Sysctls[k] = strings.TrimSpace(string(b))
	}
	s.Mounts = mountPoints()
	for _, r := range cgroupRoots() {
		if _, err := os.Stat(filepath.Join(r, "kubepods")); err == nil {
			s.Cgroups = append(s.Cgroups, filepath.Join(r, "kubepods"))
		}
	}
	for _, ns := range newEntries(nil, "/var/run/netns") {
		if ours(ns) {
			s.NetNS = append(s.NetNS, ns)
		}
	}
	s.ShimSockets = newEntries(nil, "/run/containerd/s")
	for _, d := range createdDirs {
		if _, err := os.Stat(d); err == nil {
			s.Dirs = append(s.Dirs, d)
		}
	}
	s.Firewall = firewallRules()
	s.Links = links()
	return s
}

// counters are iptables-save's packet and byte counts, [packets:bytes].
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// firewallRules are the machine's IPv4 and IPv6 tables, chains and rules, as
// iptables-save prints them, without its comments and counters (which
// change with traffic, not with what a node leaves).
func firewallRules() []string {
	var rules []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(save); err != nil {
			continue // no iptables: nothing of it to change
		}
		out, err := exec.Command(save).Output()
		if err != nil {
			rules = append(rules, save+" failed: "+err.Error())
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(counters.ReplaceAllString(l, "")); l != "" && !strings.HasPrefix(l, "#") {
				rules = append(rules, save+": "+l)
			}
		}
	}
	return rules
}

// links are the names of the machine's network interfaces, but the main
// lab's test hosts'.
func links() []string {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if !scenario.IsTestHostLink(name) { // the main lab's test hosts come and go while a real node runs
				names = append(names, name)
			}
		}
	}
	return names
}

// Equal says whether two snapshots agree.
func (s HostState) Equal(o HostState) bool { return s.Diff(o) == "" }

// Diff names what differs from s in o.
func (s HostState) Diff(o HostState) string {
	var d []string
	for k, v := range s.Sysctls {
		if o.Sysctls[k] != v {
			d = append(d, fmt.Sprintf("%s %s, was %s", k, o.Sysctls[k], v))
		}
	}
	list := func(what string, a, b []string) {
		for _, x := range b {
			if !slices.Contains(a, x) {
				d = append(d, what+" "+x+" added")
			}
		}
		for _, x := range a {
			if !slices.Contains(b, x) {
				d = append(d, what+" "+x+" gone")
			}
		}
	}
	list("mount", s.Mounts, o.Mounts)
	list("cgroup", s.Cgroups, o.Cgroups)
	list("netns", s.NetNS, o.NetNS)
	list("shim socket", s.ShimSockets, o.ShimSockets)
	list("directory", s.Dirs, o.Dirs)
	list("firewall rule", s.Firewall, o.Firewall)
	list("network interface", s.Links, o.Links)
	return strings.Join(d, "; ")
}

// leftovers are what an earlier real node that was never stopped left.
func leftovers() []string {
	var left []string
	for _, r := range cgroupRoots() {
		if _, err := os.Stat(filepath.Join(r, "kubepods")); err == nil {
			left = append(left, filepath.Join(r, "kubepods"))
		}
	}
	for _, ns := range newEntries(nil, "/var/run/netns") {
		if strings.HasPrefix(ns, "ktrn-") {
			left = append(left, "network namespace "+ns)
		}
	}
	return left
}

// mountPoints are the machine's mount points but the network namespaces of
// others (the main lab's test hosts come and go while a real node runs) and
// /run/netns itself, which ip makes a mount point once and for all.
func mountPoints() []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var ms []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) <= 4 || f[4] == "/run/netns" {
			continue
		}
		if ns, ok := strings.CutPrefix(f[4], "/run/netns/"); ok && !ours(ns) {
			continue
		}
		ms = append(ms, f[4])
	}
	return ms
}

// ours says whether a network namespace is a real node's or its pods'.
func ours(ns string) bool { return strings.HasPrefix(ns, "ktrn-") || strings.HasPrefix(ns, "cni-") }

// newMounts are the mount points not in before that are under dir or are
// pods' network namespaces, deepest (last mounted) first.
func newMounts(before []string, dir string) []string {
	var ms []string
	for _, m := range mountPoints() {
		if slices.Contains(before, m) {
			continue
		}
		if strings.HasPrefix(m, dir+"/") || strings.HasPrefix(m, "/run/netns/cni-") || strings.HasPrefix(m, "/var/run/netns/cni-") {
			ms = append(ms, m)
		}
	}
	slices.Reverse(ms)
	return ms
}

// newEntries are the names in dir that are not in before.
func newEntries(before []string, dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !slices.Contains(before, e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// waitFor polls cond until it holds, up to timeout.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after %s", timeout)
		case <-tick.C:
		}
	}
	return nil
}

// dialed finds the addresses a component dialled or called, as its logs
// name them ("dial tcp 10.96.0.7:443", "Post \"https://...").
var dialed = regexp.MustCompile(`(?:dial tcp |https?://)(\d+\.\d+\.\d+\.\d+):\d+`)

// CheckNetworkRule fails if the lab's apiserver or controller manager, or
// the node's kubelet or containerd, called an address other than loopback
// or the lab's own namespaces (198.18.0.0/15: test hosts, the node, its pods).
func CheckNetworkRule(labDir, nodeDir string) error {
	_, tests, _ := net.ParseCIDR("198.18.0.0/15")
	logs := []string{filepath.Join(labDir, "logs", "kube-apiserver.log"), filepath.Join(labDir, "logs", "kube-controller-manager.log"),
		filepath.Join(nodeDir, "logs", "kubelet.log"), filepath.Join(nodeDir, "logs", "containerd.log")}
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, m := range dialed.FindAllSubmatch(data, -1) {
			ip := net.ParseIP(string(m[1]))
			if ip == nil || (!ip.IsLoopback() && !tests.Contains(ip)) {
				return fmt.Errorf("%s: %s was called, neither loopback nor the lab's own: %q", f, m[1], m[0])
			}
		}
	}
	return nil
}
