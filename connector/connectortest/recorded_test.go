package connectortest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connector/connectortest"
	_ "github.com/sluicehq/sluice/connector/upbit"
)

// TestRunRecorded runs the runner over its own two cases through the real
// UPBIT connector.
func TestRunRecorded(t *testing.T) {
	connectortest.RunRecorded(t, connectortest.Recorded{Provider: "upbit", Dir: "testdata/recorded"})
}

// TestLoadRecordedNamesTheField: a case without its provenance, or with an
// unknown class, is refused naming the file, the case and the field.
func TestLoadRecordedNamesTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"- name: a\n  meaning: m\n  status: 200\n  expect: {class: ok}\n", "field source is empty"},
		{"- name: a\n  source: s\n  status: 200\n  expect: {class: ok}\n", "field meaning is empty"},
		{"- name: a\n  source: s\n  meaning: m\n  status: 200\n  expect: {class: broken}\n", `unknown class "broken"`},
		{"- name: a\n  source: s\n  meaning: m\n  status: 200\n  expect: {class: ok}\n- name: a\n  source: s\n  meaning: m\n  status: 200\n  expect: {class: ok}\n", `field name "a" is used twice`},
		{"- name: a\n  source: s\n  meaning: m\n  status: 200\n  colour: red\n  expect: {class: ok}\n", "field colour not found"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cases.yaml"), []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := connectortest.LoadRecorded(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cases.yaml") {
			t.Errorf("LoadRecorded(%q) = %v, want an error naming cases.yaml and %q", tc.yaml, err, tc.want)
		}
	}
}
