package connector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// responseBody is the Body of a Response: the buffered reader that holds
// the peeked head, over the stall guard, over the transport's body.
type responseBody struct {
	r      *bufio.Reader
	raw    io.Closer
	guard  *stallGuard
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

// Close releases the connection and the stall timer.
func (b *responseBody) Close() error {
	b.once.Do(func() {
		b.guard.stop()
		b.err = b.raw.Close()
		b.cancel(nil)
	})
	return b.err
}

// stallGuard cancels a response whose body makes no progress for a while.
type stallGuard struct {
	r     io.Reader
	d     time.Duration
	timer *time.Timer
}

func newStallGuard(r io.Reader, d time.Duration, onStall func()) *stallGuard {
	return &stallGuard{r: r, d: d, timer: time.AfterFunc(d, onStall)}
}

// Read reads from the body and restarts the stall timer on progress.
func (g *stallGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if n > 0 {
		g.timer.Reset(g.d)
	}
	return n, err
}

func (g *stallGuard) stop() { g.timer.Stop() }

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
