package connector

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// responseBody is the Body of a Response: the buffered reader that holds
// the peeked head, over the body guard, over the decoded transport body.
type responseBody struct {
	r      *bufio.Reader
	raw    io.Closer
	guard  *bodyGuard
	cancel context.CancelCauseFunc
	fail   func(error) error

	once sync.Once
	err  error
}

// Read reads the body; read failures come back classified.
func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		return n, b.fail(err)
	}
	if err == io.EOF {
		b.guard.stop()
	}
	return n, err
}

// Close releases the connection and the guard's timers.
func (b *responseBody) Close() error {
	b.once.Do(func() {
		b.guard.stop()
		b.err = b.raw.Close()
		b.cancel(nil)
	})
	return b.err
}

// The causes a body guard cancels a request with, and the errors its
// reads fail with.
var (
	errStalled     = errors.New("response body stalled")
	errTooLarge    = errors.New("response body larger than the page bound")
	errPageTimeout = errors.New("response body past the page deadline")
)

// pageClock times one page against its deadline (Bounds.PageTimeout): from
// the moment its request was written (httptrace's WroteHeaders; a request
// written again starts over), or when its answer arrived if the transport
// never said. The deadline is kept twice: on the connector's clock, read
// at every read of the body (so that a test's clock decides it), and by a
// timer, which cancels the request when the deadline passes while a read
// is blocked.
type pageClock struct {
	now      func() time.Time
	d        time.Duration
	onExpire func()

	mu      sync.Mutex
	start   time.Time
	timer   *time.Timer
	stopped bool
}

// begin starts (or starts over) the page's time.
func (c *pageClock) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.start = c.now()
	if c.timer == nil {
		c.timer = time.AfterFunc(c.d, c.onExpire)
	} else {
		c.timer.Reset(c.d)
	}
}

// arrived starts the page's time if nothing did before.
func (c *pageClock) arrived() {
	c.mu.Lock()
	started := !c.start.IsZero()
	c.mu.Unlock()
	if !started {
		c.begin()
	}
}

// expired reports whether the page's deadline has passed on the clock.
func (c *pageClock) expired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.start.IsZero() && c.now().Sub(c.start) > c.d
}

// elapsed is the page's time so far.
func (c *pageClock) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start.IsZero() {
		return 0
	}
	return c.now().Sub(c.start)
}

func (c *pageClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// bodyGuard bounds a response body as it is read (decoded, whatever its
// Content-Encoding): it fails a read once more than max bytes came
// (errTooLarge), or once the page's deadline passed (errPageTimeout), and
// cancels a response whose body makes no progress for the stall timeout
// (errStalled); each failure cancels the request, which closes its
// connection.
type bodyGuard struct {
	r      io.Reader
	stall  time.Duration
	timer  *time.Timer
	clock  *pageClock
	max    int64
	n      int64
	cancel context.CancelCauseFunc
	err    error // the guard's own failure, returned by every later read
}

func newBodyGuard(r io.Reader, stall time.Duration, clock *pageClock, max int64, cancel context.CancelCauseFunc) *bodyGuard {
	return &bodyGuard{r: r, stall: stall, clock: clock, max: max, cancel: cancel,
		timer: time.AfterFunc(stall, func() { cancel(errStalled) })}
}

// Read reads from the body, restarts the stall timer on progress and
// checks the size and the deadline.
func (g *bodyGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.clock.expired() {
		return 0, g.fail(errPageTimeout)
	}
	n, err := g.r.Read(p)
	if n > 0 {
		g.timer.Reset(g.stall)
		g.n += int64(n)
		if g.n > g.max {
			over := g.n - g.max
			g.n = g.max
			return n - int(over), g.fail(errTooLarge)
		}
	}
	if err == nil && g.clock.expired() {
		return n, g.fail(errPageTimeout)
	}
	return n, err
}

func (g *bodyGuard) fail(err error) error {
	g.err = err
	g.stop()
	g.cancel(err)
	return err
}

func (g *bodyGuard) stop() {
	g.timer.Stop()
	g.clock.stop()
}

// errEncoding is wrapped by the read error of a body in a
// Content-Encoding the connector does not decode.
var errEncoding = errors.New("unsupported content encoding")

// decodedBody returns the body of resp decoded: as it is when the
// transport decoded it (it asked for gzip itself) or it carries no
// Content-Encoding, else through a gzip or deflate (zlib) reader — a
// provider may compress an answer nobody asked to be compressed, and a
// client built with DisableCompression decodes nothing — so that what is
// bounded, classified and stored is always the decoded body. Any other
// encoding fails the first read (errEncoding).
func decodedBody(resp *http.Response) io.Reader {
	if resp.Uncompressed {
		return resp.Body
	}
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return resp.Body
	case "gzip", "x-gzip":
		return &lazyDecoder{r: resp.Body, open: func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }}
	case "deflate":
		return &lazyDecoder{r: resp.Body, open: func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }}
	}
	if len(enc) > 40 {
		enc = enc[:40] + "…"
	}
	err := fmt.Errorf("%w %q (Sluice decodes gzip and deflate)", errEncoding, enc)
	return &lazyDecoder{open: func(io.Reader) (io.Reader, error) { return nil, err }}
}

// lazyDecoder opens its decoder at the first read, so that a decoder's
// failure to read its header is a read failure like any other.
type lazyDecoder struct {
	r    io.Reader
	open func(io.Reader) (io.Reader, error)
	dec  io.Reader
	err  error
}

func (l *lazyDecoder) Read(p []byte) (int, error) {
	if l.dec == nil && l.err == nil {
		l.dec, l.err = l.open(l.r)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.dec.Read(p)
}

// Drain reads and discards a response body and closes it, returning err
// when it is non-nil and otherwise any (classified) read error. Probes use
// it.
func Drain(resp *Response, err error) error {
	if err != nil {
		return err
	}
	if resp == nil || resp.Body == nil {
		return nil
	}
	_, rerr := io.Copy(io.Discard, resp.Body)
	cerr := resp.Body.Close()
	if rerr != nil {
		return rerr
	}
	if cerr != nil {
		return fmt.Errorf("closing response body: %w", cerr)
	}
	return nil
}
