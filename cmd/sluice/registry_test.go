package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/registry"
)

func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	registryDir = "" // the flag's variable is package state
	return out.String(), errOut.String(), err
}

func TestRegistryValidateCommand(t *testing.T) {
	def, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok := fmt.Sprintf("registry OK: %d provider(s), %d dataset(s)", len(def.Providers), len(def.Datasets))
	out, _, err := runCmd(t, "registry", "validate")
	if err != nil || !strings.Contains(out, ok) || !strings.Contains(out, "kis/key") {
		t.Fatalf("validate the default registry: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, "--registry", "../../registry/testdata/adr0007", "registry", "validate")
	if err != nil || !strings.Contains(out, "datago/service/unassigned") {
		t.Fatalf("validate the ADR example: %v\n%s", err, out)
	}
}

func TestRegistryValidateFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/providers.yaml", "- id: p\n  rate_limits:\n    - scope: key\n      requests_per_day: 10\n")
	writeFile(t, dir+"/datasets/d.yaml", "id: d\nprovider: p\nrequest: {path: /x}\nprobe: {interval_minutes: 1}\n")
	out, errOut, err := runCmd(t, "--registry", dir, "registry", "validate")
	ee, ok := err.(exitError)
	if !ok || ee.code != 1 {
		t.Fatalf("err = %v, want exit status 1", err)
	}
	if !strings.Contains(out, "p/key") || !strings.Contains(errOut, "daily demand 2,880 (probes 1,440 ×2 = 2,880 + ingest 0) exceeds requests_per_day 10") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

func TestRegistryList(t *testing.T) {
	out, _, err := runCmd(t, "registry", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 194 || !strings.HasPrefix(lines[0], "DATASET") {
		t.Fatalf("%d lines; first %q", len(lines), lines[0])
	}
	if !strings.Contains(out, "fred-dgs10") || !strings.Contains(out, "datago/service/15094807") {
		t.Errorf("list lacks expected rows:\n%s", out)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
