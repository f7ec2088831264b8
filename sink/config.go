package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/pflag"
)

// Environment variables that set the defaults of the lake flags.
const (
	EnvS3Bucket      = "SLUICE_S3_BUCKET"
	EnvS3Endpoint    = "SLUICE_S3_ENDPOINT"
	EnvS3Region      = "SLUICE_S3_REGION"
	EnvS3PartSize    = "SLUICE_S3_PART_SIZE"
	EnvS3Concurrency = "SLUICE_S3_CONCURRENCY"
	EnvDataDir       = "SLUICE_DATA_DIR"
)

// EnvAnnotation is the pflag annotation under which BindFlags records the
// environment variable of each flag (cmd/sluice checks its deployment
// files against it).
const EnvAnnotation = "sluice-env"

// DefaultDataDir is where Sluice keeps local state; the local lake is its
// "lake" subdirectory.
const DefaultDataDir = "./var"

// Config selects and tunes the lake, the same on every command that writes
// to it. With an S3 bucket the lake is S3; without, the local directory
// <DataDir>/lake.
type Config struct {
	// S3Bucket selects the S3 lake (--s3-bucket, SLUICE_S3_BUCKET).
	S3Bucket string
	// S3Endpoint is a non-AWS endpoint such as MinIO's; it turns on
	// path-style addressing (--s3-endpoint, SLUICE_S3_ENDPOINT).
	S3Endpoint string
	// S3Region is the bucket's region (--s3-region, SLUICE_S3_REGION).
	S3Region string
	// S3PartSize is the multipart part size in bytes (--s3-part-size,
	// SLUICE_S3_PART_SIZE).
	S3PartSize int64
	// S3Concurrency is the number of parts uploaded at once per object
	// (--s3-concurrency, SLUICE_S3_CONCURRENCY).
	S3Concurrency int
	// DataDir is Sluice's state directory (--data-dir, SLUICE_DATA_DIR).
	DataDir string
	// Credentials overrides the AWS default credential chain; nil uses
	// it (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, shared config, roles).
	Credentials aws.CredentialsProvider
	// Logger receives the sink's warnings; nil means slog.Default().
	Logger *slog.Logger

	envErr error // a malformed environment default, reported by Validate
}

// BindFlags registers the lake flags on fs. Unset fields of c take their
// defaults first from the SLUICE_* environment variables (empty ones count
// as unset), then from the package defaults; a malformed variable is
// reported by Validate and Open.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	c.applyEnv(os.LookupEnv)
	fs.StringVar(&c.S3Bucket, "s3-bucket", c.S3Bucket,
		"S3 bucket of the lake; without it the local lake <data-dir>/lake is used (env "+EnvS3Bucket+")")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", c.S3Endpoint,
		"S3 endpoint URL for MinIO and other S3-compatible servers; enables path-style addressing (env "+EnvS3Endpoint+")")
	fs.StringVar(&c.S3Region, "s3-region", c.S3Region,
		"S3 region; empty uses AWS_REGION or us-east-1 (env "+EnvS3Region+")")
	fs.Var(sizeValue{p: &c.S3PartSize, check: checkPartSize}, "s3-part-size",
		"multipart part size, 5MiB to 5GiB; memory per object is at most part size × (concurrency+1) (env "+EnvS3PartSize+")")
	fs.Var(concurrencyValue{&c.S3Concurrency}, "s3-concurrency",
		"parts uploaded at once per object, 1 to "+strconv.Itoa(MaxConcurrency)+" (env "+EnvS3Concurrency+")")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir,
		"Sluice's state directory; the local lake lives in its lake/ subdirectory (env "+EnvDataDir+")")
	for flag, env := range map[string]string{
		"s3-bucket": EnvS3Bucket, "s3-endpoint": EnvS3Endpoint, "s3-region": EnvS3Region,
		"s3-part-size": EnvS3PartSize, "s3-concurrency": EnvS3Concurrency, "data-dir": EnvDataDir,
	} {
		_ = fs.SetAnnotation(flag, EnvAnnotation, []string{env})
	}
}

// applyEnv fills unset fields from the environment, then from defaults.
func (c *Config) applyEnv(lookup func(string) (string, bool)) {
	var errs []error
	env := func(name string) (string, bool) {
		v, ok := lookup(name)
		return v, ok && v != "" // an empty variable counts as unset
	}
	str := func(p *string, name string) {
		if v, ok := env(name); ok && *p == "" {
			*p = v
		}
	}
	str(&c.S3Bucket, EnvS3Bucket)
	str(&c.S3Endpoint, EnvS3Endpoint)
	str(&c.S3Region, EnvS3Region)
	str(&c.DataDir, EnvDataDir)
	if v, ok := env(EnvS3PartSize); ok && c.S3PartSize == 0 {
		n, err := ParseSize(v)
		if err == nil {
			err = checkPartSize(n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s=%q: %w", EnvS3PartSize, v, err))
			n = 0
		}
		c.S3PartSize = n
	}
	if v, ok := env(EnvS3Concurrency); ok && c.S3Concurrency == 0 {
		n, err := strconv.Atoi(v)
		if err != nil {
			err = fmt.Errorf("%q is not a whole number", v)
		} else {
			err = checkConcurrency(n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s=%q: %w", EnvS3Concurrency, v, err))
			n = 0
		}
		c.S3Concurrency = n
	}
	if c.S3PartSize == 0 {
		c.S3PartSize = DefaultPartSize
	}
	if c.S3Concurrency == 0 {
		c.S3Concurrency = DefaultConcurrency
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	c.envErr = errors.Join(errs...)
}

// LakeRoot is the local lake's directory, <DataDir>/lake.
func (c *Config) LakeRoot() string {
	dir := c.DataDir
	if dir == "" {
		dir = DefaultDataDir
	}
	return filepath.Join(dir, "lake")
}

// Validate checks the configuration without contacting any store. The
// S3 tuning is checked whether or not a bucket is set, so that a bad
// value is reported before the day it starts to matter. In a Config built
// in code (not by BindFlags) a zero part size or concurrency means the
// default.
func (c *Config) Validate() error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.S3PartSize != 0 {
		if err := checkPartSize(c.S3PartSize); err != nil {
			return fmt.Errorf("--s3-part-size (%s): %w", EnvS3PartSize, err)
		}
	}
	if c.S3Concurrency != 0 {
		if err := checkConcurrency(c.S3Concurrency); err != nil {
			return fmt.Errorf("--s3-concurrency (%s): %w", EnvS3Concurrency, err)
		}
	}
	if c.S3Bucket == "" && c.S3Endpoint != "" {
		return fmt.Errorf("--s3-endpoint %s is set but --s3-bucket (%s) is not", c.S3Endpoint, EnvS3Bucket)
	}
	return nil
}

// checkPartSize reports a part size outside MinPartSize to MaxPartSize.
func checkPartSize(n int64) error {
	if n < MinPartSize || n > MaxPartSize {
		return fmt.Errorf("%s is outside the allowed 5MiB to 5GiB", FormatSize(n))
	}
	return nil
}

// checkConcurrency reports a concurrency outside 1 to MaxConcurrency.
func checkConcurrency(n int) error {
	if n < 1 || n > MaxConcurrency {
		return fmt.Errorf("%d is outside the allowed 1 to %d", n, MaxConcurrency)
	}
	return nil
}

// concurrencyValue is the pflag.Value of --s3-concurrency: a whole number
// from 1 to MaxConcurrency (0 is not "the default": it is refused).
type concurrencyValue struct{ p *int }

// String renders the concurrency.
func (v concurrencyValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

// Set parses a whole number and checks it is from 1 to MaxConcurrency.
func (v concurrencyValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if err := checkConcurrency(n); err != nil {
		return err
	}
	*v.p = n
	return nil
}

// Type names the flag's value type in help output.
func (v concurrencyValue) Type() string { return "int" }

// Describe names the selected lake for logs and messages, e.g.
// "s3://sluice-lake at http://minio:9000" or "local lake var/lake".
func (c *Config) Describe() string {
	if c.S3Bucket == "" {
		return "local lake " + c.LakeRoot()
	}
	s := "s3://" + c.S3Bucket
	if c.S3Endpoint != "" {
		s += " at " + c.S3Endpoint
	}
	return s
}

// OpenExisting validates the configuration and opens the lake it selects
// for reading only. A local lake must already exist: it is never created,
// so a mistyped --data-dir fails with "no lake at <path>" (wrapping
// ErrNoLake) instead of reading a new, empty lake. An S3 lake opens as
// with Open.
func (c *Config) OpenExisting(ctx context.Context) (Sink, error) {
	if c.S3Bucket != "" {
		return c.openS3(ctx, false)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the lake: %w", err)
	}
	root := c.LakeRoot()
	l, err := OpenLocalExisting(root)
	if errors.Is(err, ErrNoLake) {
		return nil, fmt.Errorf("%w at %s (check --data-dir / %s)", ErrNoLake, root, EnvDataDir)
	}
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
		return NewLocal(c.LakeRoot())
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
