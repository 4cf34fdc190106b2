package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
)

// interposer is the lab's apiserver as one run of the plugin sees it: a
// plain-HTTP proxy on loopback that authenticates as the lab's
// administrator. Before it forwards a request it calls before with the
// points of the run the request is ("read 3", "write 1", "deployments 1":
// the third read, the first write, the first list of Deployments), so a test
// can change the cluster there, as another client would at that moment;
// after a write, wrote is called with its response. Both get the request's
// number in the run.
type interposer struct {
	url    string
	srv    *http.Server
	mu     sync.Mutex
	seq    int
	counts map[string]int
	before func(seq int, points []string, r *http.Request)
	wrote  func(seq int, r *http.Request, status int, body []byte)
}

// seqHeader carries a request's number from the handler to the response
// (the proxy forwards a copy of the request).
const seqHeader = "X-Interposer-Seq"

func startInterposer(t *testing.T, before func(int, []string, *http.Request), wrote func(int, *http.Request, int, []byte)) *interposer {
	t.Helper()
	return startInterposerTo(t, theLab.Server, before, wrote)
}

// startInterposerTo is startInterposer in front of the lab served at server.
func startInterposerTo(t *testing.T, server string, before func(int, []string, *http.Request), wrote func(int, *http.Request, int, []byte)) *interposer {
	t.Helper()
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	p := &interposer{counts: map[string]int{}, before: before, wrote: wrote}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // #nosec G402: the lab's own apiserver on loopback
	rp.ModifyResponse = func(resp *http.Response) error {
		if !isWrite(resp.Request) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		seq, _ := strconv.Atoi(resp.Request.Header.Get(seqHeader))
		p.wrote(seq, resp.Request, resp.StatusCode, body)
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.url = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+lab.AdminToken)
		p.mu.Lock()
		p.seq++
		seq := p.seq
		var points []string
		for _, kind := range pointsOf(r) {
			p.counts[kind]++
			points = append(points, fmt.Sprintf("%s %d", kind, p.counts[kind]))
		}
		p.mu.Unlock()
		r.Header.Set(seqHeader, strconv.Itoa(seq))
		p.before(seq, points, r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

// pointsOf names the points of a run a request is.
func pointsOf(r *http.Request) []string {
	if isWrite(r) {
		return []string{"write"}
	}
	points := []string{"read"}
	if strings.HasSuffix(r.URL.Path, "/deployments") {
		points = append(points, "deployments")
	}
	return points
}

// isWrite: a request that changes an object (an access review, created to
// ask a question, is a read).
func isWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	case http.MethodPost:
		return !strings.HasSuffix(r.URL.Path, "reviews")
	}
	return true
}

// kubeconfig is a kubeconfig that reaches the lab through the interposer.
func (p *interposer) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: " + p.url +
		"\nusers:\n- name: admin\n  user: {}\ncontexts:\n- name: lab\n  context: {cluster: lab, user: admin}\ncurrent-context: lab\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
