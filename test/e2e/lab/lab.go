// Package lab runs a real control plane on loopback: etcd, kube-apiserver,
// kube-controller-manager (Kubernetes v1.36.3, or another release of the
// version matrix: Options.KubeBinDir) and kwok playing the kubelets of fake
// nodes. Binaries come from build.sh; nothing is downloaded at run time.
package lab

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

var (
	//go:embed stages.yaml
	stagesYAML []byte
	//go:embed audit-policy.yaml
	auditPolicyYAML []byte
)

// Tokens of the lab's two users: an administrator and a user with no rights.
const (
	AdminToken  = "lab-admin-token"
	NobodyToken = "lab-nobody-token"
	// FakeNodeAnnotation marks the nodes kwok plays the kubelet of. A node
	// without it has no kubelet: its Lease is never renewed.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	// KubeletLabel on a pod makes its fake kubelet hang (see stages.yaml).
	KubeletLabel = "lab.kubectl-terminating.io/kubelet"
	// KillDelayAnnotation delays the fake kubelet's kill (a Go duration).
	KillDelayAnnotation = "lab.kubectl-terminating.io/kill-delay"
)

// Options configure a lab.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kwok.
	BinDir string
	// KubeBinDir, if set, holds the kube-apiserver and kube-controller-manager
	// to run instead of BinDir's: another Kubernetes release of the version
	// matrix (build.sh puts each in BinDir/<minor>, e.g. .lab/bin/v1.31).
	// etcd and kwok still come from BinDir. Every release of the matrix
	// (v1.31.4, v1.36.3, v1.37.2) takes the same flags: none is refused or
	// reported deprecated, so no flag depends on the version.
	KubeBinDir string
	// Dir holds the lab's state: data, certificates, logs, kubeconfig.
	Dir string
	// Detach leaves the processes running when the caller exits (make demo).
	Detach bool
	// Bench tunes the lab for `make bench`: no audit log (it would cost the
	// apiserver more than the reads measured), no namespace controller (so a
	// deleted namespace keeps all its content) and no kwok. Every lab routes
	// webhooks and aggregated APIs to endpoints, never to a ClusterIP.
	Bench bool
	// NamespaceController keeps the namespace controller in a Bench lab (the
	// bench's case of the controller's conditions, issue 38).
	NamespaceController bool
	// APFSeats, when set, runs the apiserver with priority and fairness (a
	// real cluster's default, off in the suite's lab) and at most that many
	// reads at once (--max-requests-inflight; writes half as many): a busy
	// server, which queues and answers 429 (hack/pace.sh).
	APFSeats int
	// LeaderElect runs kube-controller-manager with leader election on, as a
	// real control plane does (its Lease kube-system/kube-controller-manager),
	// renewed every second for 4 s, so that a test sees a stopped one's Lease
	// lapse soon.
	LeaderElect bool
}

// Lab is a running control plane.
type Lab struct {
	Dir        string
	Kubeconfig string
	Server     string
	AuditLog   string
	// ClientCA is the lab's client CA (see pki.go): the apiserver and a
	// real kubelet trust the certificates it signs.
	ClientCA string
	opts     Options
	procs    []*exec.Cmd
	names    []string // of procs, by index
}

// State is what a detached lab leaves in Dir/lab.json for `lab down`.
type State struct {
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	PIDs       []int  `json:"pids"`
}

// Start brings the control plane up and waits until it serves.
func Start(ctx context.Context, o Options) (l *Lab, err error) {
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	l = &Lab{Dir: o.Dir, Kubeconfig: filepath.Join(o.Dir, "kubeconfig"), AuditLog: filepath.Join(o.Dir, "audit.log"),
		ClientCA: filepath.Join(o.Dir, clientCACert), opts: o}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	l.Server = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := l.writeFiles(); err != nil {
		return nil, err
	}
	path := func(n string) string { return filepath.Join(o.Dir, n) }
	bin := func(n string) string { return filepath.Join(o.BinDir, n) }
	kubeBin := func(n string) string { return filepath.Join(o.kubeBinDir(), n) }

	if err := l.spawn(o, "etcd", bin("etcd"),
		"--name=lab", "--data-dir="+path("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=lab="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, etcdURL+"/health", "", 30*time.Second); err != nil {
		return nil, fmt.Errorf("etcd: %w (see %s)", err, path("logs/etcd.log"))
	}

	apiserver := []string{
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]), "--cert-dir=" + path("certs"),
		"--token-auth-file=" + path("tokens.csv"), "--client-ca-file=" + path(clientCACert),
		// A real node's kubelet is system:node:NAME, held to its own node
		// and pods by the Node authorizer and NodeRestriction, as kubeadm's.
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + path("sa.key"), "--service-account-signing-key-file=" + path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
		"--profiling=false",
		// Webhooks and aggregated APIs resolve to their Service's endpoints,
		// never to a ClusterIP: with no endpoints nothing is dialled, and a
		// local backend is reached on its own address.
		"--enable-aggregator-routing=true",
		// The node proxy authenticates to kubelets with a client certificate,
		// and dials a node by its InternalIP (kubeadm's order), never by a
		// hostname the machine would have to resolve.
		"--kubelet-client-certificate=" + path("kubelet-client.crt"), "--kubelet-client-key=" + path("kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname"}
	if o.APFSeats > 0 {
		apiserver = append(apiserver, "--max-requests-inflight="+strconv.Itoa(o.APFSeats), "--max-mutating-requests-inflight="+strconv.Itoa(max(1, o.APFSeats/2)))
	} else {
		apiserver = append(apiserver, "--enable-priority-and-fairness=false")
	}
	if !o.Bench {
		apiserver = append(apiserver, "--audit-policy-file="+path("audit-policy.yaml"), "--audit-log-path="+l.AuditLog)
	}
	if err := l.spawn(o, "kube-apiserver", kubeBin("kube-apiserver"), apiserver...); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, l.Server+"/readyz", AdminToken, 90*time.Second); err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w (see %s)", err, path("logs/kube-apiserver.log"))
	}

	controllers := "*"
	if o.Bench && !o.NamespaceController {
		controllers = "*,-namespace"
	}
	leaderElection := []string{"--leader-elect=false"}
	if o.LeaderElect {
		leaderElection = []string{"--leader-elect=true", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"}
	}
	if err := l.spawn(o, "kube-controller-manager", kubeBin("kube-controller-manager"), append(leaderElection,
		"--kubeconfig="+l.Kubeconfig, "--controllers="+controllers,
		"--service-account-private-key-file="+path("sa.key"), "--use-service-account-credentials=false",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[3]),
		// A node whose kubelet stops is marked Unknown and tainted after 20 s.
		"--node-monitor-grace-period=20s", "--node-monitor-period=2s",
		// Tests kill many nodes at once: taint each at once, and never treat the
		// zone as disrupted (which stops the NoExecute tainting of small clusters).
		"--node-eviction-rate=10", "--unhealthy-zone-threshold=1.01")...); err != nil {
		return nil, err
	}
	if o.Bench {
		return l, nil
	}
	if err := l.spawn(o, "kwok", bin("kwok"),
		"--kubeconfig="+l.Kubeconfig, "--config="+path("kwok.yaml"),
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=20", "--server-address=127.0.0.1:"+strconv.Itoa(ports[4]),
		// A kwok node's address is loopback, which the apiserver's node proxy
		// refuses to dial: --kubelet on a kwok node reaches nothing.
		"--cidr=10.244.0.0/16", "--node-ip=127.0.0.1"); err != nil {
		return nil, err
	}
	if o.Detach {
		return l, l.saveState()
	}
	return l, nil
}

func (o Options) kubeBinDir() string {
	if o.KubeBinDir != "" {
		return o.KubeBinDir
	}
	return o.BinDir
}

func (l *Lab) writeFiles() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	files := map[string][]byte{
		"sa.key": keyPEM,
		"tokens.csv": []byte(fmt.Sprintf("%s,lab-admin,lab-admin-uid,\"system:masters\"\n%s,lab-nobody,lab-nobody-uid\n",
			AdminToken, NobodyToken)),
		"audit-policy.yaml": auditPolicyYAML,
		"kwok.yaml":         stagesYAML,
		"kubeconfig":        []byte(Kubeconfig(l.Server)),
	}
	if err := l.writePKI(); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(l.Dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Kubeconfig for the lab: context "lab" (admin) and "lab-nobody" (no rights).
func Kubeconfig(server string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: lab-admin
  user:
    token: %s
- name: lab-nobody
  user:
    token: %s
contexts:
- name: lab
  context: {cluster: lab, user: lab-admin, namespace: default}
- name: lab-nobody
  context: {cluster: lab, user: lab-nobody, namespace: default}
current-context: lab
`, server, AdminToken, NobodyToken)
}

func (l *Lab) spawn(o Options, name, bin string, args ...string) error {
	// Appended to: a restarted component keeps its earlier log.
	logf, err := os.OpenFile(filepath.Join(l.Dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !o.Detach {
		// Die with the test binary, even if it is killed.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w (run `make lab-bin` to build the lab)", name, err)
	}
	logf.Close()
	l.procs = append(l.procs, cmd)
	l.names = append(l.names, name)
	return nil
}

// proc is the running process of a component ("etcd", "kube-apiserver", ...).
func (l *Lab) proc(name string) (int, error) {
	for i, n := range l.names {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("the lab runs no %s", name)
}

// Signal sends sig to a component's process group: SIGSTOP on etcd freezes
// the control plane's storage in place (requests hang, nothing is refused),
// SIGCONT lets it go on.
func (l *Lab) Signal(name string, sig syscall.Signal) error {
	i, err := l.proc(name)
	if err != nil {
		return err
	}
	return syscall.Kill(-l.procs[i].Process.Pid, sig)
}

// Restart stops a component, leaves it down for a while, and starts it again
// with the same flags; the apiserver is then waited for until ready.
func (l *Lab) Restart(ctx context.Context, name string, down time.Duration) error {
	i, err := l.proc(name)
	if err != nil {
		return err
	}
	old := l.procs[i]
	StopPIDs([]int{old.Process.Pid})
	_ = old.Wait()
	time.Sleep(down)
	if err := l.spawn(l.opts, name, old.Path, old.Args[1:]...); err != nil {
		return err
	}
	last := len(l.procs) - 1
	l.procs[i], l.names[i] = l.procs[last], name
	l.procs, l.names = l.procs[:last], l.names[:last]
	if name == "kube-apiserver" {
		return waitHTTP(ctx, l.Server+"/readyz", AdminToken, 90*time.Second)
	}
	return nil
}

func (l *Lab) saveState() error {
	st := State{Kubeconfig: l.Kubeconfig, Server: l.Server}
	for _, p := range l.procs {
		st.PIDs = append(st.PIDs, p.Process.Pid)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.Dir, "lab.json"), data, 0o644)
}

// Stop ends the processes, last started first.
func (l *Lab) Stop() {
	pids := make([]int, 0, len(l.procs))
	for _, p := range l.procs {
		pids = append(pids, p.Process.Pid)
	}
	StopPIDs(pids)
	for _, p := range l.procs {
		_ = p.Wait()
	}
	l.procs = nil
}

// StopPIDs terminates process groups in reverse order: SIGTERM, then SIGKILL after 5 s.
func StopPIDs(pids []int) {
	for i := len(pids) - 1; i >= 0; i-- {
		_ = syscall.Kill(-pids[i], syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil && !zombie(pid) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// zombie reports a process that exited but was not reaped (our own child).
func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	for i := len(data) - 1; i > 0; i-- {
		if data[i] == ')' && i+2 < len(data) {
			return data[i+2] == 'Z'
		}
	}
	return false
}

// LoadState reads a detached lab's state.
func LoadState(dir string) (State, error) {
	var st State
	data, err := os.ReadFile(filepath.Join(dir, "lab.json"))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func waitHTTP(ctx context.Context, url, token string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the lab's self-signed apiserver
	}}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
