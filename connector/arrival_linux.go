//go:build linux

package connector

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// unacked returns how many bytes written to c the peer has not yet
// acknowledged, sent or not (SIOCOUTQ: write_seq − snd_una); ok is false
// when the kernel cannot say.
func unacked(c *net.TCPConn) (n int, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}

// smoothedRTT is the kernel's smoothed round trip of c (TCP_INFO
// tcpi_rtt).
func smoothedRTT(c *net.TCPConn) (time.Duration, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0, false
	}
	return time.Duration(info.Rtt) * time.Microsecond, true
}
