package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/internal/versitygw"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"

	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/ratelimit/permit"
	_ "github.com/sluicehq/sluice/simulator/all"
)

// pagedDatasets need several pages for the ranges TestIngestFollowsEveryPage
// asks: KIS answers 50 rows a call; the ECOS, FRED and data.go.kr datasets
// ask for few rows a call; UPBIT answers at most 200 candles.
const pagedDatasets = `id: kis-kospi-range
provider: kis
request:
  path: /uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice
  tr_id: FHKUP03500100
  params: {FID_COND_MRKT_DIV_CODE: U, FID_INPUT_ISCD: "0001", FID_INPUT_DATE_1: "{from}", FID_INPUT_DATE_2: "{to}", FID_PERIOD_DIV_CODE: D}
---
id: ecos-base-rate-paged
provider: ecos
request: {stat_code: 722Y001, cycle: D, items: ["0101000"], page_size: 100}
---
id: fred-dgs10-paged
provider: fred
request: {series_id: DGS10, params: {limit: "100"}}
---
id: upbit-krw-btc-range
provider: upbit
request: {market: KRW-BTC}
---
id: datago-index-json
provider: datago
scope_key: "15094807"
request:
  path: /1160100/service/GetMarketIndexInfoService/getStockMarketIndex
  params: {resultType: json, beginBasDt: "{from}", endBasDt: "{to}", numOfRows: "40", pageNo: "1"}
---
id: datago-index-xml
provider: datago
scope_key: "15094807"
request:
  path: /1160100/service/GetMarketIndexInfoService/getStockMarketIndex
  params: {beginBasDt: "{from}", endBasDt: "{to}", numOfRows: "60"}
`

func pagedRegistry(t *testing.T, datasets string) *registry.Registry {
	t.Helper()
	providers, err := fs.ReadFile(registry.DefaultFS(), "providers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(fstest.MapFS{
		"providers.yaml":      {Data: providers},
		"datasets/paged.yaml": {Data: []byte(datasets)},
	}, "paged", registry.Options{Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// pagingStack is the Ingest activity over the real simulator and a local
// lake, with connectors whose Gate counts the permits asked per dataset.
type pagingStack struct {
	acts   *Activities
	sim    *simulator.Simulator
	reg    *registry.Registry
	lake   sink.Sink
	direct map[string]connector.Connector // the same connectors, ungated, to ask the simulator directly

	mu      sync.Mutex
	permits map[string]int
}

func newPagingStack(t *testing.T, reg *registry.Registry) *pagingStack {
	t.Helper()
	lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	return newPagingStackOn(t, reg, lake)
}

// newPagingStackOn is newPagingStack writing to lake.
func newPagingStackOn(t *testing.T, reg *registry.Registry, lake sink.Sink) *pagingStack {
	t.Helper()
	// The simulator's clock moves 10 s at every reading, so that no
	// declared window or interval ever binds, however slow the machine:
	// the test counts calls, not time.
	// The connectors read the same clock without moving it (KIS token
	// lifetimes are the simulator's).
	var tick atomic.Int64
	base := time.Date(2025, 3, 11, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))
	sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 7, Now: func() time.Time {
		return base.Add(time.Duration(tick.Add(1)) * 10 * time.Second)
	}})
	now := func() time.Time { return base.Add(time.Duration(tick.Load()) * 10 * time.Second) }
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	st := &pagingStack{sim: sim, reg: reg, lake: lake, direct: map[string]connector.Connector{}, permits: map[string]int{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st.acts = &Activities{cfg: Config{Registry: reg, Sink: lake}, log: log, connectors: map[string]connector.Connector{}}
	store, err := tokenstore.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds := connector.MapCredentials(simulator.TestCredentials(reg))
	for _, p := range reg.Providers {
		opts := connector.Options{BaseURL: srv.URL, Credentials: creds, TokenStore: store, Logger: log, Now: now}
		direct, err := connector.New(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Limiter = permit.Funcs{WaitFunc: func(_ context.Context, call permit.Call) (permit.Permit, error) {
			if call.Kind == permit.CallData {
				st.mu.Lock()
				st.permits[call.Dataset]++
				st.mu.Unlock()
			}
			return permit.Permit{}, nil
		}}
		gated, err := connector.New(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		st.acts.connectors[p.ID], st.direct[p.ID] = gated, direct
	}
	return st
}

func (st *pagingStack) permitsOf(ds string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.permits[ds]
}

// accepted sums the simulator's accepted calls over a dataset's scopes.
func (st *pagingStack) accepted(ds string) (accepted, violations int64) {
	stats := st.sim.Stats()
	for _, s := range st.reg.ScopesFor(ds) {
		if sc := stats.Scopes[s.ID]; sc != nil {
			accepted += sc.Accepted
			violations += sc.Violations
		}
	}
	return accepted, violations
}

// fetchOne asks the simulator directly (no permits counted) and returns
// the body of an answer that must be a single page; nil for no data.
func (st *pagingStack) fetchOne(t *testing.T, req connector.Request) []byte {
	t.Helper()
	resp, err := st.direct[req.Dataset.Provider].Fetch(context.Background(), req)
	if c, ok := connector.ClassOf(err); ok && c == connector.NoData {
		return nil
	}
	if err != nil {
		t.Fatalf("asking the simulator for %s %s..%s: %v", req.Dataset.ID, day(req.From), day(req.To), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, more, err := connector.NextPage(resp); err != nil || (more && req.Limit == 0) {
		t.Fatalf("the direct answer for %s %s..%s is not one page: more %v, %v", req.Dataset.ID, day(req.From), day(req.To), more, err)
	}
	return b
}

func day(t time.Time) string { return t.Format(time.DateOnly) }

func date(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

// rows parses one page and returns an identifier per row (its date, or
// its position when the provider gives rows no single date field).
type rowsFunc func(t *testing.T, page []byte) []string

func jsonRows(path []string, field string) rowsFunc {
	return func(t *testing.T, page []byte) []string {
		t.Helper()
		var v any
		if err := json.Unmarshal(page, &v); err != nil {
			t.Fatalf("page is not JSON: %v", err)
		}
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		var list []any
		switch x := v.(type) {
		case []any:
			list = x
		case map[string]any: // data.go.kr: one item comes as an object
			list = []any{x}
		}
		var ids []string
		for i, r := range list {
			m, _ := r.(map[string]any)
			id, _ := m[field].(string)
			if field == "" {
				id = string(rune('a' + i%26))
			}
			ids = append(ids, id)
		}
		return ids
	}
}

func xmlItems(t *testing.T, page []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	var ids []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return ids
		}
		if err != nil {
			t.Fatalf("page is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "item" {
			ids = append(ids, "item")
		}
	}
}

// jsonNumber reads a number at a path of a JSON document.
func jsonNumber(t *testing.T, b []byte, path ...string) int {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	n, ok := v.(float64)
	if !ok {
		t.Fatalf("no number at %v", path)
	}
	return int(n)
}

// windows cuts [from, to] into consecutive spans of at most n days.
func windows(from, to time.Time, n int) [][2]time.Time {
	var out [][2]time.Time
	for f := from; !f.After(to); f = f.AddDate(0, 0, n) {
		out = append(out, [2]time.Time{f, minTime(f.AddDate(0, 0, n-1), to)})
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestIngestFollowsEveryPage: for every provider, an ingest
// of a range that needs several pages follows each page the simulator
// announces, each page its own call with its own permit, and the lake
// object holds every row the simulator serves for the range — counted by
// parsing each stored page and compared with the simulator's own answer
// (its total count, or the sum of its single-page answers for shorter
// spans). It runs on the local lake and on S3 (versitygw).
func TestIngestFollowsEveryPage(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	t.Run("local", func(t *testing.T) { testIngestFollowsEveryPage(t, newPagingStack(t, reg)) })
	t.Run("s3", func(t *testing.T) {
		srv := versitygw.Start(t)
		lake, err := sink.NewS3(context.Background(), sink.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, Region: srv.Region,
			Credentials: srv.Credentials(), PartSize: sink.MinPartSize, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		testIngestFollowsEveryPage(t, newPagingStackOn(t, reg, lake))
	})
}

func testIngestFollowsEveryPage(t *testing.T, st *pagingStack) {
	reg := st.reg
	tests := []struct {
		dataset  string
		from, to string
		rows     rowsFunc
		unique   bool // row ids are dates: no date may repeat
		expected func(t *testing.T, ds *registry.Dataset, from, to time.Time) int
	}{
		{"kis-kospi-range", "2024-01-01", "2024-06-30", jsonRows([]string{"output2"}, "stck_bsop_date"), true,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				// KIS has no total count: the sum of monthly answers (at
				// most 23 rows each, one page).
				n := 0
				for _, w := range windows(from, to, 30) {
					if b := st.fetchOne(t, connector.Request{Dataset: ds, From: w[0], To: w[1]}); b != nil {
						n += len(jsonRows([]string{"output2"}, "stck_bsop_date")(t, b))
					}
				}
				return n
			}},
		{"ecos-base-rate-paged", "2023-01-01", "2024-12-31", jsonRows([]string{"StatisticSearch", "row"}, "TIME"), true,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				return jsonNumber(t, st.fetchOne(t, connector.Request{Dataset: ds, From: from, To: to, Limit: 1}), "StatisticSearch", "list_total_count")
			}},
		{"fred-dgs10-paged", "2023-01-01", "2024-12-31", jsonRows([]string{"observations"}, "date"), true,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				return jsonNumber(t, st.fetchOne(t, connector.Request{Dataset: ds, From: from, To: to, Limit: 1}), "count")
			}},
		{"upbit-krw-btc-range", "2023-06-01", "2024-12-31", jsonRows(nil, "candle_date_time_utc"), true,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				n := 0
				for _, w := range windows(from, to, 200) {
					var candles []any
					if err := json.Unmarshal(st.fetchOne(t, connector.Request{Dataset: ds, From: w[0], To: w[1]}), &candles); err != nil {
						t.Fatal(err)
					}
					n += len(candles)
				}
				return n
			}},
		{"datago-index-json", "2024-01-01", "2024-02-29", jsonRows([]string{"response", "body", "items", "item"}, ""), false,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				return jsonNumber(t, st.fetchOne(t, connector.Request{Dataset: ds, From: from, To: to, Limit: 1}), "response", "body", "totalCount")
			}},
		{"datago-index-xml", "2024-01-01", "2024-02-29", xmlItems, false,
			func(t *testing.T, ds *registry.Dataset, from, to time.Time) int {
				b := st.fetchOne(t, connector.Request{Dataset: ds, From: from, To: to, Limit: 1})
				var env struct {
					Total int `xml:"body>totalCount"`
				}
				if err := xml.Unmarshal(b, &env); err != nil || env.Total == 0 {
					t.Fatalf("no totalCount in %q: %v", b, err)
				}
				return env.Total
			}},
	}
	for _, tt := range tests {
		t.Run(tt.dataset, func(t *testing.T) {
			ctx := context.Background()
			ds := reg.Dataset(tt.dataset)
			before, _ := st.accepted(ds.ID)
			res, err := st.acts.Ingest(ctx, IngestInput{Dataset: ds.ID, From: tt.from, To: tt.to})
			if err != nil {
				t.Fatalf("Ingest: %v", err)
			}
			after, violations := st.accepted(ds.ID)
			permits := st.permitsOf(ds.ID)
			if res.Pages < 2 {
				t.Fatalf("Ingest result %+v: %d pages, want a range that needs several", res, res.Pages)
			}
			if permits != res.Pages || after-before != int64(res.Pages) || violations != 0 {
				t.Errorf("%d pages, %d permits asked, %d calls the simulator accepted, %d violations: want one permit and one call a page",
					res.Pages, permits, after-before, violations)
			}
			obj, err := st.lake.Stat(ctx, res.Key)
			if err != nil {
				t.Fatal(err)
			}
			if obj.Pages != res.Pages || obj.RawSHA256 != res.SHA256 || obj.RawSize != res.RawBytes {
				t.Errorf("lake object %+v does not match the result %+v", obj, res)
			}
			if err := st.lake.Verify(ctx, res.Key); err != nil {
				t.Errorf("Verify: %v", err)
			}
			var ids []string
			for n := 1; n <= res.Pages; n++ {
				rc, _, err := st.lake.OpenPage(ctx, res.Key, n)
				if err != nil {
					t.Fatal(err)
				}
				page, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				rows := tt.rows(t, page)
				if len(rows) == 0 {
					t.Errorf("page %d holds no rows", n)
				}
				ids = append(ids, rows...)
			}
			from, to := date(tt.from), date(tt.to)
			if want := tt.expected(t, ds, from, to); len(ids) != want {
				t.Errorf("the lake object holds %d rows in %d pages; the simulator serves %d for %s..%s", len(ids), res.Pages, want, tt.from, tt.to)
			}
			if tt.unique {
				sorted := slices.Clone(ids)
				slices.Sort(sorted)
				if c := slices.Compact(sorted); len(c) != len(ids) {
					t.Errorf("%d rows but %d distinct dates: pages overlap", len(ids), len(c))
				}
			}
			t.Logf("%s %s..%s: %d pages, %d rows, %d raw bytes", ds.ID, tt.from, tt.to, res.Pages, len(ids), res.RawBytes)
		})
	}
}

// TestIngestDailyRunIsOnePage: a daily run whose answer fits one call
// makes exactly one call, and a dataset declaring paging: first_page
// takes page 1 only, saying that more was announced.
func TestIngestDailyRunIsOnePage(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets+`---
id: datago-index-first
provider: datago
scope_key: "15094807"
request:
  path: /1160100/service/GetMarketIndexInfoService/getStockMarketIndex
  params: {resultType: json, beginBasDt: "{from}", endBasDt: "{to}", numOfRows: "5"}
  paging: first_page
`)
	st := newPagingStack(t, reg)
	ctx := context.Background()
	for _, id := range []string{"kis-kospi-range", "ecos-base-rate-paged", "fred-dgs10-paged", "upbit-krw-btc-range"} {
		res, err := st.acts.Ingest(ctx, IngestInput{Dataset: id, From: "2024-03-05"})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if res.Pages != 1 || st.permitsOf(id) != 1 || res.MorePages {
			t.Errorf("%s daily: %d pages, %d permits, more %v; want one call", id, res.Pages, st.permitsOf(id), res.MorePages)
		}
	}
	res, err := st.acts.Ingest(ctx, IngestInput{Dataset: "datago-index-first", From: "2024-01-01", To: "2024-02-29"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 1 || !res.MorePages || st.permitsOf("datago-index-first") != 1 {
		t.Errorf("first_page: %+v, %d permits; want page 1 only, more announced", res, st.permitsOf("datago-index-first"))
	}
}

// TestIngestBoundsPages: a range needing more pages than the bound fails
// with a clear, non-retryable error and stores nothing; the bound counts
// calls exactly.
func TestIngestBoundsPages(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	ctx := context.Background()
	_, err := st.acts.Ingest(ctx, IngestInput{Dataset: "ecos-base-rate-paged", From: "2023-01-01", To: "2024-12-31", MaxPages: 3})
	if err == nil || !strings.Contains(err.Error(), "still announces more pages after 3") || !strings.Contains(err.Error(), "max_pages_per_call") {
		t.Fatalf("Ingest with 3 pages allowed: %v", err)
	}
	if !nonRetryable(err) {
		t.Errorf("too many pages is retryable: %v", err)
	}
	if n := st.permitsOf("ecos-base-rate-paged"); n != 3 {
		t.Errorf("%d calls made, want 3 (the bound)", n)
	}
	var keys []string
	_ = st.lake.List(ctx, "", func(o sink.Object) error { keys = append(keys, o.Key); return nil })
	if len(keys) != 0 {
		t.Errorf("a failed ingest stored %v", keys)
	}
	res, err := st.acts.Ingest(ctx, IngestInput{Dataset: "ecos-base-rate-paged", From: "2023-01-01", To: "2024-12-31", MaxPages: 6})
	if err != nil || res.Pages != 6 {
		t.Errorf("the same range with 6 pages allowed (505 rows, 100 a page): %+v, %v", res, err)
	}
}

func nonRetryable(err error) bool {
	type nr interface{ NonRetryable() bool }
	var e nr
	return errors.As(err, &e) && e.NonRetryable()
}

// fakePager is a connector whose pages a test scripts: page n's body and
// whether (and how) it names a next page.
type fakePager struct {
	calls int
	page  func(req connector.Request) (body string, next *connector.Request, err error)
}

func (f *fakePager) Fetch(_ context.Context, req connector.Request) (*connector.Response, error) {
	f.calls++
	body, next, err := f.page(req)
	if err != nil {
		return nil, err
	}
	resp := &connector.Response{Body: io.NopCloser(strings.NewReader(body)), Status: 200, Ext: "json", ContentType: "application/json", URL: "http://fake/"}
	resp.Next = func() (connector.Request, bool, error) {
		if next == nil {
			return connector.Request{}, false, nil
		}
		return *next, true, nil
	}
	return resp, nil
}

func (f *fakePager) Probe(context.Context, *registry.Dataset) (connector.ProbeAnswer, error) {
	return connector.ProbeAnswer{}, nil
}

func TestIngestDetectsPagingThatDoesNotEnd(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	ctx := context.Background()
	ds := reg.Dataset("fred-dgs10-paged")
	with := func(p *fakePager) (*Activities, *sink.Local) {
		lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
		if err != nil {
			t.Fatal(err)
		}
		return &Activities{cfg: Config{Registry: reg, Sink: lake}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			connectors: map[string]connector.Connector{"fred": p}}, lake
	}
	in := IngestInput{Dataset: ds.ID, From: "2024-01-01", To: "2024-12-31"}
	tests := []struct {
		name      string
		page      func(req connector.Request) (string, *connector.Request, error)
		wantCalls int
		want      string
		retryable bool
	}{
		{"the next request repeats this one", func(req connector.Request) (string, *connector.Request, error) {
			return `{"page":` + string(rune('0'+req.PageOrFirst())) + `}`, &req, nil
		}, 1, "the cursor did not advance", true},
		{"pages repeat byte for byte", func(req connector.Request) (string, *connector.Request, error) {
			next := req
			next.Page = req.PageOrFirst() + 1
			return `{"same":true}`, &next, nil
		}, 2, "repeats page 1 byte for byte", true},
		{"a provider that always says more", func(req connector.Request) (string, *connector.Request, error) {
			next := req
			next.Page = req.PageOrFirst() + 1
			return `{"page":"` + strings.Repeat("x", next.Page) + `"}`, &next, nil
		}, registry.DefaultMaxPagesPerCall, "still announces more pages after 1000", false},
		{"a page fails", func(req connector.Request) (string, *connector.Request, error) {
			if req.PageOrFirst() == 3 {
				return "", nil, &connector.Error{Class: connector.Transient, Provider: "fred", Message: "connection reset"}
			}
			next := req
			next.Page = req.PageOrFirst() + 1
			return `{"page":"` + strings.Repeat("x", next.Page) + `"}`, &next, nil
		}, 3, "connection reset", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakePager{page: tt.page}
			a, lake := with(p)
			_, err := a.Ingest(ctx, in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Ingest: %v, want an error saying %q", err, tt.want)
			}
			if nonRetryable(err) == tt.retryable {
				t.Errorf("retryable %v, want %v: %v", !nonRetryable(err), tt.retryable, err)
			}
			if p.calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", p.calls, tt.wantCalls)
			}
			n := 0
			_ = lake.List(ctx, "", func(sink.Object) error { n++; return nil })
			if n != 0 {
				t.Errorf("a failed ingest stored %d objects", n)
			}
		})
	}
	// A NoData page after the first ends the object: nothing lies beyond.
	p := &fakePager{page: func(req connector.Request) (string, *connector.Request, error) {
		if req.PageOrFirst() == 3 {
			return "", nil, &connector.Error{Class: connector.NoData, Provider: "fred", Message: "no rows"}
		}
		next := req
		next.Page = req.PageOrFirst() + 1
		return `{"page":` + string(rune('0'+req.PageOrFirst())) + `}`, &next, nil
	}}
	a, lake := with(p)
	res, err := a.Ingest(ctx, in)
	if err != nil || res.Pages != 2 || res.NoData {
		t.Fatalf("NoData on page 3: %+v, %v; want two pages stored", res, err)
	}
	if got, _ := readAll(t, lake, res.Key); got != `{"page":1}{"page":2}` {
		t.Errorf("object holds %q", got)
	}
}

func readAll(t *testing.T, lake sink.Sink, key string) (string, sink.Object) {
	t.Helper()
	rc, obj, err := lake.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), obj
}
