package sink

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/internal/versitygw"
)

func clearLakeEnv(t *testing.T) {
	for _, name := range []string{EnvS3Bucket, EnvS3Endpoint, EnvS3Region, EnvS3PartSize, EnvS3Concurrency, EnvDataDir} {
		t.Setenv(name, "")
	}
}

func bind(t *testing.T, args ...string) (*Config, *pflag.FlagSet) {
	t.Helper()
	var c Config
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return &c, fs
}

func TestConfigDefaults(t *testing.T) {
	clearLakeEnv(t) // empty variables count as unset: defaults apply
	c, _ := bind(t)
	if c.S3Bucket != "" || c.S3PartSize != DefaultPartSize || c.S3Concurrency != DefaultConcurrency || c.DataDir != DefaultDataDir {
		t.Errorf("defaults = %+v", c)
	}
	if got := c.LakeRoot(); got != filepath.Join("var", "lake") {
		t.Errorf("LakeRoot = %q, want var/lake", got)
	}
	if c.Describe() != "local lake var/lake" {
		t.Errorf("Describe = %q", c.Describe())
	}
}

func TestConfigFromEnvironmentAndFlags(t *testing.T) {
	t.Setenv(EnvS3Bucket, "lake-env")
	t.Setenv(EnvS3Endpoint, "http://127.0.0.1:9000")
	t.Setenv(EnvS3Region, "ap-northeast-2")
	t.Setenv(EnvS3PartSize, "16MiB")
	t.Setenv(EnvS3Concurrency, "3")
	t.Setenv(EnvDataDir, "/srv/sluice")
	c, _ := bind(t)
	want := Config{S3Bucket: "lake-env", S3Endpoint: "http://127.0.0.1:9000", S3Region: "ap-northeast-2",
		S3PartSize: 16 << 20, S3Concurrency: 3, DataDir: "/srv/sluice"}
	if *c != want {
		t.Errorf("from env: %+v, want %+v", *c, want)
	}
	c, _ = bind(t, "--s3-bucket", "lake-flag", "--s3-part-size", "32MB", "--s3-concurrency", "8", "--data-dir", "d")
	if c.S3Bucket != "lake-flag" || c.S3PartSize != 32e6 || c.S3Concurrency != 8 || c.DataDir != "d" || c.S3Region != "ap-northeast-2" {
		t.Errorf("flags over env: %+v", *c)
	}
	if c.Describe() != "s3://lake-flag at http://127.0.0.1:9000" {
		t.Errorf("Describe = %q", c.Describe())
	}
}

func TestConfigHelpNamesEnvironment(t *testing.T) {
	clearLakeEnv(t)
	_, fs := bind(t)
	for flag, env := range map[string]string{"s3-bucket": EnvS3Bucket, "s3-endpoint": EnvS3Endpoint, "s3-region": EnvS3Region,
		"s3-part-size": EnvS3PartSize, "s3-concurrency": EnvS3Concurrency, "data-dir": EnvDataDir} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Errorf("--%s is not registered", flag)
			continue
		}
		if !strings.Contains(f.Usage, env) {
			t.Errorf("--%s help %q does not name %s", flag, f.Usage, env)
		}
		if got := f.Annotations[EnvAnnotation]; len(got) != 1 || got[0] != env {
			t.Errorf("--%s annotation %v, want [%s]", flag, got, env)
		}
	}
	if got := fs.Lookup("s3-part-size").DefValue; got != "8MiB" {
		t.Errorf("--s3-part-size default shows %q, want 8MiB", got)
	}
}

func TestConfigRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		"bad env size":        {env: map[string]string{EnvS3PartSize: "lots"}, want: []string{EnvS3PartSize, `"lots"`}},
		"bad env concurrency": {env: map[string]string{EnvS3Concurrency: "four"}, want: []string{EnvS3Concurrency, `"four"`}},
		"endpoint alone":      {args: []string{"--s3-endpoint", "http://x"}, want: []string{"--s3-bucket"}},
		"small part":          {args: []string{"--s3-bucket", "b", "--s3-part-size", "1MiB"}, want: []string{"--s3-part-size", "1MiB", "5MiB to 5GiB"}},
		"huge concurrency":    {args: []string{"--s3-bucket", "b", "--s3-concurrency", "1000"}, want: []string{"--s3-concurrency", "1000", "1 to 64"}},
		"bad endpoint":        {args: []string{"--s3-bucket", "b", "--s3-endpoint", "127.0.0.1:9000"}, want: []string{"not an http(s) URL"}},
		// 0 is not "the default" once typed; and S3 tuning is checked
		// without a bucket too.
		"zero concurrency":            {args: []string{"--s3-concurrency", "0"}, want: []string{"--s3-concurrency", `"0"`, "1 to 64"}},
		"negative concurrency":        {args: []string{"--s3-concurrency", "-1"}, want: []string{"--s3-concurrency", `"-1"`, "1 to 64"}},
		"small part without a bucket": {args: []string{"--s3-part-size", "1MiB"}, want: []string{"--s3-part-size", "1MiB", "5MiB to 5GiB"}},
		"zero part size":              {args: []string{"--s3-part-size", "0"}, want: []string{"--s3-part-size", `"0"`, "5MiB to 5GiB"}},
		"env part size without a bucket": {env: map[string]string{EnvS3PartSize: "3"},
			want: []string{EnvS3PartSize, `"3"`, "5MiB to 5GiB"}},
		"env zero concurrency": {env: map[string]string{EnvS3Concurrency: "0"}, want: []string{EnvS3Concurrency, `"0"`, "1 to 64"}},
		"env huge concurrency": {env: map[string]string{EnvS3Concurrency: "65"}, want: []string{EnvS3Concurrency, `"65"`, "1 to 64"}},
	} {
		t.Run(name, func(t *testing.T) {
			clearLakeEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var c Config
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			c.BindFlags(fs)
			err := fs.Parse(tc.args) // a flag out of range fails here
			if err == nil {
				var s Sink
				s, err = c.Open(context.Background())
				if err == nil {
					s.Close()
					t.Fatalf("Open succeeded, want an error mentioning %q", tc.want)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// A Config built in code: zero means the default, anything else is
	// checked, bucket or not.
	if err := (&Config{DataDir: t.TempDir()}).Validate(); err != nil {
		t.Errorf("zero tuning: %v", err)
	}
	for _, c := range []Config{{S3PartSize: 3}, {S3Concurrency: -1}, {S3Concurrency: 65}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", c)
		}
	}
	// A flag fixes a malformed size at once.
	clearLakeEnv(t)
	var c Config
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--s3-part-size", "8 parsecs"}); err == nil || !strings.Contains(err.Error(), "unknown unit") {
		t.Errorf("parsing a bad size flag: %v", err)
	}
}

func TestConfigOpensLocalLake(t *testing.T) {
	clearLakeEnv(t)
	dir := t.TempDir()
	c, _ := bind(t, "--data-dir", dir)
	s, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, ok := s.(*Local)
	if !ok || l.Root() != filepath.Join(dir, "lake") {
		t.Fatalf("Open = %T %v, want the local lake in %s/lake", s, s, dir)
	}
}

// TestConfigOpensS3FromEnvironment configures everything the way an
// operator does: SLUICE_* for the lake, the standard AWS variables for
// credentials.
func TestConfigOpensS3FromEnvironment(t *testing.T) {
	srv := versitygw.Start(t)
	clearLakeEnv(t)
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv(EnvS3Bucket, srv.Bucket)
	t.Setenv(EnvS3Endpoint, srv.Endpoint)
	t.Setenv(EnvS3Region, srv.Region)
	c, _ := bind(t)
	s, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*S3); !ok {
		t.Fatalf("Open = %T, want *S3", s)
	}
	k := key(t, "fred", "fred_dgs10", 2)
	body := fredObservations(10, 1)
	put(t, s, k, body, jsonMeta())
	if got, _ := read(t, s, k); string(got) != string(body) {
		t.Errorf("read back %d bytes, want %d", len(got), len(body))
	}
}

// TestConfigOpenExistingNeverCreates: a reader pointed at a mistyped
// --data-dir fails naming the path and creates nothing; a writer (Open)
// creates the lake, after which readers open it.
func TestConfigOpenExistingNeverCreates(t *testing.T) {
	clearLakeEnv(t)
	dataDir := filepath.Join(t.TempDir(), "typo")
	c, _ := bind(t, "--data-dir", dataDir)
	_, err := c.OpenExisting(context.Background())
	want := "no lake at " + filepath.Join(dataDir, "lake") + " (check --data-dir / " + EnvDataDir + ")"
	if !errors.Is(err, ErrNoLake) || err.Error() != want {
		t.Fatalf("OpenExisting on a missing directory: %v, want %q", err, want)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenExisting created %s (stat: %v)", dataDir, err)
	}
	w, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := c.OpenExisting(context.Background())
	if err != nil {
		t.Fatalf("OpenExisting after a writer created the lake: %v", err)
	}
	defer r.Close()
	if l, ok := r.(*Local); !ok || l.Root() != filepath.Join(dataDir, "lake") {
		t.Errorf("OpenExisting = %T %v", r, r)
	}
}

func TestOpenLocalExistingRejectsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "lake")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocalExisting(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("OpenLocalExisting on a file: %v", err)
	}
	if _, err := OpenLocalExisting(""); err == nil {
		t.Error("OpenLocalExisting(\"\") succeeded")
	}
}
