package registry_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	// Every connector registers its wire spec: these tests validate
	// datasets against the real declarations.
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testOpts() registry.Options { return registry.Options{Now: func() time.Time { return testNow }} }

// providers is a providers.yaml with one provider of each connector.
const providers = `providers:
  - id: kis
    rate_limits: unknown
  - id: ecos
    rate_limits: unknown
  - id: fred
    rate_limits: unknown
  - id: upbit
    rate_limits: unknown
  - id: datago
    rate_limits: unknown
  - id: visitkorea
    connector: datago
    rate_limits: unknown
`

func load(t *testing.T, providersYAML string, datasets map[string]string) (*registry.Registry, error) {
	t.Helper()
	fsys := fstest.MapFS{"providers.yaml": {Data: []byte(providersYAML)}, "datasets": {Mode: 0o755 | 1<<31}}
	for name, body := range datasets {
		fsys["datasets/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	return registry.Load(fsys, "registry", testOpts())
}

// TestRequestAgainstTheConnectorSpec: a dataset's request is validated
// against its connector's declared fields, cycles and page size, each
// problem naming file, line and field.
func TestRequestAgainstTheConnectorSpec(t *testing.T) {
	for _, tc := range []struct {
		name      string
		providers string
		dataset   string
		want      string
	}{
		{name: "request field the connector does not use",
			dataset: "id: k\nprovider: kis\nrequest:\n  path: /uapi/x\n  tr_id: FHKUP03500100\n  series_id: DGS10\n",
			want:    `registry/datasets/d.yaml:6: request.series_id: field "series_id" is not used by the kis connector (it uses: method, path, tr_id, params, format)`},
		{name: "request missing a required field",
			dataset: "id: k\nprovider: kis\nrequest:\n  path: /uapi/x\n",
			want:    `registry/datasets/d.yaml:4: request: dataset "k": the kis connector needs request.tr_id`},
		{name: "a connector named by providers.yaml",
			dataset: "id: v\nprovider: visitkorea\nrequest:\n  market: KRW-BTC\n  path: /B551011/x\n",
			want:    `registry/datasets/d.yaml:4: request.market: field "market" is not used by the datago connector (it uses: method, path, params, format, page_size)`},
		{name: "an ECOS cycle the connector does not know",
			dataset: "id: e\nprovider: ecos\nrequest:\n  stat_code: 722Y001\n  cycle: W\n",
			want:    `registry/datasets/d.yaml:5: request.cycle: invalid value "W" (allowed: A, S, Q, M, SM, D)`},
		{name: "a KIS period code the connector does not know",
			dataset: "id: k\nprovider: kis\nrequest:\n  path: /uapi/x\n  tr_id: T\n  params:\n    FID_INPUT_DATE_1: \"{from}\"\n    FID_PERIOD_DIV_CODE: Q\n",
			want:    `registry/datasets/d.yaml:8: request.params.FID_PERIOD_DIV_CODE: invalid value "Q" (allowed: D, W, M, Y)`},
		{name: "page size up to the connector's maximum",
			dataset: "id: e\nprovider: ecos\nrequest:\n  stat_code: 722Y001\n  cycle: D\n  page_size: 100000\n---\nid: e2\nprovider: ecos\nrequest:\n  stat_code: 722Y001\n  cycle: D\n  page_size: 99999\n",
			want:    ""},
		{name: "page size on a connector that decides it",
			dataset: "id: u\nprovider: upbit\nrequest:\n  market: KRW-BTC\n  page_size: 10\n",
			want:    `registry/datasets/d.yaml:5: request.page_size: field "page_size" is not used by the upbit connector (it uses: path, market, params)`},
		{name: "an unknown period format in a rows block",
			dataset: "id: v\nprovider: visitkorea\nrequest:\n  path: /B551011/x\nrows:\n  period: modifiedtime\n  period_format: YYYYMMDDHHMM\n",
			want:    `registry/datasets/d.yaml:7: rows.period_format: invalid value "YYYYMMDDHHMM" (allowed: YYYYMMDD, YYYY-MM-DD, YYYY-MM-DDThh:mm:ss, YYYYMMDDhhmmss, YYYY, YYYYSn, YYYYQn, YYYYMM, YYYYMMSn)`},
		{name: "an unknown field in a rows block",
			dataset: "id: v\nprovider: visitkorea\nrequest:\n  path: /B551011/x\nrows:\n  period: modifiedtime\n  value: [title]\n",
			want:    `registry/datasets/d.yaml:7: rows.value: unknown field "value" (allowed: json, xml, period, period_format, keys, values)`},
		{name: "a rows block without values",
			dataset: "id: v\nprovider: visitkorea\nrequest:\n  path: /B551011/x\nrows:\n  values: []\n",
			want:    `registry/datasets/d.yaml:6: rows.values: name at least one value field`},
		{name: "a connector that does not exist",
			providers: "providers:\n  - id: x\n    connector: nope\n    rate_limits: unknown\n",
			dataset:   "id: x\nprovider: x\n",
			want:      `registry/providers.yaml:3: providers[0].connector: invalid value "nope" (allowed: datago, ecos, fred, kis, upbit)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.providers
			if p == "" {
				p = providers
			}
			_, err := load(t, p, map[string]string{"d.yaml": tc.dataset})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid datasets rejected: %v", err)
				}
				return
			}
			var problems registry.Errors
			if !errors.As(err, &problems) {
				t.Fatalf("err = %v, want Errors", err)
			}
			if got := problems.Error(); got != tc.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestRowsOverride: a dataset's rows block replaces its connector's row
// facts field by field, and the facts resolve the span of its dates.
func TestRowsOverride(t *testing.T) {
	reg, err := load(t, providers, map[string]string{"d.yaml": `id: tour
provider: visitkorea
request:
  path: /B551011/KorService2/areaBasedList2
  params: {_type: json}
rows:
  period: modifiedtime
  period_format: YYYYMMDDhhmmss
  keys: []
  values: [title]
---
id: stock
provider: datago
request:
  path: /1160100/x
  params: {beginBasDt: "{from}", endBasDt: "{to}"}
  page_size: 500
`})
	if err != nil {
		t.Fatal(err)
	}
	tour := reg.Dataset("tour").Wire
	if tour == nil || tour.Rows.Period != "modifiedtime" || tour.Rows.PeriodFormat != wire.YYYYMMDDhhmmss || len(tour.Rows.Keys) != 0 ||
		strings.Join(tour.Rows.Values, ",") != "title" || tour.Rows.JSON != "response.body.items.item" || tour.Span != wire.SpanNone {
		t.Errorf("tour facts %+v", tour)
	}
	stock := reg.Dataset("stock").Wire
	if stock == nil || stock.Rows.Period != "basDt" || stock.PageRows != 500 || stock.Span != wire.SpanRange || stock.Paging.Style != wire.PageNumber {
		t.Errorf("stock facts %+v", stock)
	}
}

// FuzzLoadWithConnectors is FuzzLoad with every connector linked, so that
// the checks against the connectors' specs and the rows block see
// arbitrary input too: never a panic, always a registry or an error.
func FuzzLoadWithConnectors(f *testing.F) {
	f.Add([]byte(providers), []byte("id: v\nprovider: visitkorea\nrequest:\n  path: /B551011/x\nrows:\n  period: modifiedtime\n  period_format: YYYYMMDDhhmmss\n  keys: [contentid]\n  values: [title]\n"))
	f.Add([]byte(providers), []byte("id: k\nprovider: kis\nrequest:\n  path: /uapi/x\n  tr_id: T\n  params: {FID_PERIOD_DIV_CODE: W, FID_INPUT_DATE_1: \"{from}\"}\n"))
	f.Add([]byte(providers), []byte("id: e\nprovider: ecos\nrequest: {stat_code: X, cycle: SM, page_size: 7, items: [a, b]}\n"))
	f.Fuzz(func(t *testing.T, providersYAML, dataset []byte) {
		fsys := fstest.MapFS{"providers.yaml": {Data: providersYAML}, "datasets/a.yaml": {Data: dataset}}
		reg, err := registry.Load(fsys, "registry", testOpts())
		if err == nil && reg == nil {
			t.Fatal("nil registry without an error")
		}
		if err == nil {
			for _, ds := range reg.Datasets {
				if ds.Request.Declared() && reg.Provider(ds.Provider).Connector != "" && ds.Wire == nil {
					t.Fatalf("%s loaded without facts", ds.ID)
				}
			}
		}
	})
}
