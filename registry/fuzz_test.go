package registry

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary providers.yaml and dataset file contents to the
// loader: it must never panic or hang, and must either load or explain.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"testdata/small", "testdata/adr0007"} {
		p, err := os.ReadFile(filepath.Join(dir, "providers.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "datasets", "*.yaml"))
		for _, file := range files {
			d, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(p, d)
		}
	}
	f.Add([]byte(baseProviders), []byte(tourDataset))
	f.Add([]byte("- id: x\n  rate_limits: unknown\n"), []byte("id: y\nprovider: x\n---\n---\n"))
	f.Add([]byte("a: &a [*a]\n"), []byte("*b"))
	f.Add([]byte("defaults:\n  lookback_periods: {day: 3, month: 12, year: 0}\n"+baseProviders[len("defaults:\n"):]),
		[]byte(tourDataset+"---\nid: t2\nprovider: datago\nrequest: {path: /x, params: {basDt: \"{from}\"}}\ningest: {schedule: \"30 1 * * *\", lookback_periods: 7, calls_per_run: 3}\n"))
	f.Fuzz(func(t *testing.T, providers, dataset []byte) {
		fsys := fstest.MapFS{
			"providers.yaml":  {Data: providers},
			"datasets/a.yaml": {Data: dataset},
		}
		reg, err := Load(fsys, "registry", testOpts())
		if err == nil && reg == nil {
			t.Fatal("nil registry without an error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
