//go:build !linux

package simulator

import (
	"net"
	"time"
)

func enableStamps(net.Conn) {}

func readStamped(c net.Conn, p []byte) (int, time.Time, error) {
	n, err := c.Read(p)
	return n, time.Time{}, err
}
