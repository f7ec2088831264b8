//go:build !linux

package connector

import (
	"net"
	"time"
)

// unacked cannot ask the kernel outside Linux: ok is false, and a written
// request is never reset for want of an acknowledgement.
func unacked(*net.TCPConn) (int, bool) { return 0, false }

// smoothedRTT is unknown outside Linux.
func smoothedRTT(*net.TCPConn) (time.Duration, bool) { return 0, false }
