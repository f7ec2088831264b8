package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	// An older file of a wider mode is replaced, mode and all.
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(b) != "new\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("after Write: %q %v, mode %v", b, err, st.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left beside it: %v", entries)
	}
	// A failed write leaves no temporary file.
	if err := Write(filepath.Join(dir, "no-such-dir", "x"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "taken"), []byte("x"), 0o600); err == nil {
		t.Error("a write over a directory succeeded")
	}
	entries, _ = os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left after failures: %v", entries)
	}
}
