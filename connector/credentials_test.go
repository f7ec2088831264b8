package connector

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestEnvCredentials(t *testing.T) {
	t.Setenv("SLUICE_TEST_KEY", "direct-value")
	if v, err := EnvCredentials("SLUICE_TEST_KEY"); err != nil || v != "direct-value" {
		t.Errorf("EnvCredentials = %q, %v", v, err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_OTHER_FILE", file)
	if v, err := EnvCredentials("SLUICE_TEST_OTHER"); err != nil || v != "from-file" {
		t.Errorf("EnvCredentials(_FILE) = %q, %v", v, err)
	}
	_, err := EnvCredentials("SLUICE_TEST_MISSING")
	if !errors.Is(err, ErrNoCredential) {
		t.Errorf("missing credential: %v", err)
	}
	t.Setenv("SLUICE_TEST_GONE_FILE", filepath.Join(t.TempDir(), "nope"))
	if _, err := EnvCredentials("SLUICE_TEST_GONE"); err == nil {
		t.Error("a missing _FILE file must fail")
	}
	m := MapCredentials(map[string]string{"A": "1"})
	if v, err := m("A"); err != nil || v != "1" {
		t.Errorf("MapCredentials(A) = %q, %v", v, err)
	}
	if _, err := m("B"); !errors.Is(err, ErrNoCredential) {
		t.Errorf("MapCredentials(B): %v", err)
	}
}
