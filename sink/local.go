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

	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/internal/version"
)

// localBufferSize is the write buffer between the encoder and the file:
// all the memory a local Put accounts for.
const localBufferSize = 64 << 10

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
	return openLocal(root)
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

// Put implements Sink.
func (l *Local) Put(ctx context.Context, key string, body io.Reader, meta Meta) (res Result, err error) {
	if err := ValidateKey(key); err != nil {
		return Result{}, err
	}
	res.Key = key
	dst := l.path(key)
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, ".sluice-tmp-*")
	if err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()

	cw := &countingWriter{w: f}
	bw := bufio.NewWriterSize(cw, localBufferSize)
	res.PeakBuffered = localBufferSize
	rawSize, sum, err := l.comp.stream(ctx, bw, body)
	res.RawSize = rawSize
	if err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	rec := newRecord(meta, sum, rawSize, cw.n, l.writer)
	res.CompressedSize, res.RawSHA256 = rec.CompressedSize, rec.RawSHA256

	if old, err := l.Stat(ctx, key); err == nil && old.RawSHA256 == rec.RawSHA256 {
		res.Skipped = true
		res.BytesWritten = cw.n
		return res, nil
	}

	trailer, err := appendTrailer(nil, rec)
	if err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	if _, err := cw.Write(trailer); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	res.BytesWritten = cw.n
	if err := f.Chmod(0o644); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("putting %s: syncing: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, context.Cause(ctx))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	committed = true
	if err := syncDir(dir); err != nil {
		return res, fmt.Errorf("putting %s: syncing directory: %w", key, err)
	}
	return res, nil
}

func syncDir(dir string) error {
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
