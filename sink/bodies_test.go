package sink

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
)

// noiseBlockSize is the period of noiseReader: twice the zstd window, so
// the encoder cannot find the repeats and the stream does not compress.
const noiseBlockSize = 16 << 20

var (
	noiseOnce  sync.Once
	noiseBlock []byte
)

func noise() []byte {
	noiseOnce.Do(func() {
		noiseBlock = make([]byte, noiseBlockSize)
		_, _ = rand.NewChaCha8([32]byte{'s', 'l', 'u', 'i', 'c', 'e'}).Read(noiseBlock)
	})
	return noiseBlock
}

// noiseReader yields n deterministic, incompressible bytes cheaply: a
// fixed random block, repeated from a given offset.
type noiseReader struct {
	n   int64 // bytes left
	off int64
}

func newNoise(n int64) *noiseReader { return &noiseReader{n: n} }

func (r *noiseReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	b := noise()
	p = p[:min(int64(len(p)), r.n)]
	k := 0
	for k < len(p) {
		c := copy(p[k:], b[r.off%noiseBlockSize:])
		k += c
		r.off += int64(c)
	}
	r.n -= int64(k)
	return k, nil
}

// noiseBytes returns the first n bytes noiseReader yields.
func noiseBytes(n int64) []byte {
	b, _ := io.ReadAll(newNoise(n))
	return b
}

// cancelAfter yields r's bytes and calls cancel once more than n have been
// read, as if the caller gave up mid-stream.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n < 0 {
		c.cancel()
	}
	return k, err
}

// errAfter yields r's bytes, then fails with err after n bytes.
type errAfter struct {
	r   io.Reader
	n   int64
	err error
}

var errBodyBroke = errors.New("connection reset by provider")

func (e *errAfter) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, e.err
	}
	k, err := e.r.Read(p[:min(int64(len(p)), e.n)])
	e.n -= int64(k)
	return k, err
}

// hookAfter yields r's bytes and runs hook once after n have been read.
type hookAfter struct {
	r    io.Reader
	n    int64
	hook func()
	done bool
}

func (h *hookAfter) Read(p []byte) (int, error) {
	k, err := h.r.Read(p)
	h.n -= int64(k)
	if h.n < 0 && !h.done {
		h.done = true
		h.hook()
	}
	return k, err
}
