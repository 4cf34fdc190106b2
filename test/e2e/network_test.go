package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// dialed finds the addresses the control plane dialled or called, as its
// logs name them in errors ("dial tcp 10.96.0.7:443", "Post \"https://...").
var dialed = regexp.MustCompile(`(?:dial tcp |https?://)(\d+\.\d+\.\d+\.\d+):\d+`)

// checkNetworkRule fails if the lab's apiserver or controller manager called
// an address other than loopback or the lab's own test hosts (198.18.0.0/15):
// a webhook or aggregated API resolved to a ClusterIP, or a backend on the
// machine's own interface address, would show here.
func checkNetworkRule(labDir string) error {
	_, tests, _ := net.ParseCIDR("198.18.0.0/15")
	for _, name := range []string{"kube-apiserver.log", "kube-controller-manager.log"} {
		data, err := os.ReadFile(filepath.Join(labDir, "logs", name))
		if err != nil {
			return err
		}
		for _, m := range dialed.FindAllSubmatch(data, -1) {
			ip := net.ParseIP(string(m[1]))
			if ip == nil || (!ip.IsLoopback() && !tests.Contains(ip)) {
				return fmt.Errorf("%s: the control plane called %s, neither loopback nor a lab test host: %q", name, m[1], m[0])
			}
		}
	}
	return nil
}

// The check itself: a ClusterIP or an outside address is caught, loopback
// and the lab's test hosts are not.
func TestNetworkRuleCheck(t *testing.T) {
	write := func(apiserver string) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"kube-apiserver.log": apiserver, "kube-controller-manager.log": "ok"} {
			if err := os.WriteFile(filepath.Join(dir, "logs", name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	fine := `Post "https://127.0.0.1:41000/validate": x` + "\n" + `dial tcp 198.18.3.2:35555: i/o timeout`
	if err := checkNetworkRule(write(fine)); err != nil {
		t.Errorf("loopback and a test host: %v", err)
	}
	for _, bad := range []string{`failed calling webhook: Post "https://10.96.12.7:443/validate?timeout=10s"`, `dial tcp 172.17.0.2:443: connect: connection refused`} {
		if err := checkNetworkRule(write(bad)); err == nil {
			t.Errorf("not caught: %s", bad)
		}
	}
}
