package status

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// The connectors declare the row facts the newest period is read with.
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// testNow is the fixture's clock: every test sees the same day.
var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const testToken = "test-operator-token-0123456789"

type fixture struct {
	reg   *registry.Registry
	store store.Store
	lake  *sink.Local
	srv   *Server
	h     http.Handler
}

func defaultRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// newFixture builds a server over a fresh SQLite store and local lake;
// mod may change the config before the server is built.
func newFixture(t testing.TB, mod func(*Config)) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{reg: defaultRegistry(t)}
	var err error
	f.store, err = store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.store.Close() })
	f.lake, err = sink.NewLocal(filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Registry: f.reg, Store: f.store, Lake: f.lake, OperatorToken: testToken,
		Now: func() time.Time { return testNow }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	f.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = f.srv.Handler()
	return f
}

// observe records probes of a dataset every interval from start to end
// with outcome o.
func (f *fixture) observe(t testing.TB, dataset string, start, end time.Time, every time.Duration, o watch.Outcome, status int) {
	t.Helper()
	ds := f.reg.Dataset(dataset)
	cfg, err := watch.ConfigFor(f.reg, ds)
	if err != nil {
		t.Fatal(err)
	}
	for at := start; !at.After(end); at = at.Add(every) {
		p := watch.Probe{At: at, Dataset: dataset, Provider: ds.Provider, Outcome: o, HTTPStatus: status, Latency: 200 * time.Millisecond}
		if o != watch.OK {
			p.Message = "secret-internal-detail GET https://example.invalid/?serviceKey=abc: 503"
		}
		if _, err := f.store.Observe(context.Background(), p, cfg); err != nil {
			t.Fatal(err)
		}
	}
}

// put writes an object under the key of dataset for [from, to] (to zero:
// a daily key) holding body.
func (f *fixture) put(t testing.TB, dataset string, from, to time.Time, body string) string {
	t.Helper()
	ds := f.reg.Dataset(dataset)
	k, err := sink.Key(sink.KeySpec{Provider: ds.Provider, Dataset: dataset, From: from, To: to, Ext: "json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.lake.Put(context.Background(), k, strings.NewReader(body), sink.Meta{ContentType: "application/json", FetchedAt: testNow}); err != nil {
		t.Fatal(err)
	}
	return k
}

func (f *fixture) refresh(t testing.TB) {
	t.Helper()
	if err := f.srv.RefreshLake(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type response struct {
	code   int
	header http.Header
	body   string
}

func (f *fixture) do(t testing.TB, req *http.Request) response {
	t.Helper()
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func (f *fixture) get(t testing.TB, path string, hdr ...string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return f.do(t, req)
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func sinkMeta() sink.Meta {
	return sink.Meta{ContentType: "application/octet-stream", FetchedAt: testNow}
}
