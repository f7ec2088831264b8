package embedded

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// The Temporal server and the UI server bind their ports themselves from
// configured numbers, so a free port has to be chosen before they start.

// freePort returns a port on host that is free now and that the kernel will
// not hand out again for a while. It binds port 0, then makes and closes one
// connection to it, closing from the accepting side first: that side's
// socket stays in TIME_WAIT, which keeps the kernel from reusing the port
// for other port-0 binds, while the servers, which set SO_REUSEADDR, can
// still bind it explicitly.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("picking a free port on %s: %w", host, err)
	}
	defer l.Close()
	addr := l.Addr().(*net.TCPAddr)

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", addr.String())
	if err != nil {
		return 0, fmt.Errorf("picking a free port on %s: reserving %d: %w", host, addr.Port, err)
	}
	if server := <-accepted; server != nil {
		_ = server.Close()
	}
	_ = client.Close()
	return addr.Port, nil
}

// resolvePort returns port if it is not 0 and is free on host, or a free
// port if port is 0.
func resolvePort(host string, port int) (int, error) {
	if port == 0 {
		return freePort(host)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("checking port %d on %s is free: %w", port, host, err)
	}
	_ = l.Close()
	return port, nil
}

// maxMembershipPort is the highest membership port a node can have:
// Temporal's PostgreSQL schema keeps it in a smallint column
// (cluster_membership.rpc_port), so the kernel's ephemeral ports (32768
// and up on Linux) are out of reach.
const maxMembershipPort = 32767

// lowPortFloor is where freeLowPort starts looking: above the well-known
// and most registered service ports.
const lowPortFloor = 20000

// freeLowPort returns a port from lowPortFloor to maxMembershipPort that
// is free on host now. Ports below the ephemeral range are never handed out
// by the kernel for port-0 binds, so it stays free unless another process
// asks for it by number.
func freeLowPort(host string) (int, error) {
	for range 200 {
		port := lowPortFloor + rand.IntN(maxMembershipPort-lowPortFloor+1)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("picking a free port on " + host + ": none free from 20000 to 32767 after 200 tries")
}
