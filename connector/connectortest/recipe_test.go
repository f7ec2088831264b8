package connectortest_test

// This file follows docs/providers.md's recipe for adding a provider once,
// with a throwaway sixth provider, "toy": its registry entry and dataset
// (the two YAML files, here strings), its connector with the wire spec
// beside it (connector/toy/toy.go), its simulated provider
// (simulator/toy/toy.go), and its conformance table (its test file),
// checked by the registry's validation and the conformance suite like the
// five real ones. Nothing outside these pieces changes.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
	"github.com/sluicehq/sluice/wire"
)

// Step 1, registry/providers.yaml and registry/datasets/toy.yaml.
const (
	toyProviders = `providers:
  - id: toy
    name: Toy provider
    base_url: https://toy.example
    timezone: UTC
    auth:
      strategy: api_key_query
      param: key
      credentials: {api_key: TOY_API_KEY}
    rate_limits:
      - scope: key
        requests_per_second: 2
        source: {url: "https://toy.example/limits", verified_at: 2026-11-01}
    terms_source: {url: "https://toy.example/terms", verified_at: 2026-11-01}
`
	toyDatasets = `id: toy-widgets
name: Toy widgets, daily
provider: toy
request:
  path: /v1/widgets
  params:
    from: "{from:YYYY-MM-DD}"
    to: "{to:YYYY-MM-DD}"
  page_size: 10
probe:
  interval_minutes: 60
`
)

// Step 2, connector/toy/toy.go: the connector and, beside it, its wire
// spec — request fields, paging, dates and rows, as data.
var toySpec = wire.Spec{
	Connector: "toy",
	Fields:    wire.Fields{Required: []string{"path"}, Allowed: []string{"path", "params", "page_size"}},
	Paging:    wire.Paging{Style: wire.PageNumber, Controls: []string{"page", "size"}, DefaultRows: 10, MaxRows: 20, Sizable: true},
	Dates:     wire.Dates{InParams: true, Cycles: []wire.Cycle{{Unit: wire.Day, Format: wire.ISODate}}},
	Rows:      wire.Rows{JSON: "data.rows", Period: "day", PeriodFormat: wire.ISODate, Values: []string{"v"}},
}

type toyConnector struct{ base *connector.Base }

func (c *toyConnector) Fetch(ctx context.Context, req connector.Request) (*connector.Response, error) {
	return c.fetch(ctx, req, false)
}

// Probe asks for the newest row of the last week.
func (c *toyConnector) Probe(ctx context.Context, ds *registry.Dataset) (connector.ProbeAnswer, error) {
	today := c.base.Today()
	resp, err := c.fetch(ctx, connector.Request{Dataset: ds,
		From: today.AddDate(0, 0, -7), To: today, Limit: 1}, true)
	return connector.ReadProbe(resp, err, false)
}

func (c *toyConnector) fetch(ctx context.Context, req connector.Request, probe bool) (*connector.Response, error) {
	call, ds, derr := c.base.Dataset(req, probe)
	if derr != nil {
		return nil, derr
	}
	key, err := c.base.Credential("api_key")
	if err != nil {
		return nil, c.base.Fail(call, 0, connector.AsError(err))
	}
	size := ds.Request.PageSize
	if req.Limit > 0 {
		size = req.Limit
	}
	q := append(ds.Request.ExpandParams(connector.CivilDate(req.From), connector.CivilDate(req.To)),
		registry.Param{Name: "key", Value: key}, registry.Param{Name: "page", Value: strconv.Itoa(req.PageOrFirst())},
		registry.Param{Name: "size", Value: strconv.Itoa(size)})
	last := req.PageOrFirst() * size
	return c.base.Do(ctx, connector.Exchange{Call: call, URL: c.base.URL(ds.Request.Path, connector.EncodeQuery(q)), Format: "json",
		Classify: func(h connector.Head) connector.Verdict {
			if h.Status != http.StatusOK {
				return connector.StatusVerdict(h, time.Second)
			}
			var a struct{ Data struct{ Total int } }
			if json.Unmarshal(h.Bytes, &a) != nil && h.Complete {
				return connector.Fail(connector.Transient, "", "not a toy answer: "+connector.Snippet(h.Bytes, 80))
			}
			if a.Data.Total == 0 && h.Complete {
				return connector.Fail(connector.NoData, "", "no rows in the range")
			}
			return connector.Verdict{More: a.Data.Total > last}
		}})
}

// Step 3, simulator/toy/toy.go: the simulated provider — its routes, its
// credential check and shape, its data.
type toyProvider struct {
	h      *simulator.Host
	routes map[string][]*registry.Dataset
}

func (p *toyProvider) Route(r *http.Request) (simulator.Route, bool) {
	for _, path := range p.h.Paths(r.URL.Path) {
		if cands := p.routes[path]; len(cands) > 0 {
			in := p.h.Owner("api_key", r.URL.Query().Get("key"))
			if in == nil {
				in = p.h.First()
			}
			return simulator.Route{Instance: in, Dataset: cands[0], Path: path, Serve: p.serve}, true
		}
	}
	return simulator.Route{}, false
}

func (p *toyProvider) Reset() {}

func (p *toyProvider) serve(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	q := r.URL.Query()
	fail := func(status int, msg, outcome string) *simulator.Reply {
		var w simulator.JSON
		w.Open('{')
		w.KStr("error", msg)
		w.Close('}')
		return simulator.NewReply(status, "application/json", w.Bytes(), outcome)
	}
	in := p.h.Owner("api_key", q.Get("key"))
	if in == nil {
		return fail(http.StatusUnauthorized, "unknown key", "auth")
	}
	if !p.h.Admit(in, rt.Dataset, fraction).OK {
		return fail(http.StatusTooManyRequests, "slow down", "limit")
	}
	from, ok1 := synth.ParseISO(q.Get("from"))
	to, ok2 := synth.ParseISO(q.Get("to"))
	page, err1 := strconv.Atoi(q.Get("page"))
	size, err2 := strconv.Atoi(q.Get("size"))
	if !ok1 || !ok2 || err1 != nil || err2 != nil || page < 1 || size < 1 || size > 20 {
		return fail(http.StatusBadRequest, "bad from, to, page or size", "error")
	}
	start := max(from, synth.Date(2020, 1, 1)) // the toy's first day
	total := max(0, int(to-start)+1)
	series := synth.NewSeries(p.h.Seed(), "toy", 100, 0.01)
	w := simulator.NewJSON(256)
	w.Open('{')
	w.Key("data")
	w.Open('{')
	w.KInt("total", int64(total))
	w.Key("rows")
	w.Open('[')
	for i := (page - 1) * size; i < min(page*size, total); i++ {
		d := start + synth.Day(i)
		w.Open('{')
		w.KStr("day", d.ISO())
		w.KStr("v", simulator.FormatFixed(series.Value(d), 2))
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
	w.Close('}')
	return simulator.NewReply(http.StatusOK, "application/json", w.Bytes(), "ok")
}

func init() {
	connector.Register(toySpec, func(p *registry.Provider, opts connector.Options) (connector.Connector, error) {
		b, err := connector.NewBase(p, opts)
		if err != nil {
			return nil, err
		}
		return &toyConnector{base: b}, nil
	})
	simulator.Register(simulator.Registration{Connector: "toy", Credential: simulator.Shaped(simulator.AlnumLower, 24),
		New: func(h *simulator.Host) (simulator.Provider, error) {
			return &toyProvider{h: h, routes: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.Path })}, nil
		}})
}

// toyRegistry loads the toy's two YAML files, providers.yaml edited.
func toyRegistry(t testing.TB, edits ...string) *registry.Registry {
	t.Helper()
	reg, err := loadToy(toyProviders, toyDatasets, edits...)
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

// Step 4, connector/toy/conformance_test.go: the toy's table.
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
		Probes:     []string{"toy-widgets"},
		ProbeStats: connectortest.Stats{"accepted": 1, "violations": 0},
		Throttle: &connectortest.ThrottleCase{RateScale: 0.01, Calls: 3, Accepted: 2, RetryAfter: true,
			Want: connectortest.Expect{Class: connector.RateLimited, Status: 429}},
	})
}

// TestRecipeToyProviderRegistry: the registry validates toy datasets
// against the toy's declared spec, naming file, line and field, and
// resolves its facts.
func TestRecipeToyProviderRegistry(t *testing.T) {
	reg := toyRegistry(t)
	f := reg.Dataset("toy-widgets").Wire
	if f == nil || f.PageRows != 10 || f.Span != wire.SpanRange || f.Rows.Period != "day" || f.Cycle.Unit != wire.Day {
		t.Fatalf("toy facts %+v", f)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"  page_size: 10\n", "  page_size: 50\n",
			`toy/datasets/toy.yaml:9: request.page_size: 50 rows a page is more than the toy connector allows in one call (20)`},
		{"  path: /v1/widgets\n", "",
			`toy/datasets/toy.yaml:5: request: dataset "toy-widgets": the toy connector needs request.path`},
		{"  page_size: 10\n", "  series_id: X\n",
			`toy/datasets/toy.yaml:9: request.series_id: field "series_id" is not used by the toy connector (it uses: path, params, page_size)`},
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
