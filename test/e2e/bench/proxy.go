// Package bench measures the plugin against the lab: wall time, API
// requests, bytes received and peak memory, beside the kubectl one-liner
// operators use and a floor program that only lists. `make bench` runs it.
package bench

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Proxy sits between a measured program and the apiserver and counts the
// requests it makes and the bytes it receives.
type Proxy struct {
	URL      string
	requests atomic.Int64
	bytes    atomic.Int64
	srv      *http.Server
}

// StartProxy proxies plain HTTP on a loopback port to the apiserver at
// target, authenticating every request with token (clients do not send
// tokens over plain HTTP).
func StartProxy(target, token string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64} // #nosec G402: the lab's own apiserver
	rp.ModifyResponse = func(r *http.Response) error {
		r.Body = &countingBody{ReadCloser: r.Body, n: &p.bytes}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		r.Header.Set("Authorization", "Bearer "+token)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Reset zeroes the counters and returns what they held.
func (p *Proxy) Reset() (requests, bytes int64) {
	return p.requests.Swap(0), p.bytes.Swap(0)
}

// Close stops the proxy.
func (p *Proxy) Close() { _ = p.srv.Close() }

// Kubeconfig writes a kubeconfig that reaches the apiserver through the proxy.
func (p *Proxy) Kubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "bench-kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: " + p.URL +
		"\nusers:\n- name: admin\n  user: {}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: admin}\ncurrent-context: lab\n"
	return path, os.WriteFile(path, []byte(data), 0o600)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
