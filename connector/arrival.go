package connector

import (
	"net"
	"time"
)

// arrivalSlack is how long after a permit's deadline (plus twice the
// connection's smoothed round trip) a written request's bytes may still be
// waiting for the provider's acknowledgement before the connection is
// reset. Linux delays an ACK by at most 200 ms (TCP_DELACK_MAX), so a
// request that reached the provider has been acknowledged, or answered,
// by then; one that has not is held in TCP retransmission (a cut link)
// and would otherwise reach the provider whenever the link returns,
// together with its neighbours, outside every window the limiter kept.
const arrivalSlack = 250 * time.Millisecond

// tcpConnOf is the TCP connection under c (through TLS), or nil.
func tcpConnOf(c net.Conn) *net.TCPConn {
	tc, _ := connUnder[*net.TCPConn](c)
	return tc
}

// connUnder finds the connection of type T under c, unwrapping at most
// four layers that expose NetConn (a TLS connection's), or reports none.
func connUnder[T net.Conn](c net.Conn) (T, bool) {
	for range 4 {
		if v, ok := c.(T); ok {
			return v, true
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	var none T
	return none, false
}

// arrivalCheck is when, past its permit's deadline, the request written
// on c is checked for bytes the provider has not acknowledged.
func arrivalCheck(c *net.TCPConn) time.Duration {
	rtt, _ := smoothedRTT(c)
	return arrivalSlack + 2*rtt
}

// abortConn resets c: SO_LINGER 0 makes the close send RST and drop every
// byte the kernel still held to send or retransmit, so none of it can
// reach the peer later.
func abortConn(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
