package lineage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/lineage/lineagetest"
)

func testIngest() lineage.Ingest {
	return lineage.Ingest{
		RunID: lineage.RunID("daily-fred-dgs10-2026-11-27", "run-1", "5", 1),
		Facet: lineage.IngestFacet{Dataset: "fred-dgs10", Provider: "fred", Kind: "daily", LogicalFrom: "2026-11-27", LogicalTo: "2026-11-27",
			WindowFrom: "2026-11-18", WindowTo: "2026-11-27", Attempt: 1, WorkflowID: "daily-fred-dgs10-2026-11-27"},
		Source: lineage.Endpoint("https://api.stlouisfed.org", "/fred/series/observations"),
		Lake:   lineage.S3Lake("sluice-lake").Output("provider=fred/job=fred-dgs10/"),
	}
}

func marshal(t *testing.T, ev lineage.Event) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEventsFollowTheSchema: START, COMPLETE (an object, and no data) and
// FAIL validate against the vendored OpenLineage schema, each facet
// against its own; and the validator does reject what breaks the spec.
func TestEventsFollowTheSchema(t *testing.T) {
	in := testIngest()
	at := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	events := map[string]lineage.Event{
		"start": in.StartEvent(at),
		"complete": in.CompleteEvent(at, lineage.Result{Object: "provider=fred/job=fred-dgs10/year=2026/fred-dgs10_20261127.json.zst",
			RawBytes: 2048, CompressedBytes: 512, Pages: 2, SHA256: strings.Repeat("ab", 32)}),
		"no data": in.CompleteEvent(at, lineage.Result{NoData: true}),
		"fail":    in.FailEvent(at, "fred: transient: 503 Service Unavailable"),
		"abort":   in.AbortEvent(at, "context canceled"),
	}
	for name, ev := range events {
		if err := lineagetest.Validate(marshal(t, ev)); err != nil {
			t.Errorf("%s: %v\n%s", name, err, marshal(t, ev))
		}
	}
	c := events["complete"]
	if c.EventType != lineage.Complete || c.Run.RunID != events["start"].Run.RunID || c.Job.Name != "fred-dgs10.ingest" ||
		c.Inputs[0] != (lineage.InputDataset{Namespace: "https://api.stlouisfed.org", Name: "/fred/series/observations"}) ||
		c.Outputs[0].Namespace != "s3://sluice-lake" || c.Outputs[0].Name != "provider=fred/job=fred-dgs10" {
		t.Errorf("complete event: %s", marshal(t, c))
	}
	st := c.Outputs[0].OutputFacets
	if st.Statistics.Size != 512 || st.Statistics.FileCount != 1 || st.Lake.RawBytes != 2048 || st.Lake.Pages != 2 || st.Lake.Objects != 1 {
		t.Errorf("output facets: %s", marshal(t, c))
	}
	if nt := c.Run.Facets.NominalTime; nt == nil || nt.NominalStartTime != "2026-11-18T00:00:00Z" || nt.NominalEndTime != "2026-11-28T00:00:00Z" {
		t.Errorf("nominal time %+v, want the window asked 2026-11-18 to the end of 2026-11-27", nt)
	}
	if f := events["fail"].Run.Facets.ErrorMessage; f == nil || !strings.Contains(f.Message, "503") {
		t.Errorf("fail facet: %+v", f)
	}

	// The validator is not a rubber stamp: each of these breaks the spec
	// or a facet's schema.
	broken := map[string]func(*lineage.Event){
		"run id not a uuid":   func(e *lineage.Event) { e.Run.RunID = "run-1" },
		"no job name":         func(e *lineage.Event) { e.Job.Name = "" },
		"unknown event type":  func(e *lineage.Event) { e.EventType = "DONE" },
		"facet producer":      func(e *lineage.Event) { e.Run.Facets.Ingest.Producer = "" },
		"event time":          func(e *lineage.Event) { e.EventTime = "yesterday" },
		"custom facet's kind": func(e *lineage.Event) { e.Run.Facets.Ingest.Kind = "weekly" },
	}
	for name, breakIt := range broken {
		ev := in.StartEvent(at)
		f := *ev.Run.Facets.Ingest
		ev.Run.Facets.Ingest = &f
		breakIt(&ev)
		b := marshal(t, ev)
		if name == "no job name" {
			b = bytes.Replace(b, []byte(`"name":"",`), nil, 1)
		}
		if err := lineagetest.Validate(b); err == nil {
			t.Errorf("%s: validated\n%s", name, b)
		}
	}
}

// TestRunID: an attempt's START and its end share the id; another attempt,
// activity or workflow run is another run; the id is a UUIDv5.
func TestRunID(t *testing.T) {
	a := lineage.RunID("wf", "run", "5", 1)
	if a != lineage.RunID("wf", "run", "5", 1) {
		t.Error("the same attempt gave two run ids")
	}
	if a.Version() != 5 || a.Variant() != uuid.RFC4122 {
		t.Errorf("run id %s is version %d", a, a.Version())
	}
	for _, other := range []uuid.UUID{lineage.RunID("wf", "run", "5", 2), lineage.RunID("wf", "run", "6", 1),
		lineage.RunID("wf", "run2", "5", 1), lineage.RunID("wf2", "run", "5", 1), lineage.RunID("w", "frun", "5", 1)} {
		if other == a {
			t.Errorf("%s repeats the run id", other)
		}
	}
}

// TestEndpointKeepsNoSecret: user info, queries and fragments never reach
// an input dataset, whatever the base URL and path hold.
func TestEndpointKeepsNoSecret(t *testing.T) {
	const secret = "s3cr3tAPIkeyValue42"
	in := lineage.Endpoint("https://user:"+secret+"@ecos.bok.or.kr:8443/base/?api_key="+secret+"#"+secret, "/api/StatisticSearch?serviceKey="+secret)
	if in.Namespace != "https://ecos.bok.or.kr:8443" || in.Name != "/base/api/StatisticSearch" {
		t.Errorf("endpoint %+v", in)
	}
	if strings.Contains(in.Namespace+in.Name, secret) {
		t.Errorf("secret in %+v", in)
	}
	if got := lineage.Endpoint("https://api.upbit.com", "/v1/candles/days"); got.Name != "/v1/candles/days" {
		t.Errorf("endpoint %+v", got)
	}
	if got := lineage.LocalLake("/var/sluice/lake").Output("provider=kis/job=kis-kospi/"); got.Namespace != "file" || got.Name != "/var/sluice/lake/provider=kis/job=kis-kospi" {
		t.Errorf("local lake output %+v", got)
	}
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) count(o string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[o]++
}

func (c *counter) get(o string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[o]
}

// TestFileEmitterAppendsWholeLines: events emitted from many goroutines
// land one a line, each whole and valid, every START before its end.
func TestFileEmitterAppendsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lineage", "events.jsonl")
	var c counter
	e, err := lineage.New(lineage.Options{File: path, Count: c.count})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 50
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := testIngest()
			in.RunID = lineage.RunID("wf", "run", "5", int32(i+1))
			e.Emit(in.StartEvent(time.Now()))
			e.Emit(in.CompleteEvent(time.Now(), lineage.Result{Object: "o", RawBytes: 1, CompressedBytes: 1, Pages: 1}))
		}()
	}
	wg.Wait()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := lineagetest.Lines(t, path)
	if len(lines) != 2*runs || c.get(lineage.OutcomeSent) != 2*runs {
		t.Fatalf("%d lines, %d counted sent; want %d", len(lines), c.get(lineage.OutcomeSent), 2*runs)
	}
	started := map[string]bool{}
	for _, l := range lines {
		var ev lineage.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.EventType {
		case lineage.Start:
			started[ev.Run.RunID] = true
		case lineage.Complete:
			if !started[ev.Run.RunID] {
				t.Errorf("run %s completed before it started", ev.Run.RunID)
			}
		}
	}
	// An emitter closed drops what it is given, counted.
	e.Emit(testIngest().StartEvent(time.Now()))
	if c.get(lineage.OutcomeDropped) != 1 {
		t.Errorf("dropped %d after close, want 1", c.get(lineage.OutcomeDropped))
	}
}

// TestHTTPEmitter: events are POSTed as JSON with the bearer key; a 5xx
// is retried, a 4xx is not; neither the key nor the URL's query reaches
// the log.
func TestHTTPEmitter(t *testing.T) {
	const key = "lineage-api-key-0123456789"
	var mu sync.Mutex
	var got [][]byte
	fails := 1 // the first POST answers 503
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.Contains(string(b), `"eventType":"FAIL"`) {
			w.WriteHeader(http.StatusBadRequest) // refused for good: not retried
			got = append(got, b)
			return
		}
		if fails > 0 {
			fails--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got = append(got, b)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	var c counter
	e, err := lineage.New(lineage.Options{URL: srv.URL + "/api/v1/lineage?token=" + key, APIKey: key, Backoff: time.Millisecond, Count: c.count,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	in := testIngest()
	e.Emit(in.StartEvent(time.Now()))
	e.Emit(in.FailEvent(time.Now(), "boom"))
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !bytes.Contains(got[0], []byte(`"START"`)) {
		t.Fatalf("server got %d events: %q", len(got), got)
	}
	for _, b := range got {
		if err := lineagetest.Validate(b); err != nil {
			t.Error(err)
		}
	}
	if c.get(lineage.OutcomeSent) != 1 || c.get(lineage.OutcomeFailed) != 1 {
		t.Errorf("counted %v, want 1 sent (after a retry), 1 failed (400, not retried)", c.n)
	}
	if !strings.Contains(logs.String(), "400 Bad Request") || strings.Contains(logs.String(), key) {
		t.Errorf("log:\n%s", logs.String())
	}
}

// TestHTTPEmitterEndpointDown: nothing listens at the URL: Emit returns at
// once, every attempt fails, and the failure is counted, not raised.
func TestHTTPEmitterEndpointDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var c counter
	e, err := lineage.New(lineage.Options{URL: "http://" + addr + "/api/v1/lineage", Backoff: time.Millisecond, Count: c.count,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.Emit(testIngest().StartEvent(time.Now()))
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.get(lineage.OutcomeFailed) != 1 || c.get(lineage.OutcomeSent) != 0 {
		t.Errorf("counted %v, want 1 failed", c.n)
	}
}

// TestCloseGivesUp: a backend that never answers holds Close only until
// its context ends; the event is counted failed.
func TestCloseGivesUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	var c counter
	e, err := lineage.New(lineage.Options{URL: srv.URL, Timeout: time.Hour, Count: c.count, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.Emit(testIngest().StartEvent(time.Now()))
	e.Emit(testIngest().StartEvent(time.Now()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Close(ctx); err == nil {
		t.Error("Close with a done context waited for the backend")
	}
	if c.get(lineage.OutcomeFailed)+c.get(lineage.OutcomeDropped) != 2 {
		t.Errorf("counted %v, want both events failed or dropped", c.n)
	}
}

// TestNewRefusesBadURL names the value; no destination means no emitter.
func TestNewRefusesBadURL(t *testing.T) {
	if _, err := lineage.New(lineage.Options{URL: "marquez:5000/api/v1/lineage"}); err == nil || !strings.Contains(err.Error(), "marquez:5000") {
		t.Errorf("bad url: %v", err)
	}
	if e, err := lineage.New(lineage.Options{}); e != nil || err != nil {
		t.Errorf("no destination: %v, %v", e, err)
	}
	var e *lineage.Emitter
	e.Emit(lineage.Event{}) // a nil emitter emits nothing
	if err := e.Close(context.Background()); err != nil {
		t.Error(err)
	}
}
