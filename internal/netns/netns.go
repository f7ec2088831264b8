//go:build linux

// Package netns gives a test hosts of their own on one machine: a network
// namespace per host, each with its own address on a private bridge, so
// that processes run inside reach the test's servers only over that
// network, and the test can cut a host's link and restore it.
//
// The root namespace holds the bridge and its address (Net.HostAddr, .1
// of a /24 in 10.77.0.0/16): servers the hosts must reach bind there, not
// on 0.0.0.0. Each host gets .2, .3, ... on the same /24 and a loopback of
// its own; no route leads anywhere else.
//
// Every name (namespaces, the bridge, the veth pairs) starts with
// "slnt<pid>" of the test process. Cleanup removes them when the test
// ends, failed or not; New first removes those of processes that are gone
// (a test that was SIGKILLed leaves its namespaces behind).
//
// Namespaces need root and the ip command (iproute2). Without them New
// skips the test, saying so loudly, or fails it when CI is set: CI must
// never pass by skipping.
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// prefix starts the name of everything this package creates, followed by
// the creating process's pid: "slnt12345b" (bridge), "slnt12345h1" (host
// 1's veth end in the root namespace), namespace "slnt12345-1".
const prefix = "slnt"

// Net is a private network of hosts: a bridge in the root namespace and
// one network namespace per host, joined to it by a veth pair.
type Net struct {
	// HostAddr is the root namespace's address on the bridge: servers the
	// hosts reach listen on it.
	HostAddr netip.Addr
	// Subnet is the bridge's /24.
	Subnet netip.Prefix

	t      testing.TB
	pid    string
	bridge string

	mu    sync.Mutex
	hosts []*Host
}

// Host is one network namespace on the Net.
type Host struct {
	// Name is the namespace's name (ip netns).
	Name string
	// Addr is the host's address on the bridge.
	Addr netip.Addr

	veth string // its veth end in the root namespace, on the bridge
}

// onCI reports whether the tests run on CI (CI set, not 0 or false).
func onCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// unavailable skips the test with msg, or fails it on CI.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if onCI() {
		t.Fatalf("network namespaces: %s; on CI (CI is set) this is a failure, not a skip", msg)
	}
	t.Skipf("SKIPPING: this test needs network namespaces and cannot make them here: %s (run it as root with iproute2 installed; on CI it fails instead)", msg)
}

// ip runs the ip command with args and returns its output, or an error
// naming the command and holding its output.
func ip(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("running ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// New creates the bridge of a new Net, after removing what gone test
// processes left behind, and removes the Net and its hosts when t ends.
// Without root or the ip command it skips t (fails it on CI).
func New(t testing.TB) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, fmt.Sprintf("not root (euid %d)", os.Geteuid()))
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "the ip command (iproute2) is missing")
	}
	if err := RemoveStale(); err != nil {
		t.Logf("removing stale namespaces: %v", err)
	}
	n := &Net{t: t, pid: strconv.Itoa(os.Getpid())}
	n.bridge = prefix + n.pid + "b"
	if _, err := ip("link", "add", n.bridge, "type", "bridge"); err != nil {
		unavailable(t, err.Error())
	}
	t.Cleanup(n.remove)
	subnet, err := freeSubnet(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	n.Subnet = subnet
	n.HostAddr = subnet.Addr().Next()
	if _, err := ip("addr", "add", netip.PrefixFrom(n.HostAddr, subnet.Bits()).String(), "dev", n.bridge); err != nil {
		t.Fatal(err)
	}
	if _, err := ip("link", "set", n.bridge, "up"); err != nil {
		t.Fatal(err)
	}
	return n
}

// freeSubnet picks a /24 of 10.77.0.0/16 that no interface of the root
// namespace has an address in, starting from one the seed picks, so that
// test processes running side by side take different ones.
func freeSubnet(seed int) (netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("listing interface addresses: %w", err)
	}
	for i := range 256 {
		third := byte((seed + i) % 256)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 77, third, 0}), 24)
		taken := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ad, ok := netip.AddrFromSlice(ipn.IP); ok && p.Contains(ad.Unmap()) {
					taken = true
				}
			}
		}
		if !taken {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("choosing a subnet: every /24 of 10.77.0.0/16 is in use")
}

// AddHost creates the next host: a namespace with loopback up and an
// address on the bridge.
func (n *Net) AddHost() *Host {
	n.t.Helper()
	n.mu.Lock()
	i := len(n.hosts) + 1
	addr := n.HostAddr
	for range i {
		addr = addr.Next()
	}
	h := &Host{Name: fmt.Sprintf("%s%s-%d", prefix, n.pid, i), Addr: addr, veth: fmt.Sprintf("%s%sh%d", prefix, n.pid, i)}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	peer := fmt.Sprintf("%s%sn%d", prefix, n.pid, i)
	steps := [][]string{
		{"netns", "add", h.Name},
		{"link", "add", h.veth, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", h.Name},
		{"link", "set", h.veth, "master", n.bridge},
		{"link", "set", h.veth, "up"},
		{"-n", h.Name, "link", "set", "lo", "up"},
		{"-n", h.Name, "link", "set", peer, "name", "eth0"},
		{"-n", h.Name, "addr", "add", netip.PrefixFrom(addr, n.Subnet.Bits()).String(), "dev", "eth0"},
		{"-n", h.Name, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if _, err := ip(s...); err != nil {
			n.t.Fatalf("creating host %s: %v", h.Name, err)
		}
	}
	return h
}

// Command is name run with args inside the host's namespace (ip netns
// exec, which execs the command: its pid is the process's own, so a
// signal reaches it).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Listen listens on addr (network "tcp" or "udp"…, as net.Listen) inside
// the host's namespace, so that this process can serve there: the
// listening socket belongs to the namespace it was made in, whichever
// thread later accepts on it. It is made on a thread of its own that
// enters the namespace and is never returned to the Go scheduler.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, now in the host's namespace, exits
		// with this goroutine.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + h.Name)
		if err != nil {
			ch <- result{err: fmt.Errorf("opening host %s's namespace: %w", h.Name, err)}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("entering host %s's namespace: %w", h.Name, err)}
			return
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			err = fmt.Errorf("listening on %s in host %s: %w", addr, h.Name, err)
		}
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

// Cut takes the host's link down: nothing it sends or is sent arrives
// until Restore.
func (h *Host) Cut() error {
	if _, err := ip("link", "set", h.veth, "down"); err != nil {
		return fmt.Errorf("cutting host %s: %w", h.Name, err)
	}
	return nil
}

// Restore brings the host's link up again.
func (h *Host) Restore() error {
	if _, err := ip("link", "set", h.veth, "up"); err != nil {
		return fmt.Errorf("restoring host %s: %w", h.Name, err)
	}
	return nil
}

// remove deletes the hosts' namespaces and veths and the bridge,
// reporting what it could not delete.
func (n *Net) remove() {
	n.mu.Lock()
	hosts := n.hosts
	n.mu.Unlock()
	for _, h := range hosts {
		// Deleting one end of a veth pair deletes both.
		if err := deleteLink(h.veth); err != nil {
			n.t.Errorf("removing host %s: %v", h.Name, err)
		}
		if err := deleteNamespace(h.Name); err != nil {
			n.t.Errorf("removing host %s: %v", h.Name, err)
		}
	}
	if err := deleteLink(n.bridge); err != nil {
		n.t.Errorf("removing the bridge: %v", err)
	}
}

// deleteLink deletes a link of the root namespace; one already gone is no
// error.
func deleteLink(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	_, err := ip("link", "del", name)
	return err
}

// deleteNamespace deletes a named namespace; one already gone is no
// error.
func deleteNamespace(name string) error {
	if _, err := os.Stat("/run/netns/" + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := ip("netns", "del", name)
	return err
}

// ownerGone reads the pid in a name this package made and reports whether
// that process is gone; false for names it did not make.
func ownerGone(name string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	pid, err := strconv.Atoi(rest[:end])
	if err != nil || pid <= 0 {
		return false
	}
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// RemoveStale deletes the namespaces, bridges and veths this package made
// for test processes that are gone. New calls it.
func RemoveStale() error {
	var errs []error
	if out, err := ip("netns", "list"); err != nil {
		errs = append(errs, err)
	} else {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && ownerGone(f[0]) {
				errs = append(errs, deleteNamespace(f[0]))
			}
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		errs = append(errs, fmt.Errorf("listing interfaces: %w", err))
	}
	for _, i := range ifs {
		if ownerGone(i.Name) {
			errs = append(errs, deleteLink(i.Name))
		}
	}
	return errors.Join(errs...)
}
