// Package connectortest helps test provider connectors: a registry with a
// sample dataset for every provider, credentials that look like real ones
// (so redaction is tested against realistic values), a captured slog log
// to grep for secrets, and the conformance suite every connector runs
// against the simulator (Run with a provider's Suite table: error
// classes, fetches whose rows are read with wire.Extract, probes,
// throttling, and the provider's own cases). It does not import the
// simulator: a provider's test file passes simulator/all.Handler, and
// faults, statistics and credentials go through the simulator's control
// API (POST /_sim/faults with --fault specs, GET /_sim/stats,
// GET /_sim/credentials).
package connectortest

import (
	"bytes"
	"embed"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/registry"
)

//go:embed datasets
var datasetsFS embed.FS

// Sample dataset ids, one or more per provider.
const (
	KISDataset     = "kis-kospi-daily"
	ECOSDataset    = "ecos-base-rate"
	ECOSMonthly    = "ecos-cpi-monthly"
	FREDDataset    = "fred-dgs10"
	UPBITDataset   = "upbit-krw-btc-daily"
	DataGoDataset  = "datago-stock-index"
	registryPrefix = "connectortest"
)

// Registry loads the default providers.yaml with the sample datasets.
func Registry(t testing.TB) *registry.Registry {
	t.Helper()
	return RegistryWith(t)
}

// RegistryWith loads the default providers.yaml, edited by replacing each
// old string with its new one (pairs: old1, new1, old2, new2, …), with the
// sample datasets; a test can lower a declared limit this way.
func RegistryWith(t testing.TB, replacements ...string) *registry.Registry {
	t.Helper()
	return load(t, datasetsFS, "datasets", replacements)
}

// DefaultRegistryWith loads the default registry, providers.yaml edited as
// RegistryWith does, with its own datasets: a provider's conformance suite
// can run on the datasets the registry ships (lowering a limit there must
// still pass the budget gate).
func DefaultRegistryWith(t testing.TB, replacements ...string) *registry.Registry {
	t.Helper()
	return load(t, registry.DefaultFS(), "datasets", replacements)
}

// load loads the default providers.yaml, edited, with the datasets of dir
// in fsys.
func load(t testing.TB, fsys fs.FS, dir string, replacements []string) *registry.Registry {
	t.Helper()
	providers, err := fs.ReadFile(registry.DefaultFS(), "providers.yaml")
	if err != nil {
		t.Fatalf("reading default providers.yaml: %v", err)
	}
	if len(replacements)%2 != 0 {
		t.Fatalf("registry edits: %d replacement strings, want pairs", len(replacements))
	}
	for i := 0; i < len(replacements); i += 2 {
		if !bytes.Contains(providers, []byte(replacements[i])) {
			t.Fatalf("registry edits: providers.yaml does not contain %q", replacements[i])
		}
		providers = bytes.Replace(providers, []byte(replacements[i]), []byte(replacements[i+1]), 1)
	}
	m := fstest.MapFS{"providers.yaml": {Data: providers}}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		t.Fatalf("reading datasets: %v", err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			t.Fatalf("reading sample dataset %s: %v", e.Name(), err)
		}
		m["datasets/"+e.Name()] = &fstest.MapFile{Data: data}
	}
	reg, err := registry.Load(m, registryPrefix, registry.Options{Now: func() time.Time {
		return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	}})
	if err != nil {
		t.Fatalf("loading the registry: %v", err)
	}
	return reg
}

// Secrets are realistic credential values by environment variable name
// (the default registry's names). The data.go.kr key holds + / = so that
// encoding it once is tested.
var Secrets = map[string]string{
	"KIS_APP_KEY":        "PSa1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVw",
	"KIS_APP_SECRET":     "s3cr3tKISappSECRET+/xyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij==",
	"ECOS_API_KEY":       "ECOSKEY0123456789ABCD",
	"FRED_API_KEY":       "abcdef0123456789abcdef0123456789",
	"UPBIT_ACCESS_KEY":   "upbitAccessKey0123456789abcdefghijklmn",
	"UPBIT_SECRET_KEY":   "upbitSecretKey0123456789abcdefghijklmn",
	"DATAGO_SERVICE_KEY": "Ab+Cd/Ef==Gh+Ij/Kl0123456789mnopQRSTuvwxyzABCDEFGHIJ+/KLMNOP==",
}

// Credentials serves Secrets.
func Credentials() connector.Credentials { return connector.MapCredentials(Secrets) }

// SecretValues returns every value of Secrets.
func SecretValues() []string {
	out := make([]string, 0, len(Secrets))
	for _, v := range Secrets {
		out = append(out, v)
	}
	return out
}

// Log is a captured slog log, safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLog returns a capture and a debug-level logger writing to it as JSON.
func NewLog() (*Log, *slog.Logger) {
	l := &Log{}
	return l, l.Logger()
}

// Logger returns a debug-level logger writing to the capture as JSON.
func (l *Log) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Write appends to the capture.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns the captured log.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// AssertNoSecrets fails the test when text holds any of the secrets, raw
// or in any of its usual encodings.
func AssertNoSecrets(t testing.TB, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, form := range Encodings(s) {
			if strings.Contains(text, form) {
				t.Errorf("%s leaks a secret (as %q):\n%s", what, form, text)
			}
		}
	}
}

// Encodings returns a secret as it may appear in text: raw, query- and
// path-escaped (upper- and lower-case escapes, and escaped twice), with
// '+' and spaces swapped, JSON-escaped and its base64 parts (see
// connector.SecretForms).
func Encodings(s string) []string {
	return connector.SecretForms(s)
}

// SecretValuesOf returns the values of a credential map (e.g. the
// simulator's test credentials).
func SecretValuesOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
