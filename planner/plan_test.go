package planner_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func defaultRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func date(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func scope(t *testing.T, p *planner.Plan, id string) planner.ScopePlan {
	t.Helper()
	for _, s := range p.Scopes {
		if s.Scope == id {
			return s
		}
	}
	t.Fatalf("no scope %s in the plan", id)
	return planner.ScopePlan{}
}

// The headline: the default registry over 2016-01-01..2026-08-31
// needs at least 50× fewer calls than one call per endpoint per day.
func TestDefaultBackfill(t *testing.T) {
	reg := defaultRegistry(t)
	p, err := planner.Backfill(reg, planner.Input{From: date("2016-01-01"), To: date("2026-08-31")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("totals %+v", p.Totals)
	for _, s := range p.Scopes {
		t.Logf("%s datasets %d chunks %d calls %d quota %d reserved %d share %d days %d makespan %s", s.Scope, len(s.Datasets), s.Chunks, s.Calls, s.DailyQuota, s.Reserved.Total, s.Share, s.ProviderDays, s.Makespan)
	}
	if p.Totals.Ratio < 50 {
		t.Errorf("ratio %.1f to one call a day, want ≥ 50", p.Totals.Ratio)
	}
	days := int(date("2026-08-31").Sub(date("2016-01-01"))/(24*time.Hour)) + 1
	if p.Totals.OneCallPerDay != p.Totals.Datasets*days {
		t.Errorf("one call a day %d, want %d × %d", p.Totals.OneCallPerDay, p.Totals.Datasets, days)
	}
	calls, prev := 0, planner.Chunk{}
	for i, c := range p.Chunks {
		calls += c.Calls
		if c.Calls < 1 || len(c.Scopes) == 0 {
			t.Fatalf("chunk %+v", c)
		}
		if i > 0 && (c.Dataset < prev.Dataset || c.Dataset == prev.Dataset && c.From <= prev.To) {
			t.Fatalf("chunks out of order: %+v after %+v", c, prev)
		}
		prev = c
	}
	if calls != p.Totals.Calls {
		t.Errorf("Σ chunk calls %d, totals %d", calls, p.Totals.Calls)
	}
	// KIS: 100 datasets × 64 two-month chunks, one page each; its quota is
	// unknown, planned at the default 1,000, of which the day's probes and
	// ingests reserve 300: 700 a day, so ⌈6,400 / 700⌉ = 10 provider-days.
	kis := scope(t, p, "kis/key")
	if kis.Calls != 6400 || kis.DailyQuota != 1000 || kis.Share != 1000-kis.Reserved.Total || kis.ProviderDays != (6400+kis.Share-1)/kis.Share {
		t.Errorf("kis %+v", kis)
	}
	if !strings.Contains(strings.Join(kis.Unknown, ","), "requests_per_day") {
		t.Errorf("kis unknown quota not flagged: %v", kis.Unknown)
	}
	if kis.Makespan < 9*24*time.Hour {
		t.Errorf("kis makespan %s, want ≥ 9 days of waiting for midnights", kis.Makespan)
	}
	// ECOS: 80 datasets × 11 years; FRED 4 × 11; UPBIT 5 × 20 200-day spans.
	for id, want := range map[string]int{"ecos/key": 880, "fred/key": 44, "upbit/ip": 100} {
		if s := scope(t, p, id); s.Calls != want || s.Chunks != want {
			t.Errorf("%s: %d chunks %d calls, want %d", id, s.Chunks, s.Calls, want)
		}
	}
	// data.go.kr FSC: a year a chunk, its weekdays' rows over 1,000-row pages.
	fsc := scope(t, p, "datago/service/15094807")
	if fsc.Chunks != 33 || fsc.Calls < 400 || fsc.Calls > 500 || fsc.ProviderDays != 1 {
		t.Errorf("fsc %+v", fsc)
	}
}

// The makespan is the ledger's own arithmetic for one worker process:
// UPBIT's 10 a second, so 100 calls are ten bursts, each window spaced by
// the 1 ms slack and either the tolerance τ or, where cheaper, what a
// chained grant keeps (ChainMargin and 3 ms of lead: 5 ms), the last
// 9 × (1 s + 1 ms + min(τ, 5 ms)) after the start.
func TestMakespanIsTheLedgers(t *testing.T) {
	reg := defaultRegistry(t)
	for _, tol := range []time.Duration{0, 10 * time.Millisecond} {
		p, err := planner.Backfill(reg, planner.Input{From: date("2016-01-01"), To: date("2026-08-31"), Providers: []string{"upbit"}, Tolerance: tol})
		if err != nil {
			t.Fatal(err)
		}
		if tol == 0 {
			tol = ledger.DefaultTolerance
		}
		want := 9 * (time.Second + min(tol, ledger.ChainMargin+3*time.Millisecond) + time.Millisecond)
		if got := scope(t, p, "upbit/ip").Makespan; got != want {
			t.Errorf("τ %s: makespan %s, want %s", tol, got, want)
		}
	}
	// The rate scale divides window lengths (the simulator's --rate-scale).
	p, err := planner.Backfill(reg, planner.Input{From: date("2016-01-01"), To: date("2026-08-31"), Providers: []string{"upbit"}, RateScale: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := scope(t, p, "upbit/ip").Makespan, 9*(100*time.Millisecond+ledger.ChainMargin+3*time.Millisecond+time.Millisecond); got != want {
		t.Errorf("scaled makespan %s, want %s", got, want)
	}
}

// A call counting against two scopes is bounded by both: FRED with an
// added per-IP 30 a minute waits a minute after its 30th call, where its
// per-key 2 a second alone finishes 44 calls in 22 s.
func TestMultiScopeMakespan(t *testing.T) {
	base := registry.DefaultFS()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(base, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(base, path)
		if path == "providers.yaml" {
			s := strings.Replace(string(data), "        requests_per_minute: 120\n",
				"        requests_per_minute: 120\n        source: {url: https://fred.stlouisfed.org/docs/api/fred/, verified_at: 2026-11-30}\n      - scope: ip\n        requests_per_minute: 30\n", 1)
			data = []byte(s)
		}
		fsys[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(fsys, "registry", registry.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.Backfill(reg, planner.Input{From: date("2016-01-01"), To: date("2026-08-31"), Providers: []string{"fred"}})
	if err != nil {
		t.Fatal(err)
	}
	key, ip := scope(t, p, "fred/key"), scope(t, p, "fred/ip")
	if key.Calls != 44 || ip.Calls != 44 || len(p.Chunks[0].Scopes) != 2 {
		t.Fatalf("key %+v ip %+v chunk %+v", key, ip, p.Chunks[0])
	}
	if key.Makespan != ip.Makespan || key.Makespan < time.Minute || key.Makespan > 2*time.Minute {
		t.Errorf("makespan key %s ip %s, want one past a minute", key.Makespan, ip.Makespan)
	}
}

// A daily run asks each dataset's look-back: the FSC datasets ask one
// range a call now (beginBasDt..endBasDt), so their run is one request
// each, within the calls_per_run the budget gate counts.
func TestDailyPlan(t *testing.T) {
	reg := defaultRegistry(t)
	p, err := planner.Daily(reg, date("2026-11-27"), []string{"datago"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	perDataset := map[string]int{}
	for _, c := range p.Chunks {
		perDataset[c.Dataset] += c.Calls
		if ds := reg.Dataset(c.Dataset); ds.Ingest != nil && perDataset[c.Dataset] > ds.Ingest.CallsPerRun {
			t.Errorf("%s: %d planned calls, more than calls_per_run %d", c.Dataset, perDataset[c.Dataset], ds.Ingest.CallsPerRun)
		}
	}
	fsc := scope(t, p, "datago/service/15094807")
	if fsc.Chunks != 3 || fsc.Calls > 4 || fsc.Share != fsc.DailyQuota {
		t.Errorf("fsc daily %+v", fsc)
	}
	if p.Chunks[0].From == "" || p.Kind != "daily" {
		t.Errorf("plan %+v", p)
	}
}

func TestPlanErrors(t *testing.T) {
	reg := defaultRegistry(t)
	for _, tc := range []struct {
		in   planner.Input
		want string
	}{
		{planner.Input{From: date("2020-01-02"), To: date("2020-01-01")}, "before from"},
		{planner.Input{From: date("2020-01-01"), To: date("2020-01-02"), Providers: []string{"nope"}}, `unknown provider "nope"`},
		{planner.Input{From: date("2020-01-01"), To: date("2020-01-02"), Datasets: []string{"nope"}}, `unknown dataset "nope"`},
		{planner.Input{From: date("2020-01-01"), To: date("2020-01-02"), Datasets: []string{"visitkorea-tourism"}}, "asks for no dates"},
		{planner.Input{To: date("2020-01-02")}, "required"},
	} {
		if _, err := planner.Backfill(reg, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.want)
		}
	}
}
