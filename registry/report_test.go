package registry

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestReportGolden(t *testing.T) {
	reg, err := LoadDir(filepath.Join("testdata", "small"), testOpts())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, reg); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "small.report.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden (run go test -run TestReportGolden -update): %v", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("report differs from %s:\n--- got\n%s\n--- want\n%s", golden, buf.String(), want)
	}
}
