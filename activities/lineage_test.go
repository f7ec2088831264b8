package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/lineage/lineagetest"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/wire"
)

// lineageFile gives the stack's activities an emitter appending to a file
// and returns a function that closes it and returns the events, each
// checked against the OpenLineage schema.
func lineageFile(t *testing.T, acts *Activities, lake string) func() ([]lineage.Event, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lineage.jsonl")
	e, err := lineage.New(lineage.Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	acts.cfg.Lineage, acts.cfg.LineageLake = e, lineage.LocalLake(lake)
	return func() ([]lineage.Event, []byte) {
		t.Helper()
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		var evs []lineage.Event
		var all []byte
		for _, l := range lineagetest.Lines(t, path) {
			var ev lineage.Event
			if err := json.Unmarshal(l, &ev); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			all = append(append(all, l...), '\n')
		}
		return evs, all
	}
}

// TestIngestEmitsStartAndComplete: a successful ingest emits a START and a
// COMPLETE of one run, naming the dataset's ingest, the provider endpoint
// (host and path only: neither the api_key its request URL carried nor
// the key's value) and the dataset's lake prefix, with the window asked
// and what was written.
func TestIngestEmitsStartAndComplete(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	lakeDir := "/lake"
	done := lineageFile(t, st.acts, lakeDir)
	res, err := st.acts.Ingest(context.Background(), IngestInput{Dataset: "fred-dgs10-paged", From: "2025-01-02", To: "2025-02-28"})
	if err != nil || res.Key == "" || res.Pages < 1 {
		t.Fatalf("ingest: %+v, %v", res, err)
	}
	evs, all := done()
	if len(evs) != 2 || evs[0].EventType != lineage.Start || evs[1].EventType != lineage.Complete || evs[0].Run.RunID != evs[1].Run.RunID {
		t.Fatalf("events:\n%s", all)
	}
	c := evs[1]
	if c.Job.Namespace != lineage.DefaultNamespace || c.Job.Name != "fred-dgs10-paged.ingest" {
		t.Errorf("job %+v", c.Job)
	}
	if in := c.Inputs[0]; in.Name != "/fred/series/observations" || !strings.HasPrefix(in.Namespace, "http://127.0.0.1:") {
		t.Errorf("input %+v, want the simulator's host and FRED's endpoint path", in)
	}
	if out := c.Outputs[0]; out.Namespace != "file" || out.Name != "/lake/provider=fred/job=fred-dgs10-paged" {
		t.Errorf("output %+v", out)
	}
	f := c.Run.Facets.Ingest
	if f.Kind != "range" || f.LogicalFrom != "2025-01-02" || f.LogicalTo != "2025-02-28" || f.WindowFrom != "2025-01-02" || f.WindowTo != "2025-02-28" || f.Attempt != 1 {
		t.Errorf("ingest facet %+v", f)
	}
	lf := c.Outputs[0].OutputFacets.Lake
	if lf.Objects != 1 || lf.Object != res.Key || lf.RawBytes != res.RawBytes || lf.CompressedBytes != res.CompressedBytes || lf.Pages != res.Pages || lf.SHA256 != res.SHA256 {
		t.Errorf("lake facet %+v, result %+v", lf, res)
	}
	if s := c.Outputs[0].OutputFacets.Statistics; s.Size != res.CompressedBytes || s.FileCount != 1 {
		t.Errorf("output statistics %+v", s)
	}
	key := simulator.TestCredentials(reg)["FRED_API_KEY"]
	if key == "" || !strings.Contains(res.SourceURL, "api_key=") {
		t.Fatalf("the test needs FRED's key (%q) in the request URL (%s)", key, res.SourceURL)
	}
	for _, secret := range append(connector.SecretForms(key), "api_key", "?") {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("%q in the events:\n%s", secret, all)
		}
	}
}

// TestIngestEmitsStartAndFail: a provider refusing the request makes a
// START and a FAIL whose message is the activity's, redacted: the answer
// echoes the request URL with its ?api_key=, which no event carries.
func TestIngestEmitsStartAndFail(t *testing.T) {
	const secret = "f00dfacecafebeef0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error_code":400,"error_message":"Bad Request. The request `+r.URL.String()+` is not valid. api_key=`+secret+`"}`)
	}))
	t.Cleanup(srv.Close)
	reg := pagedRegistry(t, pagedDatasets)
	acts := &Activities{cfg: Config{Registry: reg}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), connectors: map[string]connector.Connector{}}
	store, err := tokenstore.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := connector.New(reg.Provider("fred"), connector.Options{BaseURL: srv.URL, TokenStore: store,
		Credentials: connector.MapCredentials(map[string]string{"FRED_API_KEY": secret}),
		Limiter:     permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) { return permit.Permit{}, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	acts.connectors["fred"] = c
	acts.cfg.BaseURLs = map[string]string{"*": srv.URL}
	lake, err := sink.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	acts.cfg.Sink = lake
	done := lineageFile(t, acts, "/lake")
	_, err = acts.Ingest(context.Background(), IngestInput{Dataset: "fred-dgs10-paged", From: "2025-01-02", To: "2025-01-31"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("ingest against a refusing provider: %v", err)
	}
	evs, all := done()
	if len(evs) != 2 || evs[0].EventType != lineage.Start || evs[1].EventType != lineage.Fail || evs[0].Run.RunID != evs[1].Run.RunID {
		t.Fatalf("events:\n%s", all)
	}
	if m := evs[1].Run.Facets.ErrorMessage; m == nil || m.Message != connector.Redact(err.Error()) || !strings.Contains(m.Message, "400") {
		t.Errorf("error facet %+v; the activity failed with %v", m, err)
	}
	if evs[1].Outputs[0].OutputFacets != nil {
		t.Errorf("a FAIL reports output statistics:\n%s", all)
	}
	for _, s := range append(connector.SecretForms(secret), "api_key="+url.QueryEscape(secret)) {
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("%q in the events:\n%s", s, all)
		}
	}
}

// TestBackfillChunkAndDailyLineage: a backfill's chunk is a backfill run of
// the dataset's ingest for its range; a daily run names its look-back
// window as the window asked and its date as the logical one. Run under
// Temporal's activity environment, the run id is the attempt's UUIDv5.
func TestBackfillChunkAndDailyLineage(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	done := lineageFile(t, st.acts, "/lake")
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(st.acts)
	for _, in := range []IngestInput{
		{Dataset: "fred-dgs10-paged", From: "2025-01-01", To: "2025-03-31", Priority: permit.PriorityBackfill},
		{Dataset: "fred-dgs10-paged", From: "2025-03-10", LookBack: true},
	} {
		if _, err := env.ExecuteActivity(st.acts.Ingest, in); err != nil {
			t.Fatalf("ingest %+v: %v", in, err)
		}
	}
	evs, all := done()
	if len(evs) != 4 {
		t.Fatalf("events:\n%s", all)
	}
	chunk, daily := evs[1].Run.Facets.Ingest, evs[3].Run.Facets.Ingest
	if evs[1].EventType != lineage.Complete || chunk.Kind != "backfill" || chunk.LogicalFrom != "2025-01-01" || chunk.LogicalTo != "2025-03-31" ||
		chunk.WindowFrom != "2025-01-01" || chunk.WindowTo != "2025-03-31" {
		t.Errorf("backfill chunk: %+v", chunk)
	}
	if evs[3].EventType != lineage.Complete || daily.Kind != "daily" || daily.LogicalFrom != "2025-03-10" || daily.LogicalTo != "2025-03-10" ||
		daily.WindowTo != "2025-03-10" || daily.WindowFrom >= "2025-03-10" {
		t.Errorf("daily run: %+v, want its look-back window ending on its date", daily)
	}
	for i, ev := range evs {
		f := ev.Run.Facets.Ingest
		want := lineage.RunID(f.WorkflowID, f.WorkflowRun, f.ActivityID, f.Attempt)
		if f.WorkflowID == "" || f.ActivityID == "" || ev.Run.RunID != want.String() {
			t.Errorf("event %d: run id %s, want %s from %+v", i, ev.Run.RunID, want, f)
		}
	}
	if evs[0].Run.RunID == evs[2].Run.RunID {
		t.Error("two activities share a run id")
	}
}

// TestIngestSucceedsWithLineageDown: nothing listens at the lineage URL:
// the ingest succeeds, and both events are counted failed.
func TestIngestSucceedsWithLineageDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	counts := map[string]int{}
	e, err := lineage.New(lineage.Options{URL: "http://" + addr + "/api/v1/lineage", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: 1, Count: func(o string) { mu.Lock(); counts[o]++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	st.acts.cfg.Lineage = e
	res, err := st.acts.Ingest(context.Background(), IngestInput{Dataset: "fred-dgs10-paged", From: "2025-01-02", To: "2025-01-31"})
	if err != nil || res.Key == "" {
		t.Fatalf("ingest with the lineage endpoint down: %+v, %v", res, err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if counts[lineage.OutcomeFailed] != 2 || counts[lineage.OutcomeSent] != 0 {
		t.Errorf("counted %v, want the START and the COMPLETE failed", counts)
	}
}

// TestEveryConnectorNamesItsEndpoint: the input of every default dataset
// is a path without a credential, a date or a query.
func TestEveryConnectorNamesItsEndpoint(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	want := map[string]string{
		"kis-kospi-range":      "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice",
		"ecos-base-rate-paged": "/api/StatisticSearch",
		"fred-dgs10-paged":     "/fred/series/observations",
		"upbit-krw-btc-range":  "/v1/candles/days",
		"datago-index-json":    "/1160100/service/GetMarketIndexInfoService/getStockMarketIndex",
	}
	for id, path := range want {
		ds := reg.Dataset(id)
		if got := connector.EndpointOf(st.acts.connectors[ds.Provider], ds); got != path {
			t.Errorf("%s: endpoint %q, want %q", id, got, path)
		}
	}
}

// TestCancelledIngestAborts: an ingest whose context is cancelled (the
// workflow cancelled it, the worker is stopping) ends its run with ABORT,
// not FAIL.
func TestCancelledIngestAborts(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	done := lineageFile(t, st.acts, "/lake")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.acts.Ingest(ctx, IngestInput{Dataset: "fred-dgs10-paged", From: "2025-01-02", To: "2025-01-31"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ingest: %v", err)
	}
	evs, all := done()
	if len(evs) != 2 || evs[0].EventType != lineage.Start || evs[1].EventType != lineage.Abort || evs[1].Run.Facets.ErrorMessage == nil {
		t.Fatalf("events:\n%s", all)
	}
}

// TestIngestCountsRowsForLineage: a COMPLETE says in
// outputStatistics.rowCount (and the ingest's result in Rows) how many
// records the provider's answers held, counted as they streamed into the
// lake: for each of the five providers over the simulator (data.go.kr in
// JSON and in XML), the rows wire.Extract reads back from every stored
// page; 0 for an ingest the provider had no rows for; no rowCount at all
// for answers whose rows could not be counted, whole or in part.
func TestIngestCountsRowsForLineage(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	st := newPagingStack(t, reg)
	done := lineageFile(t, st.acts, "/lake")
	ctx := context.Background()
	ins := []IngestInput{
		{Dataset: "kis-kospi-range", From: "2024-01-01", To: "2024-03-31"},
		{Dataset: "ecos-base-rate-paged", From: "2024-01-01", To: "2024-06-30"},
		{Dataset: "fred-dgs10-paged", From: "2024-01-01", To: "2024-06-30"},
		{Dataset: "upbit-krw-btc-range", From: "2024-01-01", To: "2024-08-31"},
		{Dataset: "datago-index-json", From: "2024-01-02", To: "2024-01-05"},
		{Dataset: "datago-index-xml", From: "2024-01-02", To: "2024-01-05"},
		{Dataset: "fred-dgs10-paged", From: "2025-03-10", LookBack: true},
	}
	want := make([]int64, len(ins))
	for i, in := range ins {
		res, err := st.acts.Ingest(ctx, in)
		if err != nil || res.Key == "" {
			t.Fatalf("ingest %+v: %+v, %v", in, res, err)
		}
		ds := reg.Dataset(in.Dataset)
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
			rows, err := wire.Extract(page, ds.Wire.Rows)
			if err != nil {
				t.Fatalf("%s page %d: %v", ds.ID, n, err)
			}
			want[i] += int64(len(rows))
		}
		if want[i] == 0 {
			t.Fatalf("%s %s..%s: no rows stored; the test wants some", ds.ID, in.From, in.To)
		}
		if res.Rows == nil || *res.Rows != want[i] {
			t.Errorf("%s: result rows %v, want %d (%d pages)", ds.ID, res.Rows, want[i], res.Pages)
		}
		t.Logf("%s %s..%s: %d pages, %d rows", ds.ID, in.From, in.To, res.Pages, want[i])
	}
	evs, all := done()
	if len(evs) != 2*len(ins) {
		t.Fatalf("%d events, want %d:\n%s", len(evs), 2*len(ins), all)
	}
	for i, in := range ins {
		c := evs[2*i+1]
		if c.EventType != lineage.Complete || c.Run.Facets.Ingest.Dataset != in.Dataset {
			t.Fatalf("event %d is not %s's COMPLETE:\n%s", 2*i+1, in.Dataset, all)
		}
		if s := c.Outputs[0].OutputFacets.Statistics; s.RowCount == nil || *s.RowCount != want[i] {
			t.Errorf("%s: rowCount %v, want %d", in.Dataset, s.RowCount, want[i])
		}
	}
	if !bytes.Contains(all, []byte(`"rowCount":`)) {
		t.Errorf("no rowCount in the events' JSON:\n%s", all)
	}

	// Scripted answers of FRED's dataset: no rows at all, answers without
	// FRED's observations, and a second page that lacks them.
	ds := reg.Dataset("fred-dgs10-paged")
	obs := func(n int) string {
		return `{"observations":[` + strings.TrimSuffix(strings.Repeat(`{"date":"2024-01-02","value":"1"},`, n), ",") + `]}`
	}
	tests := []struct {
		name  string
		pages []string // "" is NoData
		want  int64    // -1: no rowCount
	}{
		{"no data", []string{""}, 0},
		{"pages of rows and an empty one", []string{obs(3), obs(0), obs(2)}, 5},
		{"no observations place", []string{`{"error":"not FRED"}`}, -1},
		{"page 2 cut short", []string{obs(2), `{"observations":[{"date":`}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakePager{page: func(req connector.Request) (string, *connector.Request, error) {
				n := req.PageOrFirst()
				if tt.pages[n-1] == "" {
					return "", nil, &connector.Error{Class: connector.NoData, Provider: "fred", Message: "no rows"}
				}
				if n == len(tt.pages) {
					return tt.pages[n-1], nil, nil
				}
				next := req
				next.Page = n + 1
				return tt.pages[n-1], &next, nil
			}}
			lake, err := sink.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			a := &Activities{cfg: Config{Registry: reg, Sink: lake}, log: slog.New(slog.DiscardHandler), connectors: map[string]connector.Connector{"fred": p}}
			done := lineageFile(t, a, "/lake")
			res, err := a.Ingest(ctx, IngestInput{Dataset: ds.ID, From: "2024-01-01", To: "2024-12-31"})
			if err != nil {
				t.Fatalf("ingest: %v", err)
			}
			evs, all := done()
			if len(evs) != 2 || evs[1].EventType != lineage.Complete {
				t.Fatalf("events:\n%s", all)
			}
			got := evs[1].Outputs[0].OutputFacets.Statistics.RowCount
			switch {
			case tt.want < 0 && (got != nil || res.Rows != nil):
				t.Errorf("rowCount %d, result rows %v: want none, the rows could not be counted\n%s", *got, res.Rows, all)
			case tt.want >= 0 && (got == nil || *got != tt.want || res.Rows == nil || *res.Rows != tt.want):
				t.Errorf("rowCount %v, result rows %v, want %d\n%s", got, res.Rows, tt.want, all)
			}
			if tt.want == 0 && !bytes.Contains(all, []byte(`"rowCount":0`)) {
				t.Errorf("no data says no \"rowCount\":0:\n%s", all)
			}
		})
	}
}
