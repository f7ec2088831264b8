package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/versitygw"
	"github.com/sluicehq/sluice/sink"
)

// lakeFixture is a local lake with three objects.
type lakeFixture struct {
	dataDir string
	lake    *sink.Local
	keys    []string
	bodies  [][]byte
}

func newLakeFixture(t *testing.T) *lakeFixture {
	t.Helper()
	for _, env := range []string{envS3Bucket, envS3Endpoint, envS3Region, envS3PartSize, envS3Concurrency, envDataDir} {
		t.Setenv(env, "")
	}
	f := &lakeFixture{dataDir: t.TempDir()}
	var err error
	f.lake, err = sink.NewLocal(filepath.Join(f.dataDir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	for i, spec := range []sink.KeySpec{
		{Provider: "kis", Dataset: "kis_kospi_daily", From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "kis", Dataset: "kis_kospi_daily", From: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC), Ext: "json"},
		{Provider: "fred", Dataset: "fred_dgs10", From: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), Ext: "json"},
	} {
		k, err := sink.Key(spec)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(strings.Repeat(`{"stck_bsop_date":"2025010`+string(rune('2'+i))+`","bstp_nmix_prpr":"2500.00"},`, 20+i))
		_, err = f.lake.Put(context.Background(), k, bytes.NewReader(body), sink.Meta{
			ContentType: "application/json", SourceURL: "https://h/p?appkey=SECRETKEY",
			FetchedAt: time.Date(2025, 1, 4, 1, 2, 3, 0, time.UTC),
		})
		if err != nil {
			t.Fatal(err)
		}
		f.keys = append(f.keys, k)
		f.bodies = append(f.bodies, body)
	}
	return f
}

func (f *lakeFixture) path(key string) string {
	return filepath.Join(f.dataDir, "lake", filepath.FromSlash(key))
}

// runLake runs `sluice lake ARGS… --data-dir <fixture>` and returns its
// output and error.
func (f *lakeFixture) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newLakeCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--data-dir", f.dataDir))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestLakeLs(t *testing.T) {
	f := newLakeFixture(t)
	out, err := f.run(t, "ls")
	if err != nil {
		t.Fatalf("lake ls: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("lake ls printed %d lines, want a header, 3 objects and a summary:\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], "KEY") || !strings.Contains(lines[0], "SHA256") {
		t.Errorf("header = %q", lines[0])
	}
	// S3 key order: fred before kis.
	order := []int{2, 0, 1}
	for i, idx := range order {
		sum := sha256.Sum256(f.bodies[idx])
		fields := strings.Fields(lines[i+1])
		if len(fields) != 7 || fields[0] != f.keys[idx] || fields[1] != strconv.Itoa(len(f.bodies[idx])) || fields[3] != "1" ||
			fields[4] != hex.EncodeToString(sum[:])[:12] || fields[5] != "2025-01-04T01:02:03Z" || fields[6] != "-" {
			t.Errorf("line %d = %q, want %s with size %d and sha %s", i+1, lines[i+1], f.keys[idx], len(f.bodies[idx]), hex.EncodeToString(sum[:])[:12])
		}
	}
	if !strings.HasPrefix(lines[4], "3 objects, ") || !strings.Contains(lines[4], "×)") {
		t.Errorf("summary = %q", lines[4])
	}
	if strings.Contains(out, "SECRETKEY") {
		t.Error("lake ls printed a secret")
	}

	out, err = f.run(t, "ls", "provider=kis/")
	if err != nil || strings.Count(out, "provider=kis/") != 2 || strings.Contains(out, "fred") {
		t.Errorf("lake ls provider=kis/: %v\n%s", err, out)
	}
	if _, err := f.run(t, "ls", "../etc"); !errors.Is(err, sink.ErrInvalidKey) {
		t.Errorf("lake ls ../etc: %v, want ErrInvalidKey", err)
	}
}

func TestLakeCat(t *testing.T) {
	f := newLakeFixture(t)
	out, err := f.run(t, "cat", f.keys[1])
	if err != nil {
		t.Fatalf("lake cat: %v", err)
	}
	if out != string(f.bodies[1]) {
		t.Errorf("lake cat printed %d bytes, want the %d raw bytes", len(out), len(f.bodies[1]))
	}
	if _, err := f.run(t, "cat", "provider=kis/job=none/year=2025/none_20250101.json.zst"); !errors.Is(err, sink.ErrNotFound) {
		t.Errorf("lake cat of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := f.run(t, "cat"); err == nil {
		t.Error("lake cat without a key succeeded")
	}
}

func TestLakeVerify(t *testing.T) {
	f := newLakeFixture(t)
	out, err := f.run(t, "verify")
	if err != nil {
		t.Fatalf("lake verify of a sound lake: %v\n%s", err, out)
	}
	if strings.TrimSpace(out) != "verified 3 objects, 0 mismatches" {
		t.Errorf("lake verify printed %q", out)
	}

	// Give the first object the second one's compressed bytes behind its
	// own metadata: it decompresses fine but to the wrong bytes.
	obj0, err := f.lake.Stat(context.Background(), f.keys[0])
	if err != nil {
		t.Fatal(err)
	}
	obj1, err := f.lake.Stat(context.Background(), f.keys[1])
	if err != nil {
		t.Fatal(err)
	}
	file0, _ := os.ReadFile(f.path(f.keys[0]))
	file1, _ := os.ReadFile(f.path(f.keys[1]))
	swapped := append(append([]byte(nil), file1[:obj1.CompressedSize]...), file0[obj0.CompressedSize:]...)
	if err := os.WriteFile(f.path(f.keys[0]), swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	// And break the zstd stream of the third.
	file2, _ := os.ReadFile(f.path(f.keys[2]))
	file2[6] ^= 0xff
	if err := os.WriteFile(f.path(f.keys[2]), file2, 0o644); err != nil {
		t.Fatal(err)
	}

	out, err = f.run(t, "verify")
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("lake verify of a damaged lake: %v, want exit status 1\n%s", err, out)
	}
	// (Its stream no longer has the recorded compressed size: that is
	// found before decompressing.)
	if !strings.Contains(out, "FAIL "+f.keys[0]+": ") {
		t.Errorf("output does not report the swapped object:\n%s", out)
	}
	if !strings.Contains(out, "FAIL "+f.keys[2]+": ") {
		t.Errorf("output does not report the broken object:\n%s", out)
	}
	if strings.Contains(out, "FAIL "+f.keys[1]) {
		t.Errorf("output reports the sound object:\n%s", out)
	}
	if !strings.HasSuffix(out, "verified 3 objects, 2 mismatches\n") {
		t.Errorf("summary missing:\n%s", out)
	}

	out, err = f.run(t, "verify", "provider=kis/job=kis_kospi_daily/year=2025/kis_kospi_daily_20250103")
	if err != nil || strings.TrimSpace(out) != "verified 1 objects, 0 mismatches" {
		t.Errorf("lake verify with a prefix: %v\n%s", err, out)
	}
	if _, err := f.run(t, "cat", f.keys[0]); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("lake cat of the swapped object: %v, want a sha256 mismatch", err)
	}
}

// TestLakeCommandsNeedAnExistingLake: ls, cat and verify on a mistyped
// --data-dir fail naming the path and create nothing (verify used to pass
// with "verified 0 objects").
func TestLakeCommandsNeedAnExistingLake(t *testing.T) {
	f := newLakeFixture(t)
	typo := filepath.Join(t.TempDir(), "vra")
	want := "no lake at " + filepath.Join(typo, "lake") + " (check --data-dir / SLUICE_DATA_DIR)"
	for _, args := range [][]string{{"ls"}, {"verify"}, {"cat", f.keys[0]}} {
		cmd := newLakeCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--data-dir", typo))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(context.Background())
		if err == nil || err.Error() != want || !errors.Is(err, sink.ErrNoLake) {
			t.Errorf("lake %v on a missing --data-dir: %v, want %q\n%s", args, err, want, out.String())
		}
		if strings.Contains(out.String(), "verified") {
			t.Errorf("lake %v printed a result:\n%s", args, out.String())
		}
		if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lake %v created %s (stat: %v)", args, typo, err)
		}
	}
	// SLUICE_DATA_DIR is checked the same way.
	t.Setenv(envDataDir, typo)
	cmd := newLakeCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"verify"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(context.Background()); err == nil || err.Error() != want {
		t.Errorf("lake verify with %s=%s: %v, want %q", envDataDir, typo, err, want)
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lake verify created %s (stat: %v)", typo, err)
	}
}

func TestLakeUsesS3Flags(t *testing.T) {
	f := newLakeFixture(t)
	_, err := f.run(t, "ls", "--s3-endpoint", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "--s3-bucket") {
		t.Errorf("lake ls with an endpoint and no bucket: %v, want a configuration error", err)
	}
}

// TestLakeVerifyS3 runs the lake commands against a real S3 server,
// configured as an operator would: flags for the lake, the standard AWS
// variables for credentials.
func TestLakeVerifyS3(t *testing.T) {
	srv := versitygw.Start(t)
	f := newLakeFixture(t)
	home := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	s3, err := sink.NewS3(context.Background(), sink.S3Config{
		Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region, Credentials: srv.Credentials(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range f.keys {
		if _, err := s3.Put(context.Background(), k, bytes.NewReader(f.bodies[i]), sink.Meta{ContentType: "application/json"}); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"--s3-bucket", srv.Bucket, "--s3-endpoint", srv.Endpoint, "--s3-region", srv.Region}
	out, err := f.run(t, append([]string{"verify"}, flags...)...)
	if err != nil || strings.TrimSpace(out) != "verified 3 objects, 0 mismatches" {
		t.Errorf("lake verify on S3: %v\n%s", err, out)
	}
	out, err = f.run(t, append([]string{"cat", f.keys[2]}, flags...)...)
	if err != nil || out != string(f.bodies[2]) {
		t.Errorf("lake cat on S3: %v, %d bytes, want %d", err, len(out), len(f.bodies[2]))
	}
	out, err = f.run(t, append([]string{"ls", "provider=fred/"}, flags...)...)
	if err != nil || !strings.Contains(out, f.keys[2]) || !strings.Contains(out, "1 objects") {
		t.Errorf("lake ls on S3: %v\n%s", err, out)
	}
}
