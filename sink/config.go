package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Config selects and tunes the lake, the same on every command that writes
// to it. With an S3 bucket the lake is S3; without, the local directory
// LocalDir. cmd/sluice fills it from its flags and environment (the local
// lake is <data-dir>/lake there).
type Config struct {
	// S3Bucket selects the S3 lake.
	S3Bucket string
	// S3Endpoint is a non-AWS endpoint such as MinIO's; it turns on
	// path-style addressing.
	S3Endpoint string
	// S3Region is the bucket's region.
	S3Region string
	// S3PartSize is the multipart part size in bytes (0: DefaultPartSize).
	S3PartSize int64
	// S3Concurrency is the number of parts uploaded at once per object
	// (0: DefaultConcurrency).
	S3Concurrency int
	// LocalDir is the local lake's directory, required without S3Bucket.
	LocalDir string
	// Credentials overrides the AWS default credential chain; nil uses
	// it (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, shared config, roles).
	Credentials aws.CredentialsProvider
	// Logger receives the sink's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Validate checks the configuration without contacting any store. The
// S3 tuning is checked whether or not a bucket is set, so that a bad
// value is reported before the day it starts to matter; a zero part size
// or concurrency means the default.
func (c *Config) Validate() error {
	if c.S3PartSize != 0 {
		if err := CheckPartSize(c.S3PartSize); err != nil {
			return fmt.Errorf("S3 part size: %w", err)
		}
	}
	if c.S3Concurrency != 0 {
		if err := CheckConcurrency(c.S3Concurrency); err != nil {
			return fmt.Errorf("S3 concurrency: %w", err)
		}
	}
	if c.S3Bucket == "" && c.S3Endpoint != "" {
		return fmt.Errorf("the S3 endpoint %s is set without an S3 bucket", c.S3Endpoint)
	}
	if c.S3Bucket == "" && c.LocalDir == "" {
		return errors.New("neither an S3 bucket nor a local lake directory is set")
	}
	return nil
}

// CheckPartSize reports a part size outside MinPartSize to MaxPartSize.
func CheckPartSize(n int64) error {
	if n < MinPartSize || n > MaxPartSize {
		return fmt.Errorf("%s is outside the allowed 5MiB to 5GiB", FormatSize(n))
	}
	return nil
}

// CheckConcurrency reports a concurrency outside 1 to MaxConcurrency.
func CheckConcurrency(n int) error {
	if n < 1 || n > MaxConcurrency {
		return fmt.Errorf("%d is outside the allowed 1 to %d", n, MaxConcurrency)
	}
	return nil
}

// Describe names the selected lake for logs and messages, e.g.
// "s3://sluice-lake at http://minio:9000" or "local lake var/lake".
func (c *Config) Describe() string {
	if c.S3Bucket == "" {
		return "local lake " + c.LocalDir
	}
	s := "s3://" + c.S3Bucket
	if c.S3Endpoint != "" {
		s += " at " + c.S3Endpoint
	}
	return s
}

// OpenExisting validates the configuration and opens the lake it selects
// for reading only. A local lake must already exist: it is never created,
// so a mistyped directory fails with "no lake at <path>" (wrapping
// ErrNoLake) instead of reading a new, empty lake. An S3 lake opens as
// with Open.
func (c *Config) OpenExisting(ctx context.Context) (Sink, error) {
	if c.S3Bucket != "" {
		return c.openS3(ctx, false)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the lake: %w", err)
	}
	l, err := OpenLocalExisting(c.LocalDir)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Open validates the configuration and opens the lake it selects for a
// writer: a local lake's directory is created when it does not exist and
// the temporary files of killed writers are removed (NewLocal); an S3
// bucket's lifecycle rules are checked and every problem logged as a
// warning (CheckLifecycle). Readers use OpenExisting.
func (c *Config) Open(ctx context.Context) (Sink, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the lake: %w", err)
	}
	if c.S3Bucket == "" {
		return NewLocal(c.LocalDir)
	}
	return c.openS3(ctx, true)
}

// lifecycleCheckTimeout bounds the lifecycle check at a writer's start.
const lifecycleCheckTimeout = 15 * time.Second

func (c *Config) openS3(ctx context.Context, writer bool) (Sink, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the lake: %w", err)
	}
	s, err := c.newS3(ctx)
	if err != nil || !writer {
		return s, err
	}
	cctx, cancel := context.WithTimeout(ctx, lifecycleCheckTimeout)
	defer cancel()
	for _, p := range s.CheckLifecycle(cctx).Problems() {
		s.log.Warn("s3 lake: "+p, "bucket", c.S3Bucket)
	}
	return s, nil
}

func (c *Config) newS3(ctx context.Context) (*S3, error) {
	return NewS3(ctx, S3Config{
		Bucket:      c.S3Bucket,
		Endpoint:    c.S3Endpoint,
		Region:      c.S3Region,
		PartSize:    c.S3PartSize,
		Concurrency: c.S3Concurrency,
		Credentials: c.Credentials,
		Logger:      c.Logger,
	})
}
