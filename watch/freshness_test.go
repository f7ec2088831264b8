package watch

import (
	"testing"
	"testing/fstest"
	"time"

	_ "github.com/sluicehq/sluice/connector/all" // the wire specs resolve each dataset's cycle
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

func TestFreshnessDue(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	chicago, _ := time.LoadLocation("America/Chicago")
	for _, tc := range []struct {
		name   string
		f      Freshness
		now    time.Time
		due    string
		oldest string
	}{
		// UPBIT: at 00:30 UTC yesterday's candle is not due until 01:00.
		{"upbit before lag", Freshness{Cycle: Daily, Lag: time.Hour}, time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC), "2026-11-28", "2026-11-28"},
		{"upbit after lag", Freshness{Cycle: Daily, Lag: time.Hour}, time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC), "2026-11-29", "2026-11-29"},
		// Weekday series skip the weekend: on Monday Friday is due.
		{"weekday monday", Freshness{Cycle: Daily, Lag: 24 * time.Hour, Weekdays: true, Location: seoul},
			time.Date(2026, 11, 30, 9, 0, 0, 0, seoul), "2026-11-27", "2026-11-27"},
		{"weekday tolerance", Freshness{Cycle: Daily, Lag: 24 * time.Hour, Weekdays: true, Tolerance: 3, Location: seoul},
			time.Date(2026, 12, 2, 9, 0, 0, 0, seoul), "2026-11-30", "2026-11-25"},
		// The same instant is Tuesday night in Chicago and Wednesday noon
		// in Seoul: Friday is due for FRED, Monday for a Korean series.
		{"fred", Freshness{Cycle: Daily, Lag: 24 * time.Hour, Weekdays: true, Location: chicago},
			time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), "2026-11-27", "2026-11-27"},
		{"seoul", Freshness{Cycle: Daily, Lag: 24 * time.Hour, Weekdays: true, Location: seoul},
			time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), "2026-11-30", "2026-11-30"},
		{"monthly", Freshness{Cycle: Monthly, Lag: 60 * 24 * time.Hour, Location: seoul}, time.Date(2026, 11, 30, 9, 0, 0, 0, seoul), "2026-09", "2026-09"},
		{"quarterly", Freshness{Cycle: Quarterly, Lag: 120 * 24 * time.Hour}, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), "2026Q2", "2026Q2"},
		{"annual", Freshness{Cycle: Annual, Lag: 270 * 24 * time.Hour, Tolerance: 1}, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), "2025", "2024"},
	} {
		if got := tc.f.Due(tc.now).String(); got != tc.due {
			t.Errorf("%s: due %s, want %s", tc.name, got, tc.due)
		}
		if got := tc.f.Oldest(tc.now).String(); got != tc.oldest {
			t.Errorf("%s: oldest %s, want %s", tc.name, got, tc.oldest)
		}
	}
}

func TestFreshnessLate(t *testing.T) {
	f := Freshness{Cycle: Daily, Lag: time.Hour}
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	p, _ := ParsePeriod(Daily, "2026-11-28")
	if late, oldest := f.Late(p, now); !late || oldest.String() != "2026-11-29" {
		t.Errorf("late %v oldest %s", late, oldest)
	}
	p, _ = ParsePeriod(Daily, "2026-11-30")
	if late, _ := f.Late(p, now); late {
		t.Error("today's candle is late")
	}
	if late, _ := f.Late(Period{}, now); late {
		t.Error("no newest is late")
	}
	if late, _ := (Freshness{}).Late(p, now); late {
		t.Error("disabled freshness judged")
	}
}

func TestFreshnessForDefaultRegistry(t *testing.T) {
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dataset  string
		cycle    Cycle
		lag      time.Duration
		weekdays bool
		loc      string
	}{
		{"upbit-krw-btc", Daily, time.Hour, false, "UTC"},
		{"fred-dgs10", Daily, 24 * time.Hour, true, "America/Chicago"},
		{"kis-fx-usdkrw", Daily, 24 * time.Hour, true, "Asia/Seoul"},
		{"fsc-stock-market-index", Daily, 36 * time.Hour, true, "Asia/Seoul"},
		{"ecos-731y001-0000001", Daily, 24 * time.Hour, true, "Asia/Seoul"},
	} {
		ds := reg.Dataset(tc.dataset)
		if ds == nil {
			t.Fatalf("no dataset %s", tc.dataset)
		}
		f := FreshnessFor(reg, ds)
		if f.Cycle != tc.cycle || f.Lag != tc.lag || f.Weekdays != tc.weekdays || f.Location.String() != tc.loc {
			t.Errorf("%s: %+v", tc.dataset, f)
		}
	}
	// Every probed dataset of the default registry has a rule, and every
	// ECOS cycle has a lag.
	for _, ds := range reg.Datasets {
		if ds.Probe == nil {
			continue
		}
		f := FreshnessFor(reg, ds)
		if !f.Enabled() || f.Lag <= 0 {
			t.Errorf("%s: no freshness rule (%+v)", ds.ID, f)
		}
		if ds.Provider == "ecos" && string(f.Cycle) != ds.Request.Cycle {
			t.Errorf("%s: cycle %s, request says %s", ds.ID, f.Cycle, ds.Request.Cycle)
		}
	}
}

func TestFreshnessOverride(t *testing.T) {
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	ds := *reg.Dataset("fred-dgs10")
	pr := *ds.Probe
	pr.PublicationLag = 3 * 24 * time.Hour
	ds.Probe = &pr
	if f := FreshnessFor(reg, &ds); f.Lag != 72*time.Hour || f.Tolerance != 1 {
		t.Errorf("override: %+v", f)
	}
}

// TestCycleOf: a dataset's cycle is the unit of the cycle its wire spec
// resolved, whatever the connector: no provider id is consulted.
func TestCycleOf(t *testing.T) {
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	kis := *reg.Dataset("kis-fx-usdkrw")
	for unit, want := range map[wire.Unit]Cycle{wire.Day: Daily, wire.HalfMonth: SemiMonthly, wire.Month: Monthly,
		wire.Quarter: Quarterly, wire.HalfYear: SemiAnnual, wire.Year: Annual, wire.Week: ""} {
		ds := kis
		facts := *kis.Wire
		facts.Cycle.Unit = unit
		ds.Wire = &facts
		if got := CycleOf(reg, &ds); got != want {
			t.Errorf("unit %s: %q, want %q", unit, got, want)
		}
	}
	for _, id := range []string{"ecos-731y001-0000001", "fred-dgs10", "upbit-krw-btc", "fsc-stock-market-index"} {
		if got := CycleOf(reg, reg.Dataset(id)); got != Daily {
			t.Errorf("%s: %q", id, got)
		}
	}
	// No resolved facts (its connector not linked): not judged.
	ecos := *reg.Dataset("ecos-731y001-0000001")
	ecos.Wire = nil
	if got := CycleOf(reg, &ecos); got != "" {
		t.Errorf("no facts: %q", got)
	}
	if f := FreshnessFor(reg, &ecos); f.Enabled() {
		t.Errorf("unknown cycle judged: %+v", f)
	}
}

// TestFreshnessFromRegistry: a provider the watch has never heard of
// gets its lateness rule from its own registry entry (on the old code
// only the five providers' ids had one, and a sixth's late data was never
// flagged).
func TestFreshnessFromRegistry(t *testing.T) {
	fsys := fstest.MapFS{
		"providers.yaml": {Data: []byte(`providers:
  - id: sixth
    connector: fred
    timezone: Asia/Seoul
    rate_limits: unknown
    freshness:
      - {cycle: day, lag_hours: 5, weekdays: true, tolerance: 2}
`)},
		"datasets/sixth.yaml": {Data: []byte(`id: sixth-series
provider: sixth
request: {series_id: X}
probe: {interval_minutes: 60}
`)},
	}
	reg, err := registry.Load(fsys, "sixth", registry.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	f := FreshnessFor(reg, reg.Dataset("sixth-series"))
	if f.Cycle != Daily || f.Lag != 5*time.Hour || !f.Weekdays || f.Tolerance != 2 || f.Location.String() != "Asia/Seoul" {
		t.Fatalf("freshness %+v", f)
	}
	newest, _ := ParsePeriod(Daily, "2026-11-02")
	if late, _ := f.Late(newest, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)); !late {
		t.Error("a month-old newest period is not late")
	}
}
