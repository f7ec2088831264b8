package sink

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"
)

// An object holds the pages of one logical fetch (a provider that pages
// answers one request in several calls) in order, each page one zstd
// frame of its raw bytes exactly as sent, so that decompressing the object
// yields the pages back to back and the object's raw SHA-256 is the hash
// of that concatenation. An object of more than one page ends its zstd
// stream with a page index, a zstd skippable frame (invisible to every
// decoder) listing each page's raw size, raw SHA-256 and the byte range of
// its frame:
//
//	[frame page 1]…[frame page N][magic 0x184D2A5D][frame size u32][JSON][JSON length u32]["SLPX"]
//
// The object's metadata records the page count and the index frame's
// size (S3: x-amz-meta-sluice-pages and -sluice-page-index-size; the
// local trailer: pages and page_index_size), so a reader finds the index
// at the end of the stream without scanning it. A one-page object (every
// Put, every daily fetch that fits one call) has no index.
const (
	pageIndexMagic = 0x184D2A5D // a zstd skippable-frame magic, not the trailer's
	pageIndexMark  = "SLPX"
	// maxPageIndexJSON bounds an index read back (about 100,000 pages).
	maxPageIndexJSON = 32 << 20
	minPageIndexLen  = trailerHeader + trailerFooter + 2
)

// ErrDamaged is wrapped by Verify's error for an object whose bytes do
// not match its recorded metadata (or that carries none).
var ErrDamaged = errors.New("lake object damaged")

// DamageError says how an object is damaged. It wraps ErrDamaged.
type DamageError struct {
	Object  string // the key, or s3://bucket/key
	Problem string // what does not match, e.g. "page 2 sha256 …, recorded …"
}

// Error names the object and the problem.
func (e *DamageError) Error() string { return ErrDamaged.Error() + ": " + e.Object + ": " + e.Problem }

// Unwrap returns ErrDamaged.
func (e *DamageError) Unwrap() error { return ErrDamaged }

func damage(object, format string, args ...any) error {
	return &DamageError{Object: object, Problem: fmt.Sprintf(format, args...)}
}

// Page describes one page of an object.
type Page struct {
	// RawSize is the length of the page's raw bytes.
	RawSize int64 `json:"raw_size"`
	// RawSHA256 is the lower-case hex SHA-256 of the page's raw bytes;
	// empty for an object without Sluice metadata.
	RawSHA256 string `json:"raw_sha256"`
	// Offset is where the page's zstd frame starts in the stored object.
	Offset int64 `json:"offset"`
	// CompressedSize is the length of the page's zstd frame.
	CompressedSize int64 `json:"compressed_size"`
}

// Writer writes one object page by page. Nothing is visible at the key
// until Commit succeeds; Abort (or a failed WritePage or Commit) leaves no
// object and the previous one intact. A Writer is used by one goroutine.
type Writer interface {
	// WritePage streams one page's raw bytes, until EOF, as one zstd
	// frame. After an error the Writer is unusable: Abort it.
	WritePage(body io.Reader) (Page, error)
	// Commit publishes the pages written as the object at key with meta,
	// replacing any object there — or, when the stored object verifiably
	// holds the same pages already, leaves it and reports Skipped.
	Commit(meta Meta) (Result, error)
	// Abort discards what was written. It is safe to call after Commit
	// and more than once.
	Abort()
}

type pageIndex struct {
	Pages []Page `json:"pages"`
}

// appendPageIndex appends the index frame of pages to dst.
func appendPageIndex(dst []byte, pages []Page) ([]byte, error) {
	js, err := json.Marshal(pageIndex{Pages: pages})
	if err != nil {
		return nil, fmt.Errorf("encoding page index: %w", err)
	}
	if len(js) > maxPageIndexJSON {
		return nil, fmt.Errorf("encoding page index: %d bytes (%d pages) is over the %d-byte limit", len(js), len(pages), maxPageIndexJSON)
	}
	dst = binary.LittleEndian.AppendUint32(dst, pageIndexMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(js)+trailerFooter))
	dst = append(dst, js...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(js)))
	return append(dst, pageIndexMark...), nil
}

// parsePageIndex decodes an index frame (exactly its bytes) and checks it
// against the record: as many pages as recorded, frames that tile the
// stream from 0 up to the index, raw sizes adding up.
func parsePageIndex(b []byte, rec record) ([]Page, error) {
	if len(b) < minPageIndexLen || len(b) > maxPageIndexJSON+trailerHeader+trailerFooter {
		return nil, fmt.Errorf("page index of %d bytes", len(b))
	}
	n := int64(binary.LittleEndian.Uint32(b[len(b)-trailerFooter:]))
	if binary.LittleEndian.Uint32(b[:4]) != pageIndexMagic || string(b[len(b)-4:]) != pageIndexMark ||
		int64(binary.LittleEndian.Uint32(b[4:8])) != n+trailerFooter || trailerHeader+n+trailerFooter != int64(len(b)) {
		return nil, errors.New("page index frame is malformed")
	}
	var idx pageIndex
	if err := json.Unmarshal(b[trailerHeader:trailerHeader+n], &idx); err != nil {
		return nil, fmt.Errorf("decoding page index: %w", err)
	}
	if len(idx.Pages) != rec.Pages {
		return nil, fmt.Errorf("page index lists %d pages, metadata records %d", len(idx.Pages), rec.Pages)
	}
	var off, raw int64
	for i, p := range idx.Pages {
		if p.Offset != off || p.CompressedSize <= 0 || p.RawSize < 0 || checkSHA256(p.RawSHA256) != nil {
			return nil, fmt.Errorf("page index entry %d is inconsistent: %+v", i+1, p)
		}
		off += p.CompressedSize
		raw += p.RawSize
	}
	if off+int64(len(b)) != rec.CompressedSize || raw != rec.RawSize {
		return nil, fmt.Errorf("page index covers %d compressed and %d raw bytes; metadata records %d and %d",
			off+int64(len(b)), raw, rec.CompressedSize, rec.RawSize)
	}
	return idx.Pages, nil
}

// singlePage is the one page of an object without an index.
func singlePage(rec record, streamSize int64) []Page {
	return []Page{{RawSize: rec.RawSize, RawSHA256: rec.RawSHA256, CompressedSize: streamSize}}
}

// pageStream compresses pages one frame each into an offset-counting
// destination and keeps the index and the whole object's hash.
type pageStream struct {
	comp   *compressor
	ctx    context.Context
	total  hash.Hash
	raw    int64
	pages  []Page
	offset func() int64 // compressed bytes written so far
}

func newPageStream(ctx context.Context, comp *compressor, offset func() int64) *pageStream {
	return &pageStream{comp: comp, ctx: ctx, total: sha256.New(), offset: offset}
}

// write streams one page into w.
func (ps *pageStream) write(w io.Writer, body io.Reader) (Page, error) {
	start := ps.offset()
	n, sum, err := ps.comp.stream(ps.ctx, w, body, ps.total)
	ps.raw += n
	if err != nil {
		return Page{RawSize: n}, err
	}
	p := Page{RawSize: n, RawSHA256: hex.EncodeToString(sum), Offset: start, CompressedSize: ps.offset() - start}
	ps.pages = append(ps.pages, p)
	return p, nil
}

// finish returns the index frame to append (nil for one page) and the
// whole object's SHA-256.
func (ps *pageStream) finish() ([]byte, []byte, error) {
	if len(ps.pages) == 0 {
		return nil, nil, errors.New("no page written")
	}
	sum := ps.total.Sum(nil)
	if len(ps.pages) == 1 {
		return nil, sum, nil
	}
	idx, err := appendPageIndex(nil, ps.pages)
	return idx, sum, err
}

// samePages reports whether two page lists hold the same raw pages.
func samePages(a, b []Page) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].RawSize != b[i].RawSize || a[i].RawSHA256 != b[i].RawSHA256 {
			return false
		}
	}
	return true
}

// verifyFrames decompresses a stored object's stream frame by frame from
// r (positioned at its start) and checks every page and the whole object
// against the record. A mismatch wraps ErrDamaged; a failure to read r
// that is not the object's fault (ctx done) is returned as it is.
func verifyFrames(ctx context.Context, key string, r io.Reader, rec record, pages []Page) error {
	damaged := func(format string, args ...any) error { return damage(key, format, args...) }
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("verifying %s: %w", key, err)
	}
	defer dec.Close()
	total := sha256.New()
	var raw int64
	for i, p := range pages {
		if err := dec.Reset(io.LimitReader(r, p.CompressedSize)); err != nil {
			return damaged("page %d: %v", i+1, err)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(h, total), dec)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return damaged("page %d does not decompress: %v", i+1, err)
		}
		raw += n
		if n != p.RawSize {
			return damaged("page %d holds %d raw bytes, recorded %d", i+1, n, p.RawSize)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != p.RawSHA256 {
			return damaged("page %d sha256 %s, recorded %s", i+1, got, p.RawSHA256)
		}
	}
	if got := hex.EncodeToString(total.Sum(nil)); got != rec.RawSHA256 {
		return damaged("sha256 %s, recorded %s", got, rec.RawSHA256)
	}
	if raw != rec.RawSize {
		return damaged("%d raw bytes, recorded %d", raw, rec.RawSize)
	}
	return nil
}

// hasMeta reports whether the record was read from Sluice metadata.
func (r record) hasMeta() bool { return r.RawSHA256 != "" }

// ctxReader fails reads once its context is done, so that verifying a
// large object stops when the caller gives up.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from the source unless the context is done.
func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
