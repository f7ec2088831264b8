package sink

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) by Stat and Open when no object exists
// at the key.
var ErrNotFound = errors.New("lake object not found")

// Sink is the bronze lake. Implementations are safe for concurrent use.
type Sink interface {
	// Put streams body through zstd into the object at key, replacing any
	// object there. On error (including a cancelled ctx) no object is
	// created and the previous one, if any, is left intact. When the
	// stored object already holds these raw bytes as one page — its
	// recorded SHA-256 matches and it decompresses to them (a damaged
	// object does not, and is rewritten) — the store is not rewritten and
	// Result.Skipped is true.
	Put(ctx context.Context, key string, body io.Reader, meta Meta) (Result, error)
	// Create starts writing the object at key page by page (see Writer):
	// a fetch the provider answered in several calls becomes one object,
	// each page one zstd frame. Put is Create, one WritePage and Commit.
	// ctx governs every write until Commit returns.
	Create(ctx context.Context, key string) (Writer, error)
	// Stat returns the object at key and its recorded metadata, or an
	// error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (Object, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order, stopping at the first error fn returns (which List returns).
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Open returns the decompressed raw bytes of the object at key and its
	// metadata. The caller must close the reader.
	Open(ctx context.Context, key string) (io.ReadCloser, Object, error)
	// Pages returns the pages of the object at key, in order; an object
	// of one page (or without Sluice metadata) has one.
	Pages(ctx context.Context, key string) ([]Page, error)
	// OpenPage returns the raw bytes of page n (1-based) of the object at
	// key. The caller must close the reader.
	OpenPage(ctx context.Context, key string, n int) (io.ReadCloser, Page, error)
	// Verify decompresses the object at key and checks every page and the
	// whole against the recorded sizes and SHA-256s. A mismatch, or an
	// object without Sluice metadata, is an error wrapping ErrDamaged;
	// any other error means the store could not be read.
	Verify(ctx context.Context, key string) error
	// Close releases the sink's resources.
	Close() error
}

// Meta is what the caller knows about a body. The sink adds what it
// measures while streaming (see Object).
type Meta struct {
	// ContentType is the provider's Content-Type, e.g. "application/json".
	ContentType string
	// SourceURL is the URL fetched, already redacted by the caller. The
	// sink redacts it again defensively (see RedactURL).
	SourceURL string
	// FetchedAt is when the response was received.
	FetchedAt time.Time
	// Window is the span of dates the provider was asked for (a daily
	// run's look-back); zero when the request named no dates.
	Window Window
}

// Window is a span of civil dates, both ends included: what a request
// asked its provider for. Only the calendar dates of From and To count.
type Window struct {
	From, To time.Time
}

// IsZero reports whether the window names no dates.
func (w Window) IsZero() bool { return w.From.IsZero() && w.To.IsZero() }

// String writes the window as YYYY-MM-DD..YYYY-MM-DD, "" when zero.
func (w Window) String() string {
	if w.IsZero() {
		return ""
	}
	return civil(w.From).Format(time.DateOnly) + ".." + civil(w.To).Format(time.DateOnly)
}

// Object describes a stored object and the metadata recorded with it.
type Object struct {
	// Key is the object's lake key.
	Key string
	// RawSHA256 is the lower-case hex SHA-256 of the raw (uncompressed)
	// bytes; empty when the object carries no Sluice metadata.
	RawSHA256 string
	// RawSize is the length of the raw bytes.
	RawSize int64
	// CompressedSize is the length of the zstd stream.
	CompressedSize int64
	// ContentType is the raw bytes' content type.
	ContentType string
	// SourceURL is the redacted URL the bytes came from.
	SourceURL string
	// FetchedAt is when the bytes were fetched.
	FetchedAt time.Time
	// Window is the span of dates the provider was asked for; zero when
	// the request named none, or the object predates windows.
	Window Window
	// Writer is the Sluice version that wrote the object.
	Writer string
	// Pages is the number of provider pages the object holds (1 for a
	// single answer; 0 for an object without Sluice metadata).
	Pages int
	// Modified is the store's last-modified time of the object.
	Modified time.Time
}

// HasMeta reports whether the object carries Sluice metadata (objects put
// into the store by other tools do not).
func (o Object) HasMeta() bool { return o.RawSHA256 != "" }

// Result reports one Put.
type Result struct {
	// Key is the object's key.
	Key string
	// RawSize is the number of raw bytes read from the body.
	RawSize int64
	// CompressedSize is the size of the zstd stream.
	CompressedSize int64
	// RawSHA256 is the lower-case hex SHA-256 of the raw bytes (all
	// pages back to back).
	RawSHA256 string
	// Pages is the number of pages written.
	Pages int
	// Skipped is true when the stored object already held these raw
	// pages — checked by decompressing it, not only by its recorded
	// SHA-256 — and was left as it was. A stored object that fails that
	// check is rewritten.
	Skipped bool
	// BytesWritten counts the bytes sent to the store, including those of
	// a write abandoned because it turned out unchanged; 0 when the skip
	// was decided before anything was sent.
	BytesWritten int64
	// PeakBuffered is the largest number of bytes this Put held in its own
	// buffers at once: the sink's memory accounting, bounded by the part
	// size × (concurrency + 1) on S3 whatever the body size. It does not
	// count the zstd encoder's fixed window.
	PeakBuffered int64
}
