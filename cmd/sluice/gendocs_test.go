package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestDocsCLIIsCurrent regenerates the command reference into a temporary
// directory and fails, naming each stale page, when docs/cli differs.
func TestDocsCLIIsCurrent(t *testing.T) {
	for _, n := range flagEnvNames() {
		t.Setenv(n, "") // restored after the test
	}
	clearFlagEnv()
	tmp := t.TempDir()
	if err := genDocs(tmp); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join("..", "..", "docs", "cli")
	want := readPages(t, tmp)
	got := readPages(t, committed)
	var stale []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			stale = append(stale, "docs/cli/"+name+" (missing)")
		case !bytes.Equal(g, w):
			stale = append(stale, "docs/cli/"+name+" (differs)")
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			stale = append(stale, "docs/cli/"+name+" (no such command)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("the command reference is stale; run `make docs` and commit docs/cli:\n  %s",
			strings.Join(stale, "\n  "))
	}
	if len(want) < 10 {
		t.Errorf("only %d pages generated: the check checked nothing", len(want))
	}
	for name, w := range want {
		for _, bad := range []string{"Auto generated", tmp, os.TempDir()} {
			if bytes.Contains(w, []byte(bad)) {
				t.Errorf("docs/cli/%s contains the machine-specific %q", name, bad)
			}
		}
	}
}

func readPages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = b
	}
	return pages
}
