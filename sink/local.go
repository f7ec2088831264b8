package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/internal/version"
)

// localBufferSize is the write buffer between the encoder and the file:
// all the memory a local Put accounts for.
const localBufferSize = 64 << 10

// tempPrefix starts the name of every temporary file of a write; no key
// segment starts with '.', so List never shows one.
const tempPrefix = ".sluice-tmp-"

// StaleTempAge is how old (by modification time) a temporary file must be
// before a writer may remove it (one starting up, or a running one's
// sweep: RemoveStale, SweepStale), and then only when no process holds
// its lock: a writer locks its file right after creating it, and
// this margin covers that instant.
const StaleTempAge = time.Minute

// errLockUnsupported means the platform has no flock(2).
var errLockUnsupported = errors.New("file locks are not supported on this platform")

// Local is the lake in a directory: the key is the path below the root.
// Each object file is a zstd stream followed by a metadata frame (see
// appendTrailer), written to a hidden temporary file in the same
// directory, fsynced and renamed into place, so that readers see the old
// object or the new one, never a partial one.
type Local struct {
	root   string
	comp   *compressor
	writer string
}

var _ Sink = (*Local)(nil)

// ErrNoLake is wrapped by the error of a read-only open that finds no
// lake (OpenLocalExisting, Config.OpenExisting).
var ErrNoLake = errors.New("no lake")

// NewLocal opens (creating it if needed) the local lake rooted at root.
// Writers use it; readers use OpenLocalExisting, so that a mistyped
// directory is an error rather than a new, empty lake.
func NewLocal(root string) (*Local, error) {
	if root == "" {
		return nil, errors.New("opening local lake: empty root directory")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("opening local lake: %w", err)
	}
	l, err := openLocal(root)
	if err != nil {
		return nil, err
	}
	if _, err := l.RemoveStale(time.Now()); err != nil {
		return nil, fmt.Errorf("opening local lake: %w", err)
	}
	return l, nil
}

// RemoveStale removes the temporary files that writers killed mid-write
// left behind: those older than StaleTempAge at now whose flock(2) no
// process holds (a live writer holds its file's lock until it renames or
// removes it). NewLocal calls it, so every writer starting up cleans the
// lake, and SweepStale calls it while a writer runs; it returns the paths
// removed.
func (l *Local) RemoveStale(now time.Time) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tempPrefix) || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || now.Sub(info.ModTime()) < StaleTempAge {
			return nil
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return nil // gone (committed or aborted) meanwhile
		}
		defer f.Close()
		if err := lockFile(f); err != nil {
			// Locked: a live writer's. Any other failure: its writer
			// cannot be told dead, so it stays.
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing stale temporary file %s: %w", p, err)
		}
		removed = append(removed, p)
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("removing stale temporary files: %w", err)
	}
	return removed, nil
}

// SweepStale calls RemoveStale at every tick of ticks, with the tick's
// time as now, until ctx is done or ticks is closed; report, when not nil,
// receives what each sweep removed and its error. A worker runs it beside
// its writes (with a time.Ticker's channel), so that the temporary files
// of a writer killed mid-write — a crashed worker — are removed by the
// writers that survive it, not only by the next one to start: no later
// than StaleTempAge plus a tick after the killed writer's last write.
func (l *Local) SweepStale(ctx context.Context, ticks <-chan time.Time, report func(removed []string, err error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case now, ok := <-ticks:
			if !ok {
				return
			}
			removed, err := l.RemoveStale(now)
			if report != nil {
				report(removed, err)
			}
		}
	}
}

// OpenLocalExisting opens the local lake rooted at root without creating
// anything: when root does not exist the error wraps ErrNoLake, and when
// it is not a directory it is an error too.
func OpenLocalExisting(root string) (*Local, error) {
	if root == "" {
		return nil, errors.New("opening local lake: empty root directory")
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s", ErrNoLake, root)
	case err != nil:
		return nil, fmt.Errorf("opening local lake: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("opening local lake: %s is not a directory", root)
	}
	return openLocal(root)
}

func openLocal(root string) (*Local, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("opening local lake: %w", err)
	}
	return &Local{root: abs, comp: newCompressor(), writer: version.Version}, nil
}

// Root returns the lake's directory.
func (l *Local) Root() string { return l.root }

// Close implements Sink; a Local holds nothing open.
func (l *Local) Close() error { return nil }

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// Put implements Sink: one page.
func (l *Local) Put(ctx context.Context, key string, body io.Reader, meta Meta) (Result, error) {
	return putOne(ctx, l, key, body, meta)
}

// putOne is Put on any sink: Create, one page, Commit.
func putOne(ctx context.Context, s Sink, key string, body io.Reader, meta Meta) (Result, error) {
	w, err := s.Create(ctx, key)
	if err != nil {
		return Result{Key: key}, err
	}
	defer w.Abort()
	if _, err := w.WritePage(body); err != nil {
		res := Result{Key: key}
		if pr, ok := w.(interface{ partial() Result }); ok {
			res = pr.partial()
		}
		return res, err
	}
	return w.Commit(meta)
}

// Create implements Sink. The pages stream into a hidden temporary file
// in the object's directory (new directories are fsynced into their
// parents), locked with flock(2) while it is written so that a writer
// starting up never removes it (see NewLocal); Commit appends the page
// index and the trailer, fsyncs and renames it into place.
func (l *Local) Create(ctx context.Context, key string) (Writer, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	dst := l.path(key)
	dir := filepath.Dir(dst)
	if err := mkdirAllSync(l.root, dir); err != nil {
		return nil, fmt.Errorf("putting %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("putting %s: %w", key, err)
	}
	if err := lockFile(f); err != nil && !errors.Is(err, errLockUnsupported) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("putting %s: locking temporary file: %w", key, err)
	}
	w := &localWriter{l: l, ctx: ctx, key: key, dst: dst, dir: dir, f: f, tmp: f.Name()}
	w.cw = &countingWriter{w: f}
	w.bw = bufio.NewWriterSize(w.cw, localBufferSize)
	w.ps = newPageStream(ctx, l.comp, func() int64 { return w.cw.n + int64(w.bw.Buffered()) })
	return w, nil
}

// localWriter is a Local object being written.
type localWriter struct {
	l                  *Local
	ctx                context.Context
	key, dst, dir, tmp string
	f                  *os.File
	cw                 *countingWriter
	bw                 *bufio.Writer
	ps                 *pageStream
	err                error // the first failure: the writer is unusable
	done               bool  // committed or aborted
}

// partial is what a failed write did.
func (w *localWriter) partial() Result {
	return Result{Key: w.key, RawSize: w.ps.raw, Pages: len(w.ps.pages), BytesWritten: w.cw.n, PeakBuffered: localBufferSize}
}

// WritePage implements Writer.
func (w *localWriter) WritePage(body io.Reader) (Page, error) {
	if w.done || w.err != nil {
		return Page{}, w.unusable()
	}
	p, err := w.ps.write(w.bw, body)
	if err != nil {
		w.err = fmt.Errorf("putting %s: %w", w.key, err)
		return p, w.err
	}
	return p, nil
}

func (w *localWriter) unusable() error {
	if w.err != nil {
		return w.err
	}
	return fmt.Errorf("putting %s: the writer was already committed or aborted", w.key)
}

// Commit implements Writer.
func (w *localWriter) Commit(meta Meta) (Result, error) {
	res := Result{Key: w.key, RawSize: w.ps.raw, Pages: len(w.ps.pages), PeakBuffered: localBufferSize}
	if w.done || w.err != nil {
		return res, w.unusable()
	}
	fail := func(err error) (Result, error) {
		w.err = fmt.Errorf("putting %s: %w", w.key, err)
		w.Abort()
		return res, w.err
	}
	idx, sum, err := w.ps.finish()
	if err != nil {
		return fail(err)
	}
	if _, err := w.bw.Write(idx); err != nil {
		return fail(err)
	}
	if err := w.bw.Flush(); err != nil {
		return fail(err)
	}
	rec := newRecord(meta, sum, w.ps.raw, w.cw.n, w.l.writer)
	if len(w.ps.pages) > 1 {
		rec.Pages, rec.PageIndexSize = len(w.ps.pages), int64(len(idx))
	}
	res.CompressedSize, res.RawSHA256 = rec.CompressedSize, rec.RawSHA256

	if w.l.unchanged(w.ctx, w.key, rec, w.ps.pages) {
		res.Skipped = true
		res.BytesWritten = w.cw.n
		w.Abort()
		return res, nil
	}
	trailer, err := appendTrailer(nil, rec)
	if err != nil {
		return fail(err)
	}
	if _, err := w.cw.Write(trailer); err != nil {
		return fail(err)
	}
	res.BytesWritten = w.cw.n
	if err := w.f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(fmt.Errorf("syncing: %w", err))
	}
	if err := w.ctx.Err(); err != nil {
		return fail(context.Cause(w.ctx))
	}
	if err := os.Rename(w.tmp, w.dst); err != nil {
		return fail(err)
	}
	w.done = true
	// Closing releases the lock; the file is in place under its key.
	if err := w.f.Close(); err != nil {
		return res, fmt.Errorf("putting %s: %w", w.key, err)
	}
	if err := syncDir(w.dir); err != nil {
		return res, fmt.Errorf("putting %s: syncing directory: %w", w.key, err)
	}
	return res, nil
}

// Abort implements Writer.
func (w *localWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	_ = w.f.Close()
	_ = os.Remove(w.tmp)
}

// unchanged reports whether the object at key verifiably holds pages
// already: its recorded SHA-256, page count and window match and it decompresses
// to exactly these pages. A damaged object is not unchanged: it is
// rewritten.
func (l *Local) unchanged(ctx context.Context, key string, rec record, pages []Page) bool {
	old, err := l.Stat(ctx, key)
	if err != nil || old.RawSHA256 != rec.RawSHA256 || old.Pages != rec.pages() || old.Window != rec.window() {
		return false
	}
	stored, err := l.Pages(ctx, key)
	if err != nil || !samePages(stored, pages) {
		return false
	}
	return l.Verify(ctx, key) == nil
}

// mkdirAllSync creates dir (below root, which exists) and its missing
// parents, fsyncing each new directory's parent so that the new entries
// survive a crash along with the object renamed into them.
func mkdirAllSync(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return os.MkdirAll(dir, 0o755)
	}
	cur := root
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, 0o755)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return fmt.Errorf("syncing directory %s: %w", parent, err)
			}
		case errors.Is(err, fs.ErrExist):
			// Created before (or by a concurrent writer, which syncs it).
		default:
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory (a variable so tests can watch it).
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stat implements Sink.
func (l *Local) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return Object{}, l.openError(key, err)
	}
	defer f.Close()
	obj, _, err := l.stat(f, key)
	return obj, err
}

func (l *Local) openError(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("opening %s: %w", key, err)
}

// stat reads the object at an open file and returns it with the length of
// its zstd stream.
func (l *Local) stat(f *os.File, key string) (Object, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return Object{}, 0, fmt.Errorf("reading %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return Object{}, 0, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	rec, n, err := readTrailer(f, fi.Size())
	switch {
	case errors.Is(err, errNoTrailer):
		return Object{Key: key, CompressedSize: fi.Size(), Modified: fi.ModTime()}, fi.Size(), nil
	case err != nil:
		return Object{}, 0, fmt.Errorf("reading %s: %w", key, err)
	}
	return rec.object(key, fi.ModTime()), fi.Size() - n, nil
}

// Open implements Sink.
func (l *Local) Open(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return nil, Object{}, l.openError(key, err)
	}
	obj, n, err := l.stat(f, key)
	if err != nil {
		f.Close()
		return nil, Object{}, err
	}
	dec, err := zstd.NewReader(io.NewSectionReader(f, 0, n), zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, Object{}, fmt.Errorf("opening %s: %w", key, err)
	}
	return &decodeCloser{dec: dec, c: f}, obj, nil
}

// Pages implements Sink.
func (l *Local) Pages(ctx context.Context, key string) ([]Page, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return nil, l.openError(key, err)
	}
	defer f.Close()
	pages, _, _, err := l.pages(f, key)
	return pages, err
}

// pages reads the pages of the object at an open file, with its record
// and the length of its zstd stream.
func (l *Local) pages(f *os.File, key string) ([]Page, record, int64, error) {
	rec, n, err := l.record(f, key)
	if err != nil {
		return nil, rec, n, err
	}
	if rec.pages() == 1 {
		return singlePage(rec, n), rec, n, nil
	}
	if rec.PageIndexSize > n {
		return nil, rec, n, damage(key, "page index of %d bytes in a %d-byte stream", rec.PageIndexSize, n)
	}
	b := make([]byte, rec.PageIndexSize)
	if _, err := f.ReadAt(b, n-rec.PageIndexSize); err != nil {
		return nil, rec, n, fmt.Errorf("reading %s: page index: %w", key, err)
	}
	pages, err := parsePageIndex(b, rec)
	if err != nil {
		return nil, rec, n, damage(key, "%v", err)
	}
	return pages, rec, n, nil
}

// record reads the metadata of the object at an open file; an object
// without it has a zero record (no SHA-256) whose stream is the file.
func (l *Local) record(f *os.File, key string) (record, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return record{}, 0, fmt.Errorf("reading %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return record{}, 0, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	rec, n, err := readTrailer(f, fi.Size())
	switch {
	case errors.Is(err, errNoTrailer):
		return record{CompressedSize: fi.Size()}, fi.Size(), nil
	case err != nil:
		return record{}, 0, fmt.Errorf("reading %s: %w", key, err)
	}
	return rec, fi.Size() - n, nil
}

// OpenPage implements Sink.
func (l *Local) OpenPage(ctx context.Context, key string, n int) (io.ReadCloser, Page, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Page{}, err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return nil, Page{}, l.openError(key, err)
	}
	pages, _, _, err := l.pages(f, key)
	if err == nil && (n < 1 || n > len(pages)) {
		err = fmt.Errorf("%w: %s has %d pages, not a page %d", ErrNotFound, key, len(pages), n)
	}
	if err != nil {
		f.Close()
		return nil, Page{}, err
	}
	p := pages[n-1]
	dec, err := zstd.NewReader(io.NewSectionReader(f, p.Offset, p.CompressedSize), zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, Page{}, fmt.Errorf("opening %s page %d: %w", key, n, err)
	}
	return &decodeCloser{dec: dec, c: f}, p, nil
}

// Verify implements Sink.
func (l *Local) Verify(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return l.openError(key, err)
	}
	defer f.Close()
	pages, rec, n, err := l.pages(f, key)
	if err != nil {
		return err
	}
	if !rec.hasMeta() {
		return damage(key, "no recorded sha256 (not written by Sluice, or its metadata is damaged)")
	}
	if rec.CompressedSize != n {
		return damage(key, "%d compressed bytes, recorded %d", n, rec.CompressedSize)
	}
	return verifyFrames(ctx, key, &ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, n)}, rec, pages)
}

// List implements Sink. Keys come in the byte order of S3 listings.
func (l *Local) List(ctx context.Context, prefix string, fn func(Object) error) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	start := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i+1]
	}
	err := l.walk(ctx, start, prefix, fn)
	var se stopError
	if errors.As(err, &se) {
		return se.err
	}
	return err
}

// stopError carries the error of the caller's fn out of the walk.
type stopError struct{ err error }

// Error returns the carried error's message.
func (e stopError) Error() string { return e.err.Error() }

// walk lists the directory rel (a key prefix ending in '/', or "") in S3
// key order: a directory "a" sorts as "a/".
func (l *Local) walk(ctx context.Context, rel, prefix string, fn func(Object) error) error {
	entries, err := os.ReadDir(l.path(rel))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // nothing under this prefix (or removed while listing)
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", rel, err)
	}
	sortName := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	sort.Slice(entries, func(i, j int) bool { return sortName(entries[i]) < sortName(entries[j]) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if strings.HasPrefix(e.Name(), ".") {
			continue // temporary files; never a key segment
		}
		key := rel + sortName(e)
		if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key) {
			continue
		}
		if e.IsDir() {
			if err := l.walk(ctx, key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) || ValidateKey(key) != nil {
			continue
		}
		f, err := os.Open(l.path(key))
		if errors.Is(err, fs.ErrNotExist) {
			continue // replaced or removed while listing
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", key, err)
		}
		obj, _, err := l.stat(f, key)
		f.Close()
		if err != nil {
			return fmt.Errorf("listing: %w", err)
		}
		if err := fn(obj); err != nil {
			return stopError{err}
		}
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

// Write writes to the underlying writer and counts the bytes written.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// decodeCloser is a zstd stream that closes its source when closed.
type decodeCloser struct {
	dec *zstd.Decoder
	c   io.Closer
}

// Read returns decompressed bytes.
func (d *decodeCloser) Read(p []byte) (int, error) { return d.dec.Read(p) }

// Close releases the decoder and closes the source.
func (d *decodeCloser) Close() error {
	d.dec.Close()
	return d.c.Close()
}
