package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/internal/version"
)

// S3 limits and Sluice defaults for multipart uploads.
const (
	// MinPartSize is S3's smallest part (all but the last).
	MinPartSize = 5 << 20
	// MaxPartSize is S3's largest part.
	MaxPartSize = 5 << 30
	// DefaultPartSize is the part size when none is configured.
	DefaultPartSize = 8 << 20
	// DefaultConcurrency is the number of parts uploaded at once when none
	// is configured.
	DefaultConcurrency = 4
	// MaxConcurrency bounds the configurable upload concurrency.
	MaxConcurrency = 64
	// maxCopySize is the largest object CopyObject copies in one request;
	// larger staged uploads are copied part by part.
	maxCopySize = 5 << 30
	// storedContentType is the Content-Type of every stored object; the raw
	// bytes' type is kept in metadata.
	storedContentType = "application/zstd"
	// cleanupTimeout bounds the aborts and deletes that run after a Put
	// failed or was cancelled.
	cleanupTimeout = 30 * time.Second
)

// S3Config configures an S3 sink.
type S3Config struct {
	// Bucket is the bucket holding the lake (required).
	Bucket string
	// Endpoint is the S3 endpoint URL, e.g. "http://127.0.0.1:9000" for
	// MinIO; empty means AWS. With an endpoint, path-style addressing is
	// used.
	Endpoint string
	// Region is the bucket's region; empty means the AWS chain's region,
	// else "us-east-1".
	Region string
	// PartSize is the multipart part size in bytes (MinPartSize to
	// MaxPartSize); 0 means DefaultPartSize. Bodies whose compressed
	// size fits in one part are sent with a single PutObject.
	PartSize int64
	// Concurrency is the number of parts uploaded at once (1 to
	// MaxConcurrency); 0 means DefaultConcurrency.
	Concurrency int
	// Credentials overrides the AWS default credential chain (environment,
	// shared config, instance roles) when not nil.
	Credentials aws.CredentialsProvider
	// Logger receives warnings about failed clean-ups; nil means
	// slog.Default().
	Logger *slog.Logger
}

// S3 is the lake in an S3 bucket. Small objects are written with one
// PutObject carrying their metadata. Larger ones stream as a multipart
// upload to a staging key under "_sluice/staging/" and are then copied
// into place with their metadata (S3 fixes an object's metadata when its
// upload starts, before the SHA-256 is known), so the key only ever holds
// a complete object with complete metadata. Failed or cancelled uploads
// are aborted; a bucket lifecycle rule that aborts incomplete multipart
// uploads and expires "_sluice/staging/" after a day cleans up after
// crashes.
type S3 struct {
	client      *s3.Client
	bucket      string
	partSize    int64
	concurrency int
	comp        *compressor
	writer      string
	log         *slog.Logger
	// copyLimit is the size above which staged objects are copied part by
	// part (maxCopySize; lowered by tests).
	copyLimit int64
	// copyPartSize is the part size of such copies.
	copyPartSize int64
}

var _ Sink = (*S3)(nil)

// NewS3 creates an S3 sink. It does not contact the server.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("opening s3 lake: no bucket")
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < MinPartSize || cfg.PartSize > MaxPartSize {
		return nil, fmt.Errorf("opening s3 lake: part size %d is outside %d to %d bytes", cfg.PartSize, MinPartSize, int64(MaxPartSize))
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > MaxConcurrency {
		return nil, fmt.Errorf("opening s3 lake: concurrency %d is outside 1 to %d", cfg.Concurrency, MaxConcurrency)
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("opening s3 lake: loading aws config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("opening s3 lake: endpoint %q is not an http(s) URL", cfg.Endpoint)
		}
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &S3{
		client:       client,
		bucket:       cfg.Bucket,
		partSize:     cfg.PartSize,
		concurrency:  cfg.Concurrency,
		comp:         newCompressor(),
		writer:       version.Version,
		log:          log,
		copyLimit:    maxCopySize,
		copyPartSize: 1 << 30,
	}, nil
}

// Bucket returns the sink's bucket.
func (s *S3) Bucket() string { return s.bucket }

// Close implements Sink.
func (s *S3) Close() error { return nil }

// Put implements Sink: one page.
func (s *S3) Put(ctx context.Context, key string, body io.Reader, meta Meta) (Result, error) {
	return putOne(ctx, s, key, body, meta)
}

// Create implements Sink. The pages stream into part buffers: an object
// whose compressed pages fit in one part is sent with one PutObject at
// Commit; a larger one goes to a staging key as a multipart upload and is
// copied into place at Commit (see S3).
func (s *S3) Create(ctx context.Context, key string) (Writer, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	w := &s3Writer{s: s, key: key, ctx: ctx, up: newUpload(ctx, s, key)}
	w.ps = newPageStream(w.up.ctx, s.comp, func() int64 { return w.up.total })
	return w, nil
}

// s3Writer is an S3 object being written.
type s3Writer struct {
	s    *S3
	key  string
	ctx  context.Context
	up   *upload
	ps   *pageStream
	err  error
	done bool
}

// partial is what a failed write did.
func (w *s3Writer) partial() Result {
	return Result{Key: w.key, RawSize: w.ps.raw, Pages: len(w.ps.pages), BytesWritten: w.up.sentBytes(), PeakBuffered: w.up.peakBytes()}
}

// WritePage implements Writer.
func (w *s3Writer) WritePage(body io.Reader) (Page, error) {
	if w.done || w.err != nil {
		return Page{}, w.unusable()
	}
	p, err := w.ps.write(w.up, body)
	if err != nil {
		w.err = fmt.Errorf("putting %s: %w", w.key, err)
		w.Abort()
		return p, w.err
	}
	return p, nil
}

func (w *s3Writer) unusable() error {
	if w.err != nil {
		return w.err
	}
	return fmt.Errorf("putting %s: the writer was already committed or aborted", w.key)
}

// Abort implements Writer: parts in flight stop and a started multipart
// upload is aborted, so the server keeps none of it.
func (w *s3Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.up.abort()
	w.up.cancel(nil)
}

// Commit implements Writer.
func (w *s3Writer) Commit(meta Meta) (Result, error) {
	res := Result{Key: w.key, RawSize: w.ps.raw, Pages: len(w.ps.pages)}
	if w.done || w.err != nil {
		return res, w.unusable()
	}
	s, up, key, ctx := w.s, w.up, w.key, w.ctx
	fail := func(err error) (Result, error) {
		res.BytesWritten, res.PeakBuffered = up.sentBytes(), up.peakBytes()
		w.err = fmt.Errorf("putting %s: %w", key, err)
		w.Abort()
		return res, w.err
	}
	idx, sum, err := w.ps.finish()
	if err != nil {
		return fail(err)
	}
	if _, err := up.Write(idx); err != nil {
		return fail(err)
	}
	rec := newRecord(meta, sum, w.ps.raw, up.total, s.writer)
	if len(w.ps.pages) > 1 {
		rec.Pages, rec.PageIndexSize = len(w.ps.pages), int64(len(idx))
	}
	res.RawSHA256, res.CompressedSize = rec.RawSHA256, rec.CompressedSize

	if !up.started() {
		res.PeakBuffered = up.peakBytes()
		if s.unchanged(ctx, key, rec, w.ps.pages) {
			res.Skipped = true
			w.Abort()
			return res, nil
		}
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:            &s.bucket,
			Key:               &key,
			Body:              bytes.NewReader(up.buf),
			ContentLength:     aws.Int64(int64(len(up.buf))),
			ContentType:       aws.String(storedContentType),
			Metadata:          rec.headers(),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return fail(err)
		}
		res.BytesWritten = int64(len(up.buf))
		w.done = true
		up.cancel(nil)
		return res, nil
	}

	err = up.flushLast()
	res.BytesWritten, res.PeakBuffered = up.sentBytes(), up.peakBytes()
	if err != nil {
		return fail(err)
	}
	if s.unchanged(ctx, key, rec, w.ps.pages) {
		res.Skipped = true
		w.Abort()
		return res, nil
	}
	if err := up.complete(); err != nil {
		return fail(err)
	}
	w.done = true
	defer up.cancel(nil)
	err = s.copyInto(up.ctx, up.staging, key, rec)
	s.deleteStaging(ctx, up.staging)
	if err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	return res, nil
}

// unchanged reports whether the object at key verifiably holds pages
// already: its recorded SHA-256, page count and window match and it decompresses
// to exactly these pages (one GET of the stored object). A damaged
// object is not unchanged: it is rewritten.
func (s *S3) unchanged(ctx context.Context, key string, rec record, pages []Page) bool {
	old, err := s.Stat(ctx, key)
	if err != nil || old.RawSHA256 != rec.RawSHA256 || old.Pages != rec.pages() || old.Window != rec.window() {
		return false
	}
	stored, err := s.Pages(ctx, key)
	if err != nil || !samePages(stored, pages) {
		return false
	}
	if err := s.Verify(ctx, key); err != nil {
		s.log.Warn("the stored object does not verify; rewriting it", "bucket", s.bucket, "key", key, "err", err)
		return false
	}
	return true
}

// copyInto copies the completed staging object to key with rec's metadata.
func (s *S3) copyInto(ctx context.Context, staging, key string, rec record) error {
	source := s.bucket + "/" + escapeKey(staging)
	if rec.CompressedSize <= s.copyLimit {
		_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:            &s.bucket,
			Key:               &key,
			CopySource:        &source,
			MetadataDirective: types.MetadataDirectiveReplace,
			ContentType:       aws.String(storedContentType),
			Metadata:          rec.headers(),
		})
		if err != nil {
			return fmt.Errorf("copying staged upload into place: %w", err)
		}
		return nil
	}
	// Too big for CopyObject: a multipart upload to key whose parts are
	// copied from the staging object. It starts with the metadata.
	mp, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:      &s.bucket,
		Key:         &key,
		ContentType: aws.String(storedContentType),
		Metadata:    rec.headers(),
	})
	if err != nil {
		return fmt.Errorf("starting multipart copy: %w", err)
	}
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < rec.CompressedSize; off, n = off+s.copyPartSize, n+1 {
		end := min(off+s.copyPartSize, rec.CompressedSize) - 1
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket:          &s.bucket,
			Key:             &key,
			UploadId:        mp.UploadId,
			PartNumber:      aws.Int32(n),
			CopySource:      &source,
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)),
		})
		if err != nil {
			s.abortUpload(ctx, key, mp.UploadId)
			return fmt.Errorf("copying part %d into place: %w", n, err)
		}
		part := types.CompletedPart{PartNumber: aws.Int32(n)}
		if r := out.CopyPartResult; r != nil {
			part.ETag = r.ETag
			part.ChecksumCRC32, part.ChecksumCRC32C, part.ChecksumCRC64NVME = r.ChecksumCRC32, r.ChecksumCRC32C, r.ChecksumCRC64NVME
			part.ChecksumSHA1, part.ChecksumSHA256 = r.ChecksumSHA1, r.ChecksumSHA256
		}
		parts = append(parts, part)
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &key,
		UploadId:        mp.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		s.abortUpload(ctx, key, mp.UploadId)
		return fmt.Errorf("completing multipart copy: %w", err)
	}
	return nil
}

// abortUpload aborts a multipart upload, even when ctx is already done.
func (s *S3) abortUpload(ctx context.Context, key string, id *string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	// A part upload still in progress on the server (its request was
	// cancelled here, not there) may succeed after the abort: S3 says to
	// abort again until the upload is gone, which ListParts tells.
	for try := 1; ; try++ {
		_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: &s.bucket, Key: &key, UploadId: id,
		})
		if err != nil && !noSuchUpload(err) {
			s.log.Warn("aborting multipart upload failed; a lifecycle rule must clean it up",
				"bucket", s.bucket, "key", key, "err", err)
			return
		}
		_, err = s.client.ListParts(ctx, &s3.ListPartsInput{Bucket: &s.bucket, Key: &key, UploadId: id})
		if err != nil {
			return // gone (NoSuchUpload), or nothing more to learn
		}
		if try == 3 {
			s.log.Warn("a multipart upload survived three aborts; a lifecycle rule must clean it up",
				"bucket", s.bucket, "key", key)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(try) * 100 * time.Millisecond):
		}
	}
}

// noSuchUpload reports whether err says the multipart upload is gone.
func noSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	var re *awshttp.ResponseError
	return errors.As(err, &nsu) || (errors.As(err, &re) && re.HTTPStatusCode() == 404)
}

// deleteStaging removes a staging object, even when ctx is already done.
func (s *S3) deleteStaging(ctx context.Context, staging string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &staging}); err != nil {
		s.log.Warn("deleting staged upload failed; a lifecycle rule must clean it up",
			"bucket", s.bucket, "key", staging, "err", err)
	}
}

// escapeKey URL-escapes each segment of a key for a CopySource header.
func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// Stat implements Sink.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return Object{}, s.readError(key, err)
	}
	return s.object(key, out.Metadata, aws.ToInt64(out.ContentLength), aws.ToTime(out.LastModified)), nil
}

func (s *S3) object(key string, h map[string]string, size int64, modified time.Time) Object {
	if rec, ok := recordFromHeaders(h); ok {
		return rec.object(key, modified)
	}
	return Object{Key: key, CompressedSize: size, Modified: modified}
}

// readError maps a missing object to ErrNotFound.
func (s *S3) readError(key string, err error) error {
	var nf *types.NotFound
	var nsk *types.NoSuchKey
	var re *awshttp.ResponseError
	if errors.As(err, &nf) || errors.As(err, &nsk) || (errors.As(err, &re) && re.HTTPStatusCode() == 404) {
		return fmt.Errorf("%w: s3://%s/%s", ErrNotFound, s.bucket, key)
	}
	return fmt.Errorf("reading s3://%s/%s: %w", s.bucket, key, err)
}

// Open implements Sink.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return nil, Object{}, s.readError(key, err)
	}
	obj := s.object(key, out.Metadata, aws.ToInt64(out.ContentLength), aws.ToTime(out.LastModified))
	dec, err := zstd.NewReader(out.Body, zstd.WithDecoderConcurrency(1))
	if err != nil {
		out.Body.Close()
		return nil, Object{}, fmt.Errorf("opening s3://%s/%s: %w", s.bucket, key, err)
	}
	return &decodeCloser{dec: dec, c: out.Body}, obj, nil
}

// head returns the record and size of the object at key (a zero record
// for an object without Sluice metadata).
func (s *S3) head(ctx context.Context, key string) (record, int64, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return record{}, 0, s.readError(key, err)
	}
	size := aws.ToInt64(out.ContentLength)
	if rec, ok := recordFromHeaders(out.Metadata); ok {
		return rec, size, nil
	}
	return record{CompressedSize: size}, size, nil
}

// rangeBytes reads bytes [off, off+n) of the object at key.
func (s *S3) rangeBytes(ctx context.Context, key string, off, n int64) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		return nil, s.readError(key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, n+1))
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", s.bucket, key, err)
	}
	if int64(len(b)) != n {
		return nil, damage("s3://"+s.bucket+"/"+key, "asked bytes %d-%d, got %d bytes", off, off+n-1, len(b))
	}
	return b, nil
}

// pages reads the page list of the object at key with its record.
func (s *S3) pages(ctx context.Context, key string) ([]Page, record, int64, error) {
	rec, size, err := s.head(ctx, key)
	if err != nil {
		return nil, rec, size, err
	}
	if rec.pages() == 1 {
		return singlePage(rec, size), rec, size, nil
	}
	if rec.CompressedSize != size {
		return nil, rec, size, damage("s3://"+s.bucket+"/"+key, "%d bytes stored, recorded %d", size, rec.CompressedSize)
	}
	b, err := s.rangeBytes(ctx, key, size-rec.PageIndexSize, rec.PageIndexSize)
	if err != nil {
		return nil, rec, size, err
	}
	pages, err := parsePageIndex(b, rec)
	if err != nil {
		return nil, rec, size, damage("s3://"+s.bucket+"/"+key, "%v", err)
	}
	return pages, rec, size, nil
}

// Pages implements Sink.
func (s *S3) Pages(ctx context.Context, key string) ([]Page, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	pages, _, _, err := s.pages(ctx, key)
	return pages, err
}

// OpenPage implements Sink: a ranged GET of the page's frame.
func (s *S3) OpenPage(ctx context.Context, key string, n int) (io.ReadCloser, Page, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Page{}, err
	}
	pages, _, _, err := s.pages(ctx, key)
	if err != nil {
		return nil, Page{}, err
	}
	if n < 1 || n > len(pages) {
		return nil, Page{}, fmt.Errorf("%w: s3://%s/%s has %d pages, not a page %d", ErrNotFound, s.bucket, key, len(pages), n)
	}
	p := pages[n-1]
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", p.Offset, p.Offset+p.CompressedSize-1))})
	if err != nil {
		return nil, Page{}, s.readError(key, err)
	}
	dec, err := zstd.NewReader(out.Body, zstd.WithDecoderConcurrency(1))
	if err != nil {
		out.Body.Close()
		return nil, Page{}, fmt.Errorf("opening s3://%s/%s page %d: %w", s.bucket, key, n, err)
	}
	return &decodeCloser{dec: dec, c: out.Body}, p, nil
}

// Verify implements Sink: one GET of the stored object, decompressed
// page by page.
func (s *S3) Verify(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	pages, rec, size, err := s.pages(ctx, key)
	if err != nil {
		return err
	}
	if !rec.hasMeta() {
		return damage("s3://"+s.bucket+"/"+key, "no recorded sha256 (not written by Sluice, or its metadata is damaged)")
	}
	if size != rec.CompressedSize {
		return damage("s3://"+s.bucket+"/"+key, "%d bytes stored, recorded %d", size, rec.CompressedSize)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return s.readError(key, err)
	}
	defer out.Body.Close()
	return verifyFrames(ctx, "s3://"+s.bucket+"/"+key, &ctxReader{ctx: ctx, r: out.Body}, rec, pages)
}

// List implements Sink. It reads each object's metadata with a HEAD
// request, one per object.
func (s *S3) List(ctx context.Context, prefix string, fn func(Object) error) error {
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if ValidateKey(key) != nil {
				continue // staging objects and keys Sluice never writes
			}
			obj, err := s.Stat(ctx, key)
			if errors.Is(err, ErrNotFound) {
				continue // deleted while listing
			}
			if err != nil {
				return fmt.Errorf("listing: %w", err)
			}
			if err := fn(obj); err != nil {
				return err
			}
		}
	}
	return nil
}
