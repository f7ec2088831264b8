// Package newprovider_test proves docs/providers.md's claim that a
// provider is its own folders: the throwaway sixth provider in
// testdata/toy — its registry entry and dataset, its connector with its
// wire spec, its simulated provider, and nothing else — runs through the
// whole pipeline beside the five real ones: the registry's gate, the
// planner, a daily ingest on the real embedded Temporal server, the
// watch's probes with its lateness rule, and the status pages.
package newprovider_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/status"
	_ "github.com/sluicehq/sluice/testdata/toy/connector/toy" // step 7: connector/all's import line
	_ "github.com/sluicehq/sluice/testdata/toy/simulator/toy" // step 8: simulator/all's import line
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

const (
	toyProvider = "toy"
	toyDataset  = "toy-widgets"
	// toyDir is the toy's folders, laid out as a real provider's are at
	// the module root.
	toyDir = "../../testdata/toy"
)

// registryWithToy is the default registry with the toy's registry
// entries added as a person adds a provider's: its lines appended under
// providers: in providers.yaml, its datasets file beside the others.
func registryWithToy(t *testing.T) (fs.FS, error) {
	t.Helper()
	def := registry.DefaultFS()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(def, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(def, p)
		if err != nil {
			return err
		}
		fsys[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		return nil, err
	}
	entry, datasets := toyFiles(t)
	entry = strings.TrimPrefix(entry, "providers:\n")
	providers := strings.TrimRight(string(fsys["providers.yaml"].Data), "\n") + "\n\n" + entry
	fsys["providers.yaml"] = &fstest.MapFile{Data: []byte(providers)}
	fsys["datasets/toy.yaml"] = &fstest.MapFile{Data: []byte(datasets)}
	return fsys, nil
}

// switchable serves through whichever simulator is current: the test
// moves the provider's clock by swapping simulators.
type switchable struct{ h atomic.Pointer[http.Handler] }

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

func (s *switchable) use(t *testing.T, reg *registry.Registry, now func() time.Time) {
	t.Helper()
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 10, Seed: 7, Now: now})
	if err != nil {
		t.Fatalf("starting the simulator: %v", err)
	}
	h := sim.Handler()
	s.h.Store(&h)
}

// TestNewProviderIsItsOwnFolders runs the toy through the whole
// pipeline.
func TestNewProviderIsItsOwnFolders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The registry's gate: the toy's entries load with the default
	// registry, validated against its connector's spec and within the
	// budget; its freshness and notice are its own facts, so nothing
	// needs checking about its lateness.
	fsys, err := registryWithToy(t)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(fsys, "registry", registry.Options{})
	if err != nil {
		t.Fatalf("loading the registry with the toy: %v", err)
	}
	def, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Providers) != len(def.Providers)+1 || len(reg.Datasets) != len(def.Datasets)+1 {
		t.Fatalf("%d providers and %d datasets, want the default's %d and %d plus the toy's",
			len(reg.Providers), len(reg.Datasets), len(def.Providers), len(def.Datasets))
	}
	p, ds := reg.Provider(toyProvider), reg.Dataset(toyDataset)
	if p == nil || p.Connector != toyProvider || ds == nil || ds.Wire == nil || ds.Wire.Connector != toyProvider {
		t.Fatalf("the toy's provider %+v, dataset %+v", p, ds)
	}
	if !slices.ContainsFunc(reg.Scopes, func(s *registry.ScopeInstance) bool { return s.ID == "toy/key" }) {
		t.Error("no budget scope toy/key")
	}
	for _, f := range reg.Findings {
		if f.Subject == toyProvider && f.Kind == registry.FindingFreshness {
			t.Errorf("the toy declares its freshness, yet: %s", f)
		}
	}
	fresh := watch.FreshnessFor(reg, ds)
	if fresh.Cycle != watch.Daily || fresh.Lag != 24*time.Hour || fresh.Weekdays || fresh.Tolerance != 1 {
		t.Fatalf("the toy's freshness %+v, want its registry entry's", fresh)
	}

	// The plan: a month of the toy cut by its declared coverage.
	plan, err := planner.Backfill(reg, planner.Input{From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), Datasets: []string{toyDataset}})
	if err != nil {
		t.Fatalf("planning the toy: %v", err)
	}
	if len(plan.Chunks) != 1 || plan.Totals.Calls != 4 || len(plan.Scopes) != 1 || plan.Scopes[0].Scope != "toy/key" {
		t.Fatalf("plan: %d chunks, %d calls, scopes %+v; want one month in 4 pages of 10 rows on toy/key", len(plan.Chunks), plan.Totals.Calls, plan.Scopes)
	}

	// The run: the embedded Temporal server, a worker with every
	// connector linked, the simulator serving every provider, a local
	// lake and the watch store.
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: filepath.Join(dir, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	sim := &switchable{}
	// The provider's clock ten days behind: it publishes nothing newer.
	sim.use(t, reg, func() time.Time { return time.Now().Add(-10 * 24 * time.Hour) })
	hs := httptest.NewServer(sim)
	t.Cleanup(hs.Close)
	lake, err := sink.NewLocal(filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: tlog.NewStructuredLogger(log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// A generous send tolerance: a race-built test process answers
	// permits slower than the default 50 ms.
	w, err := worker.Start(worker.Options{Client: tc, Tolerance: time.Second, Config: activities.Config{Registry: reg, Sink: lake, Logger: log, RateScale: 10,
		BaseURLs: map[string]string{"*": hs.URL}, Credentials: connector.MapCredentials(simulator.TestCredentials(reg)), Watch: st}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	pages, err := status.New(status.Config{Registry: reg, Store: st, Lake: lake, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		pages.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	probe := func() (watch.DatasetState, []watch.Change) {
		t.Helper()
		res, err := w.Activities().Probe(ctx, activities.ProbeInput{Dataset: toyDataset})
		if err != nil {
			t.Fatalf("probing the toy: %v", err)
		}
		states, err := st.States(ctx, time.Now(), toyDataset)
		if err != nil || len(states) != 1 {
			t.Fatalf("the toy's state: %v, %v", states, err)
		}
		changes, err := st.Changes(ctx, store.ChangeFilter{Datasets: []string{toyDataset}, Since: res.At})
		if err != nil {
			t.Fatal(err)
		}
		return states[0], changes
	}
	day := func(d time.Time) string { return d.UTC().Format(time.DateOnly) }
	yesterday := day(time.Now().AddDate(0, 0, -1))
	if day(time.Now().Add(2*time.Minute)) != day(time.Now()) {
		t.Skip("too close to midnight UTC: the toy's yesterday would move during the test")
	}

	// The watch: the provider answers, but its newest row is eleven days
	// old: late by the toy's own rule (a day's lag, one day's tolerance).
	s, changes := probe()
	behind := day(time.Now().AddDate(0, 0, -11))
	if s.State != watch.Up || s.Newest != behind || !s.Late {
		t.Fatalf("after a probe of a provider ten days behind: state %s, newest %s, late %v (%s)", s.State, s.Newest, s.Late, s.Reason)
	}
	if !slices.ContainsFunc(changes, func(c watch.Change) bool { return c.Kind == watch.ChangeLate }) {
		t.Errorf("no late Change: %+v", changes)
	}
	notice := html.EscapeString(p.Notice.Text)
	summary := get("/")
	for _, want := range []string{html.EscapeString(p.Name), toyDataset, `class="late"`, notice} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary page lacks %q", want)
		}
	}
	page := get("/datasets/" + toyDataset)
	for _, want := range []string{behind, "(late)", `class="notice notice-toy" lang="en"`, notice, html.EscapeString(p.Terms.Attribution)} {
		if !strings.Contains(page, want) {
			t.Errorf("the toy's page lacks %q", want)
		}
	}

	// The provider catches up; the day's ingest runs as a workflow on the
	// embedded server and lands the toy's object in the lake.
	sim.use(t, reg, nil)
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID(yesterday), TaskQueue: workflows.TaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING},
		workflows.DailyIngestName, workflows.DailyIngestInput{Date: yesterday, Providers: []string{toyProvider}})
	if err != nil {
		t.Fatalf("starting the daily ingest: %v", err)
	}
	var res workflows.DailyIngestResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("the daily ingest: %v", err)
	}
	if len(res.Results) != 1 || res.Results[0].Dataset != toyDataset || res.Results[0].Status != workflows.StatusOK || res.Results[0].Key == "" {
		t.Fatalf("the daily ingest's results: %+v", res.Results)
	}
	if key := res.Results[0].Key; !strings.HasPrefix(key, "provider=toy/job=toy-widgets/") {
		t.Errorf("the toy's object key %s", key)
	}
	body, _, err := lake.Open(ctx, res.Results[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(body)
	_ = body.Close()
	if err != nil || !strings.Contains(string(raw), fmt.Sprintf(`"day":%q`, yesterday)) {
		t.Errorf("the object holds no row of %s: %v\n%.300s", yesterday, err, raw)
	}

	// The watch sees it catch up; the pages show the lake's newest day.
	s, changes = probe()
	if s.State != watch.Up || s.Newest != yesterday || s.Late {
		t.Fatalf("after the provider caught up: state %s, newest %s, late %v", s.State, s.Newest, s.Late)
	}
	if !slices.ContainsFunc(changes, func(c watch.Change) bool { return c.Kind == watch.ChangeCaughtUp }) {
		t.Errorf("no caught-up Change: %+v", changes)
	}
	if err := pages.RefreshLake(ctx); err != nil {
		t.Fatal(err)
	}
	summary = get("/")
	if !strings.Contains(summary, yesterday) || strings.Contains(summary, `class="late"`) {
		t.Errorf("the summary page after the ingest: no lake period %s, or still late", yesterday)
	}
}

// TestNewProviderWithoutFreshnessIsFlagged: the toy without its
// freshness entry is still judged — by registry.DefaultFreshness — and
// the registry says so in a [freshness] finding naming it. (Before
// freshness was a provider fact, the watch knew the cycles of the five
// providers' connectors only, and a sixth's late data was never flagged.)
func TestNewProviderWithoutFreshnessIsFlagged(t *testing.T) {
	providers, datasets := toyFiles(t)
	i, j := strings.Index(providers, "    freshness:\n"), strings.Index(providers, "    notice:\n")
	if i < 0 || j < i {
		t.Fatal("the toy's entry has no freshness block before its notice")
	}
	reg, err := loadToy(providers[:i]+providers[j:], datasets)
	if err != nil {
		t.Fatal(err)
	}
	ds := reg.Dataset(toyDataset)
	f := watch.FreshnessFor(reg, ds)
	if !f.Enabled() || f.Cycle != watch.Daily || f.Lag != 24*time.Hour {
		t.Fatalf("the toy without freshness: %+v, want the daily default", f)
	}
	newest, err := watch.ParsePeriod(watch.Daily, "2024-01-02")
	if err != nil {
		t.Fatal(err)
	}
	if late, _ := f.Late(newest, time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC)); !late {
		t.Error("a month-old newest period is not late")
	}
	var found []string
	for _, fd := range reg.Findings {
		if fd.Kind == registry.FindingFreshness {
			found = append(found, fd.String())
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "toy/providers.yaml:") || !strings.Contains(found[0], "no rule for cycle day (probed: toy-widgets)") {
		t.Errorf("findings %q, want one naming the toy's entry, the cycle and the dataset", found)
	}
}
