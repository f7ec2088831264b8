package tokenstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func TestSaveLoadRoundTripAndModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	f, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := f.Load(ctx, "kis-abc"); ok || err != nil {
		t.Fatalf("Load on empty store = %v, %v", ok, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Load created the directory: %v", err)
	}
	now := time.Date(2026, 3, 12, 2, 18, 47, 0, time.UTC)
	tok := connector.Token{AccessToken: "eyJ0eXAi.secret.token", ExpiresAt: now.Add(24 * time.Hour), IssuedAt: now, RequestedAt: now}
	if err := f.Save(ctx, "kis-abc", tok); err != nil {
		t.Fatal(err)
	}
	got, ok, err := f.Load(ctx, "kis-abc")
	if err != nil || !ok || got.AccessToken != tok.AccessToken || !got.ExpiresAt.Equal(tok.ExpiresAt) ||
		!got.IssuedAt.Equal(tok.IssuedAt) || !got.RequestedAt.Equal(tok.RequestedAt) {
		t.Fatalf("Load = %+v, %v, %v", got, ok, err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, %v", st.Mode().Perm(), err)
	}
	st, err = os.Stat(filepath.Join(dir, "kis-abc.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, %v", st.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "kis-abc.json"))
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "access_token,expires_at,issued_at,requested_at" {
		t.Errorf("token file holds %v", keys)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestKeysCannotEscapeTheDirectory(t *testing.T) {
	f, _ := NewFile(t.TempDir())
	for _, k := range []string{"", "../x", "a/b", "a.b", strings.Repeat("k", 129)} {
		if err := f.Save(context.Background(), k, connector.Token{}); err == nil {
			t.Errorf("Save(%q) succeeded", k)
		}
		if _, _, err := f.Load(context.Background(), k); err == nil {
			t.Errorf("Load(%q) succeeded", k)
		}
	}
	if _, err := NewFile(""); err == nil {
		t.Error("NewFile(\"\") succeeded")
	}
}

func TestCorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	f, _ := NewFile(dir)
	os.WriteFile(filepath.Join(dir, "k.json"), []byte("{not json"), 0o600)
	if _, _, err := f.Load(context.Background(), "k"); err == nil || !strings.Contains(err.Error(), "k.json") {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestWithLockExcludesOtherHolders(t *testing.T) {
	dir := t.TempDir()
	var inside, maxInside, runs atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, _ := NewFile(dir) // a File each: flock must exclude them
			err := f.WithLock(context.Background(), "k", func(context.Context) error {
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(2 * time.Millisecond) // widen the window a violation would need
				runs.Add(1)
				inside.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if runs.Load() != 8 || maxInside.Load() != 1 {
		t.Errorf("runs %d, most holders at once %d", runs.Load(), maxInside.Load())
	}
}

func TestWithLockGivesUpWithTheContext(t *testing.T) {
	dir := t.TempDir()
	f, _ := NewFile(dir)
	held := make(chan struct{})
	done := make(chan struct{})
	go f.WithLock(context.Background(), "k", func(context.Context) error {
		close(held)
		<-done
		return nil
	})
	<-held
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	ran := false
	err := f.WithLock(ctx, "k", func(context.Context) error { ran = true; return nil })
	if err == nil || ran {
		t.Errorf("WithLock while held = %v (ran %v)", err, ran)
	}
}

func TestWideDirectoryIsRestricted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	f, _ := NewFile(dir)
	if err := f.Save(context.Background(), "k", connector.Token{AccessToken: "x"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", st.Mode().Perm())
	}
}

// TestSaveWritesAtomically: Save goes through atomicfile.Write (temporary
// file, fsync, rename, fsync of the directory), with mode 0600, and leaves
// no temporary file.
func TestSaveWritesAtomically(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	orig := writeFile
	writeFile = func(path string, data []byte, perm os.FileMode) error {
		calls = append(calls, fmt.Sprintf("%s %o", filepath.Base(path), perm))
		return orig(path, data, perm)
	}
	t.Cleanup(func() { writeFile = orig })
	if err := f.Save(context.Background(), "kis-x", connector.Token{AccessToken: "tok", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ";") != "kis-x.json 600" {
		t.Errorf("atomic writes: %q", calls)
	}
	st, err := os.Stat(filepath.Join(dir, "kis-x.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", st, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
