package sink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func newTestLocal(t *testing.T) *Local {
	t.Helper()
	l, err := NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLocalFileIsPlainZstd: a lake file decodes with any zstd decoder.
func TestLocalFileIsPlainZstd(t *testing.T) {
	l := newTestLocal(t)
	k := key(t, "kis", "kis_kospi_daily", 2)
	body := kisDailyIndexChart(50, 4)
	put(t, l, k, body, jsonMeta())
	f, err := os.Open(filepath.Join(l.Root(), filepath.FromSlash(k)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := io.ReadAll(dec)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("plain zstd decode: %d bytes, %v; want the %d raw bytes", len(got), err, len(body))
	}
	fi, _ := f.Stat()
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("object mode %v, want 0644", fi.Mode().Perm())
	}
}

func TestLocalForeignAndTemporaryFiles(t *testing.T) {
	l := newTestLocal(t)
	dir := filepath.Join(l.Root(), "provider=x", "job=y", "year=2025")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	plain := enc.EncodeAll([]byte("hello"), nil)
	if err := os.WriteFile(filepath.Join(dir, "y_20250101.json.zst"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	// A crashed put's temporary file and a stray dotfile are not objects.
	for _, name := range []string{".sluice-tmp-123", ".DS_Store"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	objs := listKeys(t, l, "")
	if len(objs) != 1 || objs[0].Key != "provider=x/job=y/year=2025/y_20250101.json.zst" {
		t.Fatalf("List = %+v, want the one foreign object", objs)
	}
	if objs[0].HasMeta() || objs[0].CompressedSize != int64(len(plain)) {
		t.Errorf("foreign object = %+v, want no metadata and size %d", objs[0], len(plain))
	}
	got, _ := read(t, l, objs[0].Key)
	if string(got) != "hello" {
		t.Errorf("Open = %q, want hello", got)
	}
}

func TestLocalKeyClashesWithDirectory(t *testing.T) {
	l := newTestLocal(t)
	put(t, l, "a/b", []byte("x"), jsonMeta())
	if _, err := l.Put(context.Background(), "a/b/c", strings.NewReader("y"), jsonMeta()); err == nil {
		t.Error("Put under an existing object's key succeeded")
	}
	if _, err := l.Put(context.Background(), "a", strings.NewReader("y"), jsonMeta()); err == nil {
		t.Error("Put onto a directory succeeded")
	}
	if _, err := l.Stat(context.Background(), "a/b/c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat below an object: %v, want ErrNotFound", err)
	}
	if got, _ := read(t, l, "a/b"); string(got) != "x" {
		t.Errorf("a/b = %q after failed puts, want x", got)
	}
	var tmp []string
	_ = filepath.Walk(l.Root(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), ".") {
			tmp = append(tmp, p)
		}
		return nil
	})
	if len(tmp) > 0 {
		t.Errorf("failed puts left %v", tmp)
	}
}

// TestLocalConcurrentPuts: racing writers of one key leave exactly one
// complete object (one of theirs) and no temporary files.
func TestLocalConcurrentPuts(t *testing.T) {
	l := newTestLocal(t)
	k := key(t, "ecos", "ecos_rates", 5)
	bodies := make([][]byte, 6)
	var wg sync.WaitGroup
	for i := range bodies {
		bodies[i] = ecosStatisticSearch(30+i, uint64(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Put(context.Background(), k, bytes.NewReader(bodies[i]), jsonMeta()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, obj := read(t, l, k)
	found := false
	for _, b := range bodies {
		if bytes.Equal(got, b) && obj.RawSHA256 == sum(b) {
			found = true
		}
	}
	if !found {
		t.Errorf("after concurrent puts the object (%d bytes, sha %s) is none of the bodies", len(got), obj.RawSHA256)
	}
	entries, _ := os.ReadDir(filepath.Dir(filepath.Join(l.Root(), filepath.FromSlash(k))))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the one object", len(entries))
	}
}
