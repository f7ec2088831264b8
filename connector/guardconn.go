package connector

import (
	"context"
	"net"
	"sync"
)

// guardedDial wraps every connection dial makes in a guardedConn.
func guardedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &guardedConn{Conn: c}, nil
	}
}

// guardedConn is a provider connection that makes the permit's last check
// itself, in the Write that hands a request's first bytes to the kernel
// (sendGuard.beforeWrite): GotConn arms it for the request about to be
// written on it (HTTP/1.1: one at a time), and its next Write checks.
type guardedConn struct {
	net.Conn
	mu    sync.Mutex
	guard *sendGuard
}

// NetConn returns the connection underneath.
func (c *guardedConn) NetConn() net.Conn { return c.Conn }

func (c *guardedConn) arm(g *sendGuard) {
	c.mu.Lock()
	c.guard = g
	c.mu.Unlock()
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	g := c.guard
	c.guard = nil
	c.mu.Unlock()
	if g == nil {
		return c.Conn.Write(p)
	}
	if err := g.beforeWrite(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	g.afterWrite(c.LocalAddr().String())
	return n, err
}

// guardedConnOf finds the guardedConn under c (a TLS connection's
// included), or nil when the client's dialer is not the connector's.
func guardedConnOf(c net.Conn) *guardedConn {
	gc, _ := connUnder[*guardedConn](c)
	return gc
}
