package simulator

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Arrival is what the simulator knows of when a request reached it and
// from where: the kernel's receive time of its first bytes (when the
// platform reports it), the moment the server read them, the moment the
// simulator's clock stamped the call (what the limits are checked at), and
// the client's address (its port tells connections apart).
type Arrival struct {
	// Kernel is the kernel's receive timestamp of the request's first
	// bytes (SO_TIMESTAMPNS); zero when unknown.
	Kernel time.Time `json:"kernel,omitzero"`
	// Read is when the server read the request's first bytes; zero when
	// unknown.
	Read time.Time `json:"read,omitzero"`
	// Stamped is the simulator clock's reading the call was counted at.
	Stamped time.Time `json:"stamped"`
	// Remote is the client's address.
	Remote string `json:"remote,omitempty"`
	// Dataset is the dataset the call asked for, "" when unknown.
	Dataset string `json:"dataset,omitempty"`
}

// arrivalConn records when the bytes of each request arrived: the first
// read that returns data after the last request was taken marks the next
// request's arrival.
type arrivalConn struct {
	net.Conn
	mu      sync.Mutex
	pending bool
	kernel  time.Time
	read    time.Time
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	n, kernel, err := readStamped(c.Conn, p)
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		if !c.pending {
			c.pending, c.kernel, c.read = true, kernel, now
		}
		c.mu.Unlock()
	}
	return n, err
}

// take returns the arrival of the request being served and forgets it.
func (c *arrivalConn) take() (kernel, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kernel, read = c.kernel, c.read
	c.pending, c.kernel, c.read = false, time.Time{}, time.Time{}
	return kernel, read
}

// arrivalListener wraps every accepted connection in an arrivalConn.
type arrivalListener struct{ net.Listener }

func (l arrivalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	enableStamps(c)
	return &arrivalConn{Conn: c}, nil
}

type arrivalConnKey struct{}
type arrivalKey struct{}

// connContext puts the connection into its requests' contexts.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if ac, ok := c.(*arrivalConn); ok {
		return context.WithValue(ctx, arrivalConnKey{}, ac)
	}
	return ctx
}

// withArrival takes the arrival of r's first bytes from its connection
// into r's context.
func withArrival(r *http.Request) *http.Request {
	ac, _ := r.Context().Value(arrivalConnKey{}).(*arrivalConn)
	a := &Arrival{Remote: r.RemoteAddr}
	if ac != nil {
		a.Kernel, a.Read = ac.take()
	}
	return r.WithContext(context.WithValue(r.Context(), arrivalKey{}, a))
}

// arrivalOf returns the arrival recorded for r (a copy), or one with only
// the remote address.
func arrivalOf(r *http.Request) Arrival {
	if r == nil {
		return Arrival{}
	}
	if a, ok := r.Context().Value(arrivalKey{}).(*Arrival); ok {
		return *a
	}
	return Arrival{Remote: r.RemoteAddr}
}
