package sink

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// encoderConcurrency is the number of goroutines a zstd stream uses: one,
// the caller's. Parallelism comes from concurrent Puts and part uploads;
// klauspost's asynchronous stream mode (concurrency > 1) also races on
// its error path, which matters here because cancelled and failed
// streams are routine.
const encoderConcurrency = 1

// compressor streams bodies through pooled zstd level-3 encoders. An
// encoder holds its window (8 MiB at level 3) whatever the body size, so
// pooling keeps small Puts from allocating one each time.
type compressor struct {
	concurrency int
	pool        sync.Pool
}

func newCompressor() *compressor {
	return &compressor{concurrency: encoderConcurrency}
}

func (c *compressor) get(w io.Writer) (*zstd.Encoder, error) {
	if e, ok := c.pool.Get().(*zstd.Encoder); ok {
		e.Reset(w)
		return e, nil
	}
	e, err := zstd.NewWriter(w,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(c.concurrency),
		zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, fmt.Errorf("creating zstd encoder: %w", err)
	}
	return e, nil
}

// stream compresses body into w as one zstd frame until EOF, hashing the
// raw bytes on the way (also into also, when not nil: the whole object's
// hash across pages). It returns the raw size and SHA-256. When it
// returns, the encoder has finished every write to w, even on error.
func (c *compressor) stream(ctx context.Context, w io.Writer, body io.Reader, also hash.Hash) (int64, []byte, error) {
	enc, err := c.get(w)
	if err != nil {
		return 0, nil, err
	}
	src := &hashingReader{ctx: ctx, r: body, h: sha256.New(), also: also}
	_, err = enc.ReadFrom(src)
	if err == nil {
		err = enc.Close()
	}
	// Reset waits for the encoder's goroutines, so nothing writes to w
	// after we return, and readies the encoder for the pool.
	enc.Reset(io.Discard)
	c.pool.Put(enc)
	if err != nil {
		if ctx.Err() != nil {
			return src.n, nil, fmt.Errorf("compressing body: %w", context.Cause(ctx))
		}
		return src.n, nil, fmt.Errorf("compressing body: %w", err)
	}
	return src.n, src.h.Sum(nil), nil
}

// hashingReader hashes and counts what it reads and stops once ctx is done.
type hashingReader struct {
	ctx  context.Context
	r    io.Reader
	h    hash.Hash
	also hash.Hash
	n    int64
}

// Read reads from the source, hashing and counting what it returns, and
// fails with the context's cause once the context ends.
func (r *hashingReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, context.Cause(r.ctx)
	}
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	if r.also != nil {
		r.also.Write(p[:n])
	}
	r.n += int64(n)
	return n, err
}
