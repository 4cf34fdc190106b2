package scenario

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// FakeKubelet serves a kubelet's read-only endpoints, /pods (a v1.PodList)
// and /stats/summary (the kubelet's stats v1alpha1 Summary), over TLS in a
// test host, for a Node whose InternalIP and kubelet port point at it: the
// apiserver's node proxy reaches it as it reaches a kubelet (it refuses
// loopback node addresses, hence the test host). The node is alive: its
// Lease is renewed every 2 s until Close.
type FakeKubelet struct {
	Node string

	host *TestHost
	srv  *http.Server
	stop func()

	mu      sync.Mutex
	pods    []corev1.Pod
	summary statsv1alpha1.Summary
	hang    bool
	served  map[string]int
}

// KubeletNode starts a fake kubelet and registers its Node.
func (e *Env) KubeletNode(ctx context.Context, name string) (*FakeKubelet, error) {
	host, err := NewTestHost()
	if err != nil {
		return nil, err
	}
	k := &FakeKubelet{Node: name, host: host, served: map[string]int{}}
	ln, err := host.Listen()
	if err != nil {
		host.Close()
		return nil, err
	}
	cert, err := selfSigned(host.PeerIP)
	if err != nil {
		ln.Close()
		host.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/pods", k.serve(func() any {
		return corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: k.pods}
	}))
	mux.HandleFunc("/stats/summary", k.serve(func() any { return k.summary }))
	k.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.srv.ServeTLS(ln, "", "") }()

	port, err := strconv.Atoi(portOf(ln.Addr()))
	if err == nil {
		err = e.DyingNode(ctx, name) // Ready once, with a Lease, renewed below
	}
	if err == nil {
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{
			"addresses":       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host.PeerIP}},
			"daemonEndpoints": corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		}})
		_, err = e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if err != nil {
		k.srv.Close()
		host.Close()
		return nil, err
	}
	k.stop = e.renewLease(name)
	return k, nil
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}

// serve answers with what body returns, or hangs (until the client gives up).
func (k *FakeKubelet) serve(body func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.served[r.URL.Path]++
		hang := k.hang
		data, err := json.Marshal(body())
		k.mu.Unlock()
		if hang {
			<-r.Context().Done()
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}
}

// Manage makes the kubelet report pod as one it manages, with its containers
// stopped; cgroup adds the pod's CPU and memory stats (its cgroup is still
// there) and volumes the volumes it still has mounted.
func (k *FakeKubelet) Manage(pod *corev1.Pod, cgroup bool, volumes ...statsv1alpha1.VolumeStats) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := pod.DeepCopy()
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
	}
	k.pods = append(k.pods, *p)
	stats := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
		StartTime: metav1.Now(), VolumeStats: volumes}
	if cgroup {
		cpu, mem := uint64(1000), uint64(4<<20)
		stats.CPU = &statsv1alpha1.CPUStats{Time: metav1.Now(), UsageCoreNanoSeconds: &cpu}
		stats.Memory = &statsv1alpha1.MemoryStats{Time: metav1.Now(), WorkingSetBytes: &mem}
	}
	k.summary.Node.NodeName = k.Node
	k.summary.Pods = append(k.summary.Pods, stats)
}

// Hang makes every request hang until its client gives up.
func (k *FakeKubelet) Hang() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hang = true
}

// Served counts the requests made to an endpoint ("/pods", "/stats/summary").
func (k *FakeKubelet) Served(path string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.served[path]
}

// Close stops the kubelet (its Lease then goes stale) and removes its host.
func (k *FakeKubelet) Close() {
	k.stop()
	k.srv.Close()
	k.host.Close()
}

// renewLease renews a node's Lease every 2 s until the returned func is called.
func (e *Env) renewLease(name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				renew := metav1.NewMicroTime(time.Now())
				patch := fmt.Sprintf(`{"spec":{"renewTime":%q}}`, renew.Format(metav1.RFC3339Micro))
				_, _ = e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			}
		}
	}()
	return cancel
}

// selfSigned is a serving certificate for ip, as a kubelet makes for itself
// when it has no other (the apiserver does not verify it unless started
// with --kubelet-certificate-authority, which the lab is not).
func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
