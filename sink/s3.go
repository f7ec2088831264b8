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

// Put implements Sink.
func (s *S3) Put(ctx context.Context, key string, body io.Reader, meta Meta) (Result, error) {
	if err := ValidateKey(key); err != nil {
		return Result{}, err
	}
	up := newUpload(ctx, s, key)
	defer up.cancel(nil)
	res := Result{Key: key}
	rawSize, sum, err := s.comp.stream(up.ctx, up, body)
	res.RawSize = rawSize
	if err != nil {
		up.abort()
		res.BytesWritten, res.PeakBuffered = up.sentBytes(), up.peakBytes()
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	rec := newRecord(meta, sum, rawSize, up.total, s.writer)
	res.RawSHA256, res.CompressedSize = rec.RawSHA256, rec.CompressedSize

	if !up.started() {
		res.PeakBuffered = up.peakBytes()
		if s.unchanged(ctx, key, rec) {
			res.Skipped = true
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
			return res, fmt.Errorf("putting %s: %w", key, err)
		}
		res.BytesWritten = int64(len(up.buf))
		return res, nil
	}

	err = up.flushLast()
	res.BytesWritten, res.PeakBuffered = up.sentBytes(), up.peakBytes()
	if err != nil {
		up.abort()
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	if s.unchanged(ctx, key, rec) {
		up.abort()
		res.Skipped = true
		return res, nil
	}
	if err := up.complete(); err != nil {
		up.abort()
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	err = s.copyInto(up.ctx, up.staging, key, rec)
	s.deleteStaging(ctx, up.staging)
	if err != nil {
		return res, fmt.Errorf("putting %s: %w", key, err)
	}
	return res, nil
}

// unchanged reports whether the object at key already holds rec's bytes.
func (s *S3) unchanged(ctx context.Context, key string, rec record) bool {
	old, err := s.Stat(ctx, key)
	return err == nil && old.RawSHA256 == rec.RawSHA256
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
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: id,
	})
	if err != nil {
		s.log.Warn("aborting multipart upload failed; a lifecycle rule must clean it up",
			"bucket", s.bucket, "key", key, "err", err)
	}
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
