package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// TestIngestBoundsTheObject: the pages of one object hold at most the
// dataset's bounds.max_object_mib together — a provider whose pages are
// each within the page bound but never end fails the ingest at the page
// that passes the object's bound, BadRequest (not retryable) with code
// too_large, and nothing is stored. Before the bound it stored them all.
func TestIngestBoundsTheObject(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets+`---
id: fred-dgs10-small
provider: fred
request: {series_id: DGS10, params: {limit: "100"}}
bounds: {max_page_mib: 1, max_object_mib: 1}
`)
	ds := reg.Dataset("fred-dgs10-small")
	if ds.Bounds.ObjectBytes != 1<<20 {
		t.Fatalf("bounds = %+v", ds.Bounds)
	}
	const pageBytes = 400 << 10
	p := &fakePager{page: func(req connector.Request) (string, *connector.Request, error) {
		next := req
		next.Page = req.PageOrFirst() + 1
		head := fmt.Sprintf(`{"page":%d,"rows":"`, req.PageOrFirst())
		return head + strings.Repeat("x", pageBytes-len(head)-2) + `"}`, &next, nil
	}}
	lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{cfg: Config{Registry: reg, Sink: lake}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		connectors: map[string]connector.Connector{"fred": p}}
	ctx := context.Background()
	_, err = a.Ingest(ctx, IngestInput{Dataset: ds.ID, From: "2024-01-01", To: "2024-12-31"})
	if err == nil || !strings.Contains(err.Error(), "(too_large)") || !strings.Contains(err.Error(), "larger than 1 MiB") ||
		!strings.Contains(err.Error(), "bounds.max_object_mib") || !strings.Contains(err.Error(), "at page 3") {
		t.Fatalf("Ingest: %v, want too_large at page 3", err)
	}
	if !nonRetryable(err) {
		t.Errorf("too large is retryable: %v", err)
	}
	if p.calls != 3 {
		t.Errorf("%d calls, want 3 (1 MiB is passed in page 3)", p.calls)
	}
	n := 0
	_ = lake.List(ctx, "", func(sink.Object) error { n++; return nil })
	if n != 0 {
		t.Errorf("a failed ingest stored %d objects", n)
	}
	// The same pages fit the default bound.
	p.calls = 0
	p.page = func(req connector.Request) (string, *connector.Request, error) {
		head := fmt.Sprintf(`{"page":%d,"rows":"`, req.PageOrFirst())
		body := head + strings.Repeat("x", pageBytes-len(head)-2) + `"}`
		if req.PageOrFirst() == 3 {
			return body, nil, nil
		}
		next := req
		next.Page = req.PageOrFirst() + 1
		return body, &next, nil
	}
	res, err := a.Ingest(ctx, IngestInput{Dataset: "fred-dgs10-paged", From: "2024-01-01", To: "2024-12-31"})
	if err != nil || res.Pages != 3 || res.RawBytes != 3*pageBytes {
		t.Fatalf("within the default bound: %+v, %v", res, err)
	}
}

// failingBody fails its first read with err.
type failingBody struct{ err error }

func (f failingBody) Read([]byte) (int, error) { return 0, f.err }
func (failingBody) Close() error               { return nil }

// TestIngestPageBoundIsNotRetried: a page the connector stops at its
// bound (a read failing with too_large) fails the ingest without a retry,
// through the lake's writer.
func TestIngestPageBoundIsNotRetried(t *testing.T) {
	reg := pagedRegistry(t, pagedDatasets)
	lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	tooLarge := &connector.Error{Class: connector.BadRequest, Provider: "fred", Code: connector.CodeTooLarge, Message: "the answer is larger than 64 MiB"}
	a := &Activities{cfg: Config{Registry: reg, Sink: lake}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		connectors: map[string]connector.Connector{"fred": bodyConnector{failingBody{tooLarge}}}}
	_, err = a.Ingest(context.Background(), IngestInput{Dataset: "fred-dgs10-paged", From: "2024-01-01", To: "2024-12-31"})
	if err == nil || !nonRetryable(err) || !strings.Contains(err.Error(), "too_large") {
		t.Fatalf("Ingest: %v, want a non-retryable too_large", err)
	}
	var ae interface{ Type() string }
	if !errors.As(err, &ae) || ae.Type() != "bad_request" {
		t.Errorf("error type %v, want bad_request", err)
	}
}

// bodyConnector answers every fetch with one body.
type bodyConnector struct{ body io.ReadCloser }

func (c bodyConnector) Fetch(context.Context, connector.Request) (*connector.Response, error) {
	return &connector.Response{Body: c.body, Status: 200, Ext: "json", ContentType: "application/json", URL: "http://fake/"}, nil
}

func (bodyConnector) Probe(context.Context, *registry.Dataset) (connector.ProbeAnswer, error) {
	return connector.ProbeAnswer{}, nil
}

// xhtmlError is a gateway's error page that parses as XML: fingerprinted,
// it would have a shape.
const xhtmlError = `<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>`

// probeConnector answers every probe with one answer.
type probeConnector struct{ ans connector.ProbeAnswer }

func (probeConnector) Fetch(context.Context, connector.Request) (*connector.Response, error) {
	return nil, errors.New("not fetched")
}

func (c probeConnector) Probe(context.Context, *registry.Dataset) (connector.ProbeAnswer, error) {
	return c.ans, nil
}

// TestProbeNeverFingerprintsAnErrorBody: an answer that is an error — a
// gateway's HTML page with status 200, which the connector now classifies
// Transient; an HTML or non-2xx answer a connector let through — is never
// fingerprinted as the dataset's shape. Before, the HTML page's shape was
// recorded as the dataset's, and the next real answer as a schema change.
func TestProbeNeverFingerprintsAnErrorBody(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, xhtmlError)
	}))
	t.Cleanup(srv.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fred, err := connector.New(reg.Provider("fred"), connector.Options{BaseURL: srv.URL, Logger: log, Now: func() time.Time { return probeNow },
		Credentials: connector.MapCredentials(simulator.TestCredentials(reg))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		conn    connector.Connector
		outcome watch.Outcome
	}{
		{"an HTML 200 through the connector", fred, watch.ProviderError},
		{"an HTML page let through", probeConnector{connector.ProbeAnswer{Status: 200, ContentType: "text/html", Ext: "xml", Body: []byte(xhtmlError)}}, watch.OK},
		{"a 503 let through", probeConnector{connector.ProbeAnswer{Status: 503, ContentType: "application/json", Ext: "json", Body: []byte(`{"error":{"code":503,"message":"down"}}`)}}, watch.OK},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			a := &Activities{cfg: Config{Registry: reg, Watch: st}, log: log, connectors: map[string]connector.Connector{"fred": c.conn},
				now: func() time.Time { return probeNow }}
			ctx := context.Background()
			res, err := a.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != c.outcome {
				t.Errorf("outcome %s, want %s: %+v", res.Outcome, c.outcome, res)
			}
			probes, err := st.Probes(ctx, store.ProbeFilter{Datasets: []string{"fred-dgs10"}, WithShapes: true})
			if err != nil || len(probes) != 1 {
				t.Fatalf("%d probes recorded, %v", len(probes), err)
			}
			if !probes[0].Shape.Empty() {
				t.Errorf("an error body was fingerprinted as the dataset's shape: %+v", probes[0].Shape)
			}
		})
	}
}
