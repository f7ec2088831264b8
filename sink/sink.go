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
	// created and the previous one, if any, is left intact. When the raw
	// bytes are unchanged from the stored object's recorded SHA-256, the
	// store is not rewritten and Result.Skipped is true.
	Put(ctx context.Context, key string, body io.Reader, meta Meta) (Result, error)
	// Stat returns the object at key and its recorded metadata, or an
	// error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (Object, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order, stopping at the first error fn returns (which List returns).
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Open returns the decompressed raw bytes of the object at key and its
	// metadata. The caller must close the reader.
	Open(ctx context.Context, key string) (io.ReadCloser, Object, error)
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
	// Writer is the Sluice version that wrote the object.
	Writer string
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
	// RawSHA256 is the lower-case hex SHA-256 of the raw bytes.
	RawSHA256 string
	// Skipped is true when the stored object already held these raw bytes
	// and was left as it was.
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
