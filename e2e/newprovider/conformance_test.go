package newprovider_test

// The toy's step 4 (docs/providers.md, Adding a provider): what
// connector/<p>/conformance_test.go holds for a real provider — its table
// for the conformance suite — and the registry's validation of its
// datasets against its declared spec.

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/wire"
)

// toyFiles reads the toy's registry entry (the lines it adds under
// providers:) and its datasets file.
func toyFiles(t testing.TB) (providers, datasets string) {
	t.Helper()
	dir := filepath.Join(toyDir, "registry")
	p, err := os.ReadFile(filepath.Join(dir, "providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.ReadFile(filepath.Join(dir, "datasets", "toy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return "providers:\n" + string(p), string(d)
}

// toyRegistry loads the toy's two YAML files, providers.yaml edited.
func toyRegistry(t testing.TB, edits ...string) *registry.Registry {
	t.Helper()
	providers, datasets := toyFiles(t)
	reg, err := loadToy(providers, datasets, edits...)
	if err != nil {
		t.Fatalf("loading the toy registry: %v", err)
	}
	return reg
}

func loadToy(providers, datasets string, edits ...string) (*registry.Registry, error) {
	for i := 0; i+1 < len(edits); i += 2 {
		providers = strings.Replace(providers, edits[i], edits[i+1], 1)
	}
	fsys := fstest.MapFS{"providers.yaml": {Data: []byte(providers)}, "datasets/toy.yaml": {Data: []byte(datasets)}}
	return registry.Load(fsys, "toy", registry.Options{Now: func() time.Time { return connectortest.SimNow }})
}

// toySimulator serves the toy, which is the only provider of its registry.
func toySimulator(reg *registry.Registry, now func() time.Time, rateScale float64) (http.Handler, error) {
	sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: now, RateScale: rateScale})
	if err != nil {
		return nil, err
	}
	return sim.Handler(), nil
}

// Step 4, connector/<p>/conformance_test.go for the toy: its table.
func TestRecipeToyProviderConformance(t *testing.T) {
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	jan1, jan31 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	connectortest.Run(t, connectortest.Suite{
		Provider: "toy", Simulator: toySimulator, Registry: toyRegistry, Dataset: "toy-widgets", Scope: "toy/key",
		Days: 10, // enough rows for the truncated-body fault to cut one
		Classes: []connectortest.ClassCase{
			{Name: "auth failed: unknown key", Creds: map[string]string{"TOY_API_KEY": "nope"}, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Status: 401}},
			{Name: "no data: before the first day", From: time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC),
				Want: connectortest.Expect{Class: connector.NoData, Status: 0}},
			{Name: "bad request: more rows than a page holds", From: jan, Limit: 50,
				Want: connectortest.Expect{Class: connector.BadRequest, Status: 400}},
			{Name: "rate limited: third call in the same second", From: jan, Before: connectortest.Succeed(2),
				Want:  connectortest.Expect{Class: connector.RateLimited, Status: 429},
				Stats: connectortest.Stats{"accepted": 2, "rejected": 1}},
		},
		Fetches: []connectortest.FetchCase{
			{Name: "january in pages of ten", From: jan1, To: jan31, Pages: true, More: connectortest.No,
				MinRows: 31, MaxRows: 31, Oldest: "2024-01-01", Newest: "2024-01-31", Values: []string{"v"},
				Stats: connectortest.Stats{"accepted": 4, "violations": 0}},
		},
		Probes:      []string{"toy-widgets"},
		ProbeNewest: map[string]string{"toy-widgets": "2025-03-10"}, // yesterday by SimNow, UTC
		ProbeStats:  connectortest.Stats{"accepted": 1, "violations": 0},
		Throttle: &connectortest.ThrottleCase{RateScale: 0.01, Calls: 3, Accepted: 2, RetryAfter: true,
			Want: connectortest.Expect{Class: connector.RateLimited, Status: 429}},
	})
}

// TestRecipeToyProviderRegistry: the registry validates toy datasets
// against the toy's declared spec, naming file, line and field, and
// resolves its facts.
func TestRecipeToyProviderRegistry(t *testing.T) {
	toyProviders, toyDatasets := toyFiles(t)
	reg := toyRegistry(t)
	f := reg.Dataset("toy-widgets").Wire
	if f == nil || f.PageRows != 10 || f.Span != wire.SpanRange || f.Rows.Period != "day" || f.Cycle.Unit != wire.Day {
		t.Fatalf("toy facts %+v", f)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"  page_size: 10\n", "  page_size: 50\n",
			`toy/datasets/toy.yaml:10: request.page_size: 50 rows a page is more than the toy connector allows in one call (20)`},
		{"  path: /v1/widgets\n", "",
			`toy/datasets/toy.yaml:6: request: dataset "toy-widgets": the toy connector needs request.path`},
		{"  page_size: 10\n", "  series_id: X\n",
			`toy/datasets/toy.yaml:10: request.series_id: field "series_id" is not used by the toy connector (it uses: path, params, page_size)`},
	} {
		_, err := loadToy(toyProviders, strings.Replace(toyDatasets, tc.old, tc.new, 1))
		var problems registry.Errors
		if !errors.As(err, &problems) || problems.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
	}
	// The sample registries of the suite: the default datasets load too.
	if def := connectortest.DefaultRegistryWith(t, "requests_per_second: 2\n", "requests_per_second: 1\n"); len(def.DatasetsOf("fred")) != 4 {
		t.Errorf("the default registry has %d FRED datasets", len(def.DatasetsOf("fred")))
	}
}
