package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch/store"
)

// The environment variables of the data directory and the lake flags.
const (
	envDataDir       = "SLUICE_DATA_DIR"
	envS3Bucket      = "SLUICE_S3_BUCKET"
	envS3Endpoint    = "SLUICE_S3_ENDPOINT"
	envS3Region      = "SLUICE_S3_REGION"
	envS3PartSize    = "SLUICE_S3_PART_SIZE"
	envS3Concurrency = "SLUICE_S3_CONCURRENCY"
)

// defaultDataDir is where Sluice keeps local state without --data-dir.
const defaultDataDir = "./var"

// dataDir is --data-dir (SLUICE_DATA_DIR), Sluice's state directory: the
// one place every local path of Sluice comes from. An empty value (an
// empty variable, too) means defaultDataDir.
type dataDir struct{ dir string }

func (d *dataDir) bind(fs *pflag.FlagSet, usage string) {
	stringFlag(fs, &d.dir, "data-dir", envDataDir, defaultDataDir, "Sluice's state directory; "+usage)
}

// root is the data directory itself.
func (d dataDir) root() string {
	if d.dir == "" {
		return defaultDataDir
	}
	return d.dir
}

// lake is the local lake's directory, <data-dir>/lake.
func (d dataDir) lake() string { return filepath.Join(d.root(), "lake") }

// tokens is the KIS token file store's directory, <data-dir>/tokens.
func (d dataDir) tokens() string { return filepath.Join(d.root(), "tokens") }

// temporal is the embedded Temporal server's directory, <data-dir>/temporal.
func (d dataDir) temporal() string { return filepath.Join(d.root(), "temporal") }

// watchDB is the default watch store's SQLite file, <data-dir>/watch/watch.db.
func (d dataDir) watchDB() string { return store.SQLitePath(d.root()) }

// devLog is the log file `sluice dev` writes, <data-dir>/logs/dev.log.
func (d dataDir) devLog() string { return filepath.Join(d.root(), "logs", "dev.log") }

// operatorToken is the file `sluice dev` keeps its operator token in,
// <data-dir>/operator-token.
func (d dataDir) operatorToken() string { return filepath.Join(d.root(), "operator-token") }

// codecKey is the payload key file `sluice dev` creates when none is
// configured, <data-dir>/codec.key.
func (d dataDir) codecKey() string { return filepath.Join(d.root(), devKeyFile) }

// lakeFlags are the lake's flags, the same on every command that opens it:
// S3 when --s3-bucket is set, else the local lake under --data-dir.
type lakeFlags struct {
	cfg     sink.Config
	dataDir dataDir
}

func (l *lakeFlags) bind(fs *pflag.FlagSet) {
	stringFlag(fs, &l.cfg.S3Bucket, "s3-bucket", envS3Bucket, "",
		"S3 bucket of the lake; without it the local lake <data-dir>/lake is used")
	stringFlag(fs, &l.cfg.S3Endpoint, "s3-endpoint", envS3Endpoint, "",
		"S3 endpoint URL for MinIO and other S3-compatible servers; enables path-style addressing")
	stringFlag(fs, &l.cfg.S3Region, "s3-region", envS3Region, "",
		"S3 region; empty uses AWS_REGION or us-east-1")
	l.cfg.S3PartSize = sink.DefaultPartSize
	valueFlag(fs, partSizeValue{&l.cfg.S3PartSize}, "s3-part-size", envS3PartSize,
		"multipart part size, 5MiB to 5GiB; memory per object is at most part size × (concurrency+1)", "a size from 5MiB to 5GiB")
	l.cfg.S3Concurrency = sink.DefaultConcurrency
	valueFlag(fs, concurrencyValue{&l.cfg.S3Concurrency}, "s3-concurrency", envS3Concurrency,
		"parts uploaded at once per object, 1 to "+strconv.Itoa(sink.MaxConcurrency), "a whole number from 1 to "+strconv.Itoa(sink.MaxConcurrency))
	l.dataDir.bind(fs, "the local lake lives in its lake/ subdirectory")
}

// config is the lake's sink.Config, once the flags are parsed.
func (l *lakeFlags) config() (*sink.Config, error) {
	c := l.cfg
	c.LocalDir = l.dataDir.lake()
	if c.S3Bucket == "" && c.S3Endpoint != "" {
		return nil, fmt.Errorf("configuring the lake: --s3-endpoint %s is set but --s3-bucket (%s) is not", c.S3Endpoint, envS3Bucket)
	}
	return &c, nil
}

// describe names the selected lake for logs and messages.
func (l *lakeFlags) describe() string {
	c := l.cfg
	c.LocalDir = l.dataDir.lake()
	return c.Describe()
}

// partSizeValue is the pflag.Value of --s3-part-size: a byte size
// (sink.ParseSize) from 5MiB to 5GiB.
type partSizeValue struct{ p *int64 }

// String renders the size.
func (v partSizeValue) String() string {
	if v.p == nil {
		return ""
	}
	return sink.FormatSize(*v.p)
}

// Set parses a size and checks its range.
func (v partSizeValue) Set(s string) error {
	n, err := sink.ParseSize(s)
	if err != nil {
		return err
	}
	if err := sink.CheckPartSize(n); err != nil {
		return err
	}
	*v.p = n
	return nil
}

// Type names the flag's value type in help output.
func (v partSizeValue) Type() string { return "size" }

// concurrencyValue is the pflag.Value of --s3-concurrency: a whole number
// from 1 to sink.MaxConcurrency (0 is not "the default": it is refused).
type concurrencyValue struct{ p *int }

// String renders the concurrency.
func (v concurrencyValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

// Set parses a whole number and checks its range.
func (v concurrencyValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if err := sink.CheckConcurrency(n); err != nil {
		return err
	}
	*v.p = n
	return nil
}

// Type names the flag's value type in help output.
func (v concurrencyValue) Type() string { return "int" }

// open opens the lake for a writer (worker, dev): a local lake is created.
func (l *lakeFlags) open(ctx context.Context) (sink.Sink, error) {
	c, err := l.config()
	if err != nil {
		return nil, err
	}
	return c.Open(ctx)
}

// openExisting opens the lake for a reader: a local lake must exist, so a
// mistyped --data-dir is an error, not an empty lake.
func (l *lakeFlags) openExisting(ctx context.Context) (sink.Sink, error) {
	c, err := l.config()
	if err != nil {
		return nil, err
	}
	s, err := c.OpenExisting(ctx)
	if errors.Is(err, sink.ErrNoLake) {
		return nil, fmt.Errorf("%w (check --data-dir / %s)", err, envDataDir)
	}
	return s, err
}
