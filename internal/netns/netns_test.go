//go:build linux

package netns

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// dial runs bash inside h to open a TCP connection to addr, giving up
// after a few seconds; nil when it connected.
func dial(h *Host, addr string) error {
	host, port, _ := net.SplitHostPort(addr)
	out, err := h.Command("timeout", "5", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// accept serves l until it is closed, closing each connection at once.
func accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// TestHostsReachOnlyTheBridge: two hosts with addresses of their own on
// the bridge's /24 reach a server listening on the bridge address, not
// one on the root namespace's loopback; a cut host reaches nothing until
// restored; and everything is gone after Cleanup.
func TestHostsReachOnlyTheBridge(t *testing.T) {
	var names []string
	var bridge string
	t.Run("net", func(t *testing.T) {
		n := New(t)
		bridge = n.bridge
		a, b := n.AddHost(), n.AddHost()
		names = []string{a.Name, b.Name, a.veth, b.veth}
		if a.Addr == b.Addr || !n.Subnet.Contains(a.Addr) || !n.Subnet.Contains(b.Addr) || a.Addr == n.HostAddr {
			t.Fatalf("addresses: bridge %s, hosts %s and %s in %s", n.HostAddr, a.Addr, b.Addr, n.Subnet)
		}
		out, err := a.Command("ip", "-o", "-4", "addr", "show").CombinedOutput()
		if err != nil || !strings.Contains(string(out), a.Addr.String()+"/24") || !strings.Contains(string(out), "127.0.0.1") {
			t.Fatalf("host %s's addresses (want %s and loopback): %v\n%s", a.Name, a.Addr, err, out)
		}

		onBridge, err := net.Listen("tcp", netip.AddrPortFrom(n.HostAddr, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		defer onBridge.Close()
		go accept(onBridge)
		onLoopback, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer onLoopback.Close()
		go accept(onLoopback)

		for _, h := range []*Host{a, b} {
			if err := dial(h, onBridge.Addr().String()); err != nil {
				t.Errorf("%s cannot reach the bridge address %s: %v", h.Name, onBridge.Addr(), err)
			}
			if err := dial(h, onLoopback.Addr().String()); err == nil {
				t.Errorf("%s reached the root namespace's loopback %s", h.Name, onLoopback.Addr())
			}
		}

		if err := a.Cut(); err != nil {
			t.Fatal(err)
		}
		if err := dial(a, onBridge.Addr().String()); err == nil {
			t.Errorf("%s reached %s while cut", a.Name, onBridge.Addr())
		}
		if err := dial(b, onBridge.Addr().String()); err != nil {
			t.Errorf("%s lost the bridge while %s was cut: %v", b.Name, a.Name, err)
		}
		if err := a.Restore(); err != nil {
			t.Fatal(err)
		}
		// The link takes a moment to come back up (carrier, bridge port
		// state): try for a while.
		var derr error
		for range 30 {
			if derr = dial(a, onBridge.Addr().String()); derr == nil {
				break
			}
			time.Sleep(time.Second)
		}
		if derr != nil {
			t.Errorf("%s cannot reach %s after the restore: %v", a.Name, onBridge.Addr(), derr)
		}
	})
	if t.Failed() {
		return
	}
	if names == nil {
		t.Skip("SKIPPED: the hosts could not be made (see above)")
	}
	for _, ns := range names[:2] {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s left after cleanup", ns)
		}
	}
	for _, l := range append(names[2:], bridge) {
		if _, err := net.InterfaceByName(l); err == nil {
			t.Errorf("link %s left after cleanup", l)
		}
	}
}

// TestNewRemovesStale: namespaces and links named for a process that is
// gone (a SIGKILLed test run's) are removed by the next New; those of a
// live process are left.
func TestNewRemovesStale(t *testing.T) {
	if os.Geteuid() != 0 {
		unavailable(t, "not root")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s%d", prefix, gone.Process.Pid)
	live := fmt.Sprintf("%s%d", prefix, os.Getppid()) // the go command: alive
	for _, s := range [][]string{
		{"netns", "add", dead + "-1"},
		{"link", "add", dead + "b", "type", "bridge"},
		{"netns", "add", live + "-9"},
	} {
		if _, err := ip(s...); err != nil {
			unavailable(t, err.Error())
		}
	}
	t.Cleanup(func() { _ = deleteNamespace(live + "-9"); _ = deleteNamespace(dead + "-1"); _ = deleteLink(dead + "b") })
	New(t)
	if _, err := os.Stat("/run/netns/" + dead + "-1"); err == nil {
		t.Errorf("stale namespace %s-1 (pid %d gone) left", dead, gone.Process.Pid)
	}
	if _, err := net.InterfaceByName(dead + "b"); err == nil {
		t.Errorf("stale bridge %sb (pid %d gone) left", dead, gone.Process.Pid)
	}
	if _, err := os.Stat("/run/netns/" + live + "-9"); err != nil {
		t.Errorf("namespace %s-9 of a live process was removed", live)
	}
}

// TestListenServesInsideTheHost: a listener Host.Listen makes on the
// host's address is reached from the root namespace over the bridge, and
// one on the host's loopback is not reached at the root's loopback: the
// sockets live in the host's namespace.
func TestListenServesInsideTheHost(t *testing.T) {
	n := New(t)
	h := n.AddHost()
	onHost, err := h.Listen("tcp", netip.AddrPortFrom(h.Addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer onHost.Close()
	go accept(onHost)
	c, err := net.DialTimeout("tcp", onHost.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dialling the host's listener %s from the root namespace: %v", onHost.Addr(), err)
	}
	c.Close()

	hostLoop, err := h.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLoop.Close()
	go accept(hostLoop)
	if err := dial(h, hostLoop.Addr().String()); err != nil {
		t.Errorf("dialling %s inside the host: %v", hostLoop.Addr(), err)
	}
	if c, err := net.DialTimeout("tcp", hostLoop.Addr().String(), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the host's loopback listener %s answered at the root namespace's loopback", hostLoop.Addr())
	}
}
