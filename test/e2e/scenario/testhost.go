package scenario

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// TestHost is a network namespace the lab makes, joined to the machine by a
// veth pair in 198.18.0.0/15: the machine's end is MachineIP, the test
// host's PeerIP. A local backend that the apiserver must reach on a
// non-loopback address (it refuses loopback endpoints) listens there, so
// no test ever sends traffic to the machine's own interface address.
type TestHost struct {
	Name, MachineIP, PeerIP string
}

var testHosts atomic.Int32

// NewTestHost makes a test host; Close removes it. It needs root (ip netns).
func NewTestHost() (*TestHost, error) {
	n := int(testHosts.Add(1))
	id := fmt.Sprintf("%s%d", hostPrefix(), n)
	// A /30 of its own in 198.18.0.0/16, from the pid and a counter:
	// 198.19.0.0/16 is the real node's (realnode.go), whose suite runs
	// beside this one.
	block := (os.Getpid()*16 + n) % (1 << 14)
	base := net.IPv4(198, 18, byte(block>>6), byte(block&63)<<2)
	h := &TestHost{Name: id, MachineIP: addIP(base, 1), PeerIP: addIP(base, 2)}
	suffix := strings.TrimPrefix(id, "kt-")
	machineEnd, peerEnd := testHostLinkPrefixes[0]+suffix, testHostLinkPrefixes[1]+suffix
	steps := [][]string{
		{"netns", "add", h.Name},
		{"link", "add", machineEnd, "type", "veth", "peer", "name", peerEnd},
		{"link", "set", peerEnd, "netns", h.Name},
		{"addr", "add", h.MachineIP + "/30", "dev", machineEnd},
		{"link", "set", machineEnd, "up"},
		{"netns", "exec", h.Name, "ip", "addr", "add", h.PeerIP + "/30", "dev", peerEnd},
		{"netns", "exec", h.Name, "ip", "link", "set", peerEnd, "up"},
		{"netns", "exec", h.Name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			h.Close()
			return nil, fmt.Errorf("making test host %s (needs root and iproute2): ip %s: %v: %s", h.Name, strings.Join(s, " "), err, out)
		}
	}
	return h, nil
}

// testHostLinkPrefixes begin the names of a test host's veth ends: the
// machine's, then the host's.
var testHostLinkPrefixes = [2]string{"kta", "ktb"}

// IsTestHostLink says whether a network interface is a test host's end.
func IsTestHostLink(name string) bool {
	return strings.HasPrefix(name, testHostLinkPrefixes[0]) || strings.HasPrefix(name, testHostLinkPrefixes[1])
}

func addIP(base net.IP, n byte) string {
	ip := base.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+n).String()
}

// Listen opens a TCP listener on the test host's address: the socket is
// made inside its network namespace and stays there, whichever thread
// accepts on it later.
func (h *TestHost) Listen() (net.Listener, error) {
	return ListenIn(h.Name, net.JoinHostPort(h.PeerIP, "0"))
}

// ListenIn opens a TCP listener on addr inside the named network namespace
// (/var/run/netns/NAME).
func ListenIn(netns, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread enters the namespace only to make the socket, then goes
		// back: a thread that dies would take with it the lab processes it
		// forked (their Pdeathsig follows the forking thread).
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer back.Close()
		target, err := os.Open("/var/run/netns/" + netns)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("entering %s: %w", netns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		if unix.Setns(int(back.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // back home: the thread may serve others
		} // else it stays locked and is retired with this goroutine
		done <- result{ln, err}
	}()
	r := <-done
	return r.ln, r.err
}

// Close removes the namespace, and with it the veth pair.
func (h *TestHost) Close() {
	_ = exec.Command("ip", "netns", "del", h.Name).Run()
}

// hostPrefix names this process's test hosts.
func hostPrefix() string { return fmt.Sprintf("kt-%d-", os.Getpid()%100000) }

// RemoveTestHosts removes every test host this process made and did not
// close (a test that failed before its cleanup): the lab tears them down
// with itself.
func RemoveTestHosts() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, hostPrefix()) {
			(&TestHost{Name: name}).Close()
		}
	}
}
