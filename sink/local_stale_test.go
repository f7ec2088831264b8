package sink

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLocalRemovesStaleTemporaryFiles: a writer killed
// mid-write leaves its temporary file; the next writer to open the lake
// removes it, but never a live writer's file, a fresh one, or another
// dotfile.
func TestLocalRemovesStaleTemporaryFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "lake")
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := key(t, "kis", "kis_stale", 2)
	dir := filepath.Dir(l.path(k))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * StaleTempAge)
	file := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("half a zstd frame"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := file(tempPrefix+"killed", old)
	fresh := file(tempPrefix+"fresh", time.Now())
	other := file(".DS_Store", old)

	// A live writer, its file as old as the dead one's.
	w, err := l.Create(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.WritePage(strings.NewReader(`{"page":1}`)); err != nil {
		t.Fatal(err)
	}
	live := w.(*localWriter).tmp
	if err := os.Chtimes(live, old, old); err != nil {
		t.Fatal(err)
	}

	// Another writer starts: NewLocal cleans up.
	if _, err := NewLocal(root); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(dead) {
		t.Errorf("the dead writer's temporary file %s survived a writer's start", dead)
	}
	for _, p := range []string{fresh, other, live} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	// The live writer is unharmed.
	if res, err := w.Commit(jsonMeta()); err != nil || res.Skipped {
		t.Fatalf("the live writer's commit: %+v, %v", res, err)
	}
	if got, _ := read(t, l, k); string(got) != `{"page":1}` {
		t.Errorf("the live writer's object holds %q", got)
	}
	// The fresh file ages into staleness: then it goes too.
	removed, err := l.RemoveStale(time.Now().Add(2 * StaleTempAge))
	if err != nil || !slices.Contains(removed, fresh) || exists(fresh) || !exists(other) {
		t.Errorf("RemoveStale later: removed %v, %v; fresh exists %v, other exists %v", removed, err, exists(fresh), exists(other))
	}
}

// TestLocalSyncsNewDirectories: the directories a put
// creates are fsynced into their parents, so a crash cannot lose the
// entry of a directory that holds a synced object.
func TestLocalSyncsNewDirectories(t *testing.T) {
	l := newTestLocal(t)
	var mu sync.Mutex
	var synced []string
	orig := syncDir
	syncDir = func(dir string) error {
		mu.Lock()
		synced = append(synced, dir)
		mu.Unlock()
		return orig(dir)
	}
	t.Cleanup(func() { syncDir = orig })
	k := key(t, "upbit", "upbit_new", 3)
	put(t, l, k, []byte("[]"), jsonMeta())
	p := filepath.Join(l.Root(), "provider=upbit")
	want := []string{l.Root(), p, filepath.Join(p, "job=upbit_new"), filepath.Join(p, "job=upbit_new", "year=2025")}
	for _, d := range want {
		if !slices.Contains(synced, d) {
			t.Errorf("directory %s was not fsynced (synced: %v)", d, synced)
		}
	}
	// A second object in the same directories syncs only its own.
	synced = nil
	put(t, l, key(t, "upbit", "upbit_new", 4), []byte("[]"), jsonMeta())
	if !slices.Equal(synced, []string{want[3]}) {
		t.Errorf("second put synced %v, want only %s", synced, want[3])
	}
}

// TestLocalSweepsStaleTemporaryFiles: a writer killed mid-write after
// the others opened the lake leaves a temporary file no start will see;
// the running writers' sweep removes it once it is stale, and never a
// live writer's file, however old, nor a fresh one.
func TestLocalSweepsStaleTemporaryFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "lake")
	l, err := NewLocal(root) // the surviving writer, started before the kill
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := key(t, "datago", "datago_sweep", 2)
	dir := filepath.Dir(l.path(k))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dead := filepath.Join(dir, tempPrefix+"killed")
	if err := os.WriteFile(dead, []byte("half a zstd frame"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dead, start, start); err != nil {
		t.Fatal(err)
	}
	w, err := l.Create(ctx, k) // a live writer of the same directory
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	live := w.(*localWriter).tmp
	if err := os.Chtimes(live, start, start); err != nil {
		t.Fatal(err)
	}

	ticks := make(chan time.Time)
	type sweep struct {
		removed []string
		err     error
	}
	sweeps := make(chan sweep)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.SweepStale(ctx, ticks, func(removed []string, err error) { sweeps <- sweep{removed, err} })
	}()
	tick := func(now time.Time) sweep {
		ticks <- now
		return <-sweeps
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// Not stale yet: both stay.
	if s := tick(start.Add(StaleTempAge / 2)); s.err != nil || len(s.removed) != 0 || !exists(dead) || !exists(live) {
		t.Fatalf("a sweep before StaleTempAge removed %v (%v); dead exists %v, live exists %v", s.removed, s.err, exists(dead), exists(live))
	}
	// Stale: the dead writer's goes, the live writer's (locked) stays.
	s := tick(start.Add(2 * StaleTempAge))
	if s.err != nil || !slices.Equal(s.removed, []string{dead}) || exists(dead) || !exists(live) {
		t.Fatalf("the sweep after StaleTempAge removed %v (%v), want only %s; dead exists %v, live exists %v", s.removed, s.err, dead, exists(dead), exists(live))
	}
	if _, err := w.WritePage(strings.NewReader(`{"page":1}`)); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Commit(jsonMeta()); err != nil || res.Skipped {
		t.Fatalf("the live writer's commit after the sweep: %+v, %v", res, err)
	}
	// The sweep ends with its context.
	cancel()
	<-done
}
