//go:build linux

package simulator

import (
	"encoding/binary"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// enableStamps asks the kernel for receive timestamps on c.
func enableStamps(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
}

// readStamped reads from c, returning the kernel's receive timestamp of
// the data when it reports one.
func readStamped(c net.Conn, p []byte) (int, time.Time, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok || len(p) == 0 {
		n, err := c.Read(p)
		return n, time.Time{}, err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		n, err := c.Read(p)
		return n, time.Time{}, err
	}
	var (
		n     int
		stamp time.Time
		rerr  error
		oob   [128]byte
	)
	err = rc.Read(func(fd uintptr) bool {
		var oobn int
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, oob[:], 0)
		if rerr == unix.EAGAIN {
			return false
		}
		if rerr == nil && oobn > 0 {
			stamp = parseStamp(oob[:oobn])
		}
		return true
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	if rerr != nil {
		return 0, time.Time{}, &net.OpError{Op: "read", Net: "tcp", Source: tc.LocalAddr(), Addr: tc.RemoteAddr(), Err: rerr}
	}
	if n == 0 {
		return 0, time.Time{}, io.EOF
	}
	return n, stamp, nil
}

func parseStamp(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec)
		}
	}
	return time.Time{}
}
