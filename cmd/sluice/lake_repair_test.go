package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// TestLakeCatPage: --page prints one page of a paged object, checked
// against that page's SHA-256.
func TestLakeCatPage(t *testing.T) {
	f := newLakeFixture(t)
	k, _ := sink.Key(sink.KeySpec{Provider: "ecos", Dataset: "ecos-base-rate", From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), Ext: "json"})
	pages := []string{`{"page":1}`, `{"page":2,"rows":[1,2]}`, `{"page":3}`}
	w, err := f.lake.Create(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if _, err := w.WritePage(strings.NewReader(p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(sink.Meta{ContentType: "application/json", FetchedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if out, err := f.run(t, "cat", k, "--page", "2"); err != nil || out != pages[1] {
		t.Errorf("lake cat --page 2: %q, %v; want %q", out, err, pages[1])
	}
	if out, err := f.run(t, "cat", k); err != nil || out != strings.Join(pages, "") {
		t.Errorf("lake cat: %q, %v", out, err)
	}
	if _, err := f.run(t, "cat", k, "--page", "4"); !errors.Is(err, sink.ErrNotFound) {
		t.Errorf("lake cat --page 4 of 3: %v, want ErrNotFound", err)
	}
	if out, err := f.run(t, "ls", "provider=ecos/"); err != nil || !strings.Contains(out, " 3 ") {
		t.Errorf("lake ls does not show 3 pages: %v\n%s", err, out)
	}
}

// TestLakeShowsTheWindow: lake ls and lake cat --meta show the window of
// dates an object's request asked for (a daily run's look-back).
func TestLakeShowsTheWindow(t *testing.T) {
	f := newLakeFixture(t)
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	k, _ := sink.Key(sink.KeySpec{Provider: "ecos", Dataset: "ecos-cpi", From: day, Ext: "json"})
	if _, err := f.lake.Put(context.Background(), k, strings.NewReader(`{"rows":6}`), sink.Meta{ContentType: "application/json",
		FetchedAt: time.Now(), Window: sink.Window{From: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), To: day}}); err != nil {
		t.Fatal(err)
	}
	out, err := f.run(t, "ls", "provider=ecos/")
	if err != nil || !strings.Contains(out, "WINDOW") || !strings.Contains(out, "2026-06-01..2026-11-30") {
		t.Errorf("lake ls: %v\n%s", err, out)
	}
	out, err = f.run(t, "cat", k, "--meta")
	if err != nil || !strings.Contains(out, "window        2026-06-01..2026-11-30") || !strings.Contains(out, "pages         1") || strings.Contains(out, `"rows"`) {
		t.Errorf("lake cat --meta: %v\n%s", err, out)
	}
	if _, err := f.run(t, "cat", k, "--meta", "--page", "1"); err == nil {
		t.Error("--meta with --page was accepted")
	}
}

// TestLakeVerifyRepair: --repair refetches every damaged
// object through a Refetch workflow on a real (embedded) Temporal, whose
// Ingest waits for permits and rewrites the object — a daily key and a
// range key of several pages alike; a key that names no dataset and
// dates is reported and left alone.
func TestLakeVerifyRepair(t *testing.T) {
	for _, env := range []string{envS3Bucket, envS3Endpoint, envDataDir} {
		t.Setenv(env, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	addr, ns := sharedNamespace(t)
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sim.Handler())
	t.Cleanup(hs.Close)
	lake, err := sink.NewLocal(filepath.Join(dataDir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: addr, Namespace: ns, Logger: temporalLogger(log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	tokens, err := tokenstore.NewFile(filepath.Join(dataDir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.Start(worker.Options{Client: tc, Config: activities.Config{Registry: reg, Sink: lake, Logger: log, RateScale: 10,
		BaseURLs: map[string]string{"*": hs.URL}, Credentials: connector.MapCredentials(simulator.TestCredentials(reg)),
		TokenStore: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	// Three damaged objects with Sluice metadata: a day, a range of
	// several pages (UPBIT answers 200 candles a call) and a key that is
	// no ingest's.
	keyOf := func(ds, provider string, from, to time.Time) string {
		k, err := sink.Key(sink.KeySpec{Provider: provider, Dataset: ds, From: from, To: to, Ext: "json"})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	day := keyOf("fred-dgs10", "fred", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), time.Time{})
	rng := keyOf("upbit-krw-btc", "upbit", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC))
	foreign := "provider=fred/job=fred-dgs10/year=2026/notes.json.zst"
	// The day's object holds the provider's very bytes (ingested first, as
	// the date's daily run: its look-back window), then rots: its recorded
	// SHA-256 still matches what a refetch (a day key is refetched as its
	// daily run) brings, so only a re-put that verifies before skipping
	// repairs it.
	r, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: worker.DefaultTaskQueue}, workflows.RefetchName,
		workflows.RefetchInput{Items: []activities.IngestInput{{Dataset: "fred-dgs10", From: "2026-11-20", LookBack: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var first workflows.RefetchResult
	if err := r.Get(ctx, &first); err != nil || first.Succeeded != 1 || first.Results[0].Key != day {
		t.Fatalf("first ingest of the day: %+v, %v", first, err)
	}
	for _, k := range []string{rng, foreign} {
		if _, err := lake.Put(ctx, k, bytes.NewReader(bytes.Repeat([]byte(`{"stale":true}`), 100)), sink.Meta{ContentType: "application/json", FetchedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{day, rng, foreign} {
		p := filepath.Join(lake.Root(), filepath.FromSlash(k))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[10] ^= 0x55
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	run := func(args ...string) (string, error) {
		cmd := newLakeCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--data-dir", dataDir, "--temporal", addr, "--namespace", ns))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("verify", "--repair")
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("lake verify --repair with an unmappable key: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"verified 3 objects, 3 mismatches",
		"CANNOT REPAIR " + foreign + ": ",
		"REPAIRED " + day + " (1 pages)",
		"REPAIRED " + rng + " (2 pages)",
		"repaired 2 of 3 damaged objects",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, k := range []string{day, rng} {
		if err := lake.Verify(ctx, k); err != nil {
			t.Errorf("%s after the repair: %v", k, err)
		}
	}
	if obj, err := lake.Stat(ctx, rng); err != nil || obj.Pages != 2 || obj.Window.String() != "2025-01-01..2025-12-31" {
		t.Errorf("the repaired range: %+v, %v", obj, err)
	}
	if obj, err := lake.Stat(ctx, day); err != nil || obj.Window.String() != "2026-11-11..2026-11-20" {
		t.Errorf("the repaired day: %+v, %v (want its ten-day look-back)", obj, err)
	}
	if err := lake.Verify(ctx, foreign); !errors.Is(err, sink.ErrDamaged) {
		t.Errorf("the unmappable object was touched: %v", err)
	}
	if st := sim.Stats(); st.Scopes["upbit/ip"] == nil || st.Scopes["upbit/ip"].Violations != 0 {
		t.Errorf("simulator stats: %+v", st.Scopes["upbit/ip"])
	}
}
