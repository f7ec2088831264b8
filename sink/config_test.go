package sink

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/versitygw"
)

func TestConfigDescribe(t *testing.T) {
	c := Config{LocalDir: filepath.Join("var", "lake")}
	if c.Describe() != "local lake var/lake" {
		t.Errorf("Describe = %q", c.Describe())
	}
	c = Config{S3Bucket: "lake", S3Endpoint: "http://127.0.0.1:9000", LocalDir: "ignored"}
	if c.Describe() != "s3://lake at http://127.0.0.1:9000" {
		t.Errorf("Describe = %q", c.Describe())
	}
}

// TestConfigValidate: zero tuning means the defaults; anything else is
// checked, bucket or not; an endpoint needs a bucket, a local lake its
// directory.
func TestConfigValidate(t *testing.T) {
	if err := (&Config{LocalDir: t.TempDir()}).Validate(); err != nil {
		t.Errorf("zero tuning: %v", err)
	}
	for _, tc := range []struct {
		c    Config
		want []string
	}{
		{Config{LocalDir: "d", S3PartSize: 3}, []string{"S3 part size", "3B", "5MiB to 5GiB"}},
		{Config{LocalDir: "d", S3PartSize: 1 << 20, S3Bucket: "b"}, []string{"S3 part size", "1MiB"}},
		{Config{LocalDir: "d", S3Concurrency: -1}, []string{"S3 concurrency", "-1", "1 to 64"}},
		{Config{LocalDir: "d", S3Concurrency: 65}, []string{"S3 concurrency", "65", "1 to 64"}},
		{Config{LocalDir: "d", S3Endpoint: "http://x"}, []string{"endpoint http://x", "without an S3 bucket"}},
		{Config{}, []string{"neither an S3 bucket nor a local lake directory"}},
	} {
		err := tc.c.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) accepted", tc.c)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(%+v) = %q, does not mention %q", tc.c, err, w)
			}
		}
		if _, err := tc.c.Open(context.Background()); err == nil {
			t.Errorf("Open(%+v) accepted", tc.c)
		}
	}
	c := Config{S3Bucket: "b", S3Endpoint: "127.0.0.1:9000"}
	if _, err := c.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("Open with a bad endpoint: %v", err)
	}
}

func TestConfigOpensLocalLake(t *testing.T) {
	dir := t.TempDir()
	c := Config{LocalDir: filepath.Join(dir, "lake")}
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

// TestConfigOpensS3WithAWSEnvironment: the lake's fields name the bucket,
// the standard AWS variables give the credentials.
func TestConfigOpensS3WithAWSEnvironment(t *testing.T) {
	srv := versitygw.Start(t)
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	c := Config{S3Bucket: srv.Bucket, S3Endpoint: srv.Endpoint, S3Region: srv.Region}
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
// directory fails naming the path and creates nothing; a writer (Open)
// creates the lake, after which readers open it.
func TestConfigOpenExistingNeverCreates(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "typo")
	c := Config{LocalDir: filepath.Join(dataDir, "lake")}
	_, err := c.OpenExisting(context.Background())
	want := "no lake at " + filepath.Join(dataDir, "lake")
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
