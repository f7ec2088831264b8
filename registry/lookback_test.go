package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

func civil(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// TestDailyWindowPerCycle: the default look-back of every ECOS cycle (D,
// M, Q, A, S, SM) and the other connectors' daily series, for logical
// dates on month ends, year ends and leap days. Each window ends on the
// date and starts on the first day of its oldest period.
func TestDailyWindowPerCycle(t *testing.T) {
	var docs []string
	for _, c := range []string{"D", "M", "Q", "A", "S", "SM"} {
		docs = append(docs, "id: ecos-"+strings.ToLower(c)+"\nprovider: ecos\nrequest: {stat_code: 722Y001, cycle: "+c+", items: [\"0101000\"]}\ningest: {schedule: \"0 9 * * *\"}\n")
	}
	docs = append(docs,
		"id: fred-d\nprovider: fred\nrequest: {series_id: DGS10}\ningest: {schedule: \"0 7 * * *\"}\n",
		"id: kis-w\nprovider: kis\nrequest: {path: /uapi/x, tr_id: T, params: {FID_INPUT_DATE_1: \"{from}\", FID_INPUT_DATE_2: \"{to}\", FID_PERIOD_DIV_CODE: W}}\ningest: {schedule: \"30 18 * * 1-5\"}\n",
		"id: kis-y\nprovider: kis\nrequest: {path: /uapi/x, tr_id: T, params: {FID_INPUT_DATE_1: \"{from}\", FID_INPUT_DATE_2: \"{to}\", FID_PERIOD_DIV_CODE: Y}}\ningest: {schedule: \"30 18 * * 1-5\"}\n",
		"id: datago-day\nprovider: datago\nrequest: {path: /x, params: {basDt: \"{from}\"}}\ningest: {schedule: \"0 14 * * 1-5\"}\n",
		"id: datago-none\nprovider: datago\nrequest: {path: /x, params: {arrange: C}}\ningest: {schedule: \"0 11 * * *\"}\n",
	)
	reg, err := load(t, providers, map[string]string{"d.yaml": strings.Join(docs, "---\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ds       string
		d        time.Time
		from, to time.Time
		calls    int
	}{
		// Daily: ten days, over a leap day and over a year end.
		{"ecos-d", civil(2024, 3, 1), civil(2024, 2, 21), civil(2024, 3, 1), 1},
		{"ecos-d", civil(2027, 1, 4), civil(2026, 12, 26), civil(2027, 1, 4), 1},
		{"fred-d", civil(2026, 11, 30), civil(2026, 11, 21), civil(2026, 11, 30), 1},
		// Monthly: six months, the 31st and the 29th of February.
		{"ecos-m", civil(2026, 11, 30), civil(2026, 6, 1), civil(2026, 11, 30), 1},
		{"ecos-m", civil(2024, 8, 31), civil(2024, 3, 1), civil(2024, 8, 31), 1},
		{"ecos-m", civil(2024, 2, 29), civil(2023, 9, 1), civil(2024, 2, 29), 1},
		// Quarterly: four quarters.
		{"ecos-q", civil(2026, 11, 30), civil(2026, 1, 1), civil(2026, 11, 30), 1},
		{"ecos-q", civil(2027, 1, 1), civil(2026, 4, 1), civil(2027, 1, 1), 1},
		// Annual: three years, from a leap day.
		{"ecos-a", civil(2028, 2, 29), civil(2026, 1, 1), civil(2028, 2, 29), 1},
		{"ecos-a", civil(2026, 12, 31), civil(2024, 1, 1), civil(2026, 12, 31), 1},
		// Half years: three halves.
		{"ecos-s", civil(2027, 3, 1), civil(2026, 1, 1), civil(2027, 3, 1), 1},
		{"ecos-s", civil(2026, 6, 30), civil(2025, 1, 1), civil(2026, 6, 30), 1},
		// Half months: six halves (three months), from a half's last day
		// in a leap February and from the 15th.
		{"ecos-sm", civil(2024, 2, 29), civil(2023, 12, 1), civil(2024, 2, 29), 1},
		{"ecos-sm", civil(2026, 11, 15), civil(2026, 8, 16), civil(2026, 11, 15), 1},
		// KIS weekly and yearly bars.
		{"kis-w", civil(2026, 12, 3), civil(2026, 11, 9), civil(2026, 12, 3), 1},
		{"kis-y", civil(2026, 12, 3), civil(2024, 1, 1), civil(2026, 12, 3), 1},
		// One day a call: ten requests.
		{"datago-day", civil(2026, 11, 30), civil(2026, 11, 21), civil(2026, 11, 30), 10},
	} {
		ds := reg.Dataset(tc.ds)
		w := reg.DailyWindow(ds, tc.d)
		if !w.From.Equal(tc.from) || !w.To.Equal(tc.to) {
			t.Errorf("%s for %s: window %s, want %s..%s", tc.ds, tc.d.Format(time.DateOnly), w, tc.from.Format(time.DateOnly), tc.to.Format(time.DateOnly))
		}
		if ds.Ingest.CallsPerRun != tc.calls {
			t.Errorf("%s: %d calls a run, want %d", tc.ds, ds.Ingest.CallsPerRun, tc.calls)
		}
		reqs := ds.Requests(w)
		if len(reqs) != tc.calls || !reqs[0].From.Equal(tc.from) || !reqs[len(reqs)-1].To.Equal(tc.to) {
			t.Errorf("%s: requests %v", tc.ds, reqs)
		}
	}
	// A request that asks for no dates has no window: one call.
	none := reg.Dataset("datago-none")
	if w := reg.DailyWindow(none, civil(2026, 11, 30)); !w.IsZero() || none.Ingest.LookBack != 0 || none.Ingest.CallsPerRun != 1 {
		t.Errorf("datago-none: window %v, look-back %d, calls %d", w, none.Ingest.LookBack, none.Ingest.CallsPerRun)
	}
	if reqs := none.Requests(registry.Dates{}); len(reqs) != 1 || !reqs[0].IsZero() {
		t.Errorf("datago-none: requests %v", reqs)
	}
}

// TestLookBackOverrides: defaults.lookback_periods replaces a unit's
// default, ingest.lookback_periods a dataset's, and the calls a run
// makes (which the budget gate counts) follow: KIS answers 50 rows a page.
func TestLookBackOverrides(t *testing.T) {
	provs := "defaults:\n  lookback_periods: {day: 3, month: 12}\n" + providers
	reg, err := load(t, provs, map[string]string{"d.yaml": `id: kis-long
provider: kis
request: {path: /uapi/x, tr_id: T, params: {FID_INPUT_DATE_1: "{from}", FID_INPUT_DATE_2: "{to}"}}
ingest: {schedule: "30 18 * * 1-5", lookback_periods: 120}
---
id: kis-short
provider: kis
request: {path: /uapi/x, tr_id: T, params: {FID_INPUT_DATE_1: "{from}", FID_INPUT_DATE_2: "{to}"}}
ingest: {schedule: "30 18 * * 1-5"}
---
id: ecos-m
provider: ecos
request: {stat_code: 901Y009, cycle: M}
ingest: {schedule: "0 9 * * *"}
---
id: datago-day
provider: datago
request: {path: /x, params: {basDt: "{from}"}}
ingest: {schedule: "0 14 * * 1-5", lookback_periods: 4, calls_per_run: 9}
`})
	if err != nil {
		t.Fatal(err)
	}
	d := civil(2026, 11, 30)
	for _, tc := range []struct {
		ds             string
		lookBack, runs int
		from           time.Time
	}{
		{"kis-long", 120, 3, civil(2026, 8, 3)}, // 120 rows: 3 pages of 50
		{"kis-short", 3, 1, civil(2026, 11, 28)},
		{"ecos-m", 12, 1, civil(2025, 12, 1)},
		{"datago-day", 4, 9, civil(2026, 11, 27)}, // declared above the 4 it needs
	} {
		ds := reg.Dataset(tc.ds)
		if ds.Ingest.LookBack != tc.lookBack || ds.Ingest.CallsPerRun != tc.runs {
			t.Errorf("%s: look-back %d, calls %d; want %d, %d", tc.ds, ds.Ingest.LookBack, ds.Ingest.CallsPerRun, tc.lookBack, tc.runs)
		}
		if w := reg.DailyWindow(ds, d); !w.From.Equal(tc.from) || !w.To.Equal(d) {
			t.Errorf("%s: window %s, want from %s", tc.ds, w, tc.from.Format(time.DateOnly))
		}
	}
	// The budget gate counts the pages: kis-long's 3 calls a run, 1 run a
	// weekday.
	if dem := reg.Scope("kis/key").Demand(2); dem.IngestCalls != 3+1 {
		t.Errorf("kis/key ingest calls a day %d, want 4", dem.IngestCalls)
	}
	if reg.Defaults.LookBack[wire.Quarter] != registry.DefaultLookBack[wire.Quarter] {
		t.Errorf("an undeclared unit lost its default: %v", reg.Defaults.LookBack)
	}
}

// TestLookBackProblems: every bad look-back is an error naming file,
// line, field and value.
func TestLookBackProblems(t *testing.T) {
	kis := "id: k\nprovider: kis\nrequest: {path: /uapi/x, tr_id: T, params: {FID_INPUT_DATE_1: \"{from}\", FID_INPUT_DATE_2: \"{to}\"}}\n"
	for _, tc := range []struct {
		name, providers, dataset, want string
	}{
		{"zero periods", providers, kis + "ingest:\n  schedule: \"0 9 * * *\"\n  lookback_periods: 0\n",
			`registry/datasets/d.yaml:6: ingest.lookback_periods: value 0 out of range (1 to 400)`},
		{"not a number", providers, kis + "ingest:\n  schedule: \"0 9 * * *\"\n  lookback_periods: \"7 days\"\n",
			`registry/datasets/d.yaml:6: ingest.lookback_periods: expected a whole number, got "7 days" (a quoted string: remove the quotes)`},
		{"too many periods", providers, kis + "ingest:\n  schedule: \"0 9 * * *\"\n  lookback_periods: 4000\n",
			`registry/datasets/d.yaml:6: ingest.lookback_periods: value 4000 out of range (1 to 400)`},
		{"a request without dates", providers, "id: t\nprovider: datago\nrequest: {path: /x, params: {arrange: C}}\ningest:\n  schedule: \"0 11 * * *\"\n  lookback_periods: 7\n",
			`registry/datasets/d.yaml:6: ingest.lookback_periods: lookback_periods 7: the request of dataset "t" asks for no dates (no {from} or {to} in its params), so a daily run has no window to reach back over; remove the field`},
		{"calls_per_run below the pages", providers, kis + "ingest:\n  schedule: \"0 9 * * *\"\n  lookback_periods: 120\n  calls_per_run: 2\n",
			`registry/datasets/d.yaml:7: ingest.calls_per_run: calls_per_run 2 is fewer than the 3 calls a daily run makes: its look-back of 120 days is 120 rows, 3 pages of 50 rows; raise it (the budget gate counts every call)`},
		{"calls_per_run below the requests", providers, "id: t\nprovider: datago\nrequest: {path: /x, params: {basDt: \"{from}\"}}\ningest:\n  schedule: \"0 14 * * 1-5\"\n  calls_per_run: 1\n",
			`registry/datasets/d.yaml:6: ingest.calls_per_run: calls_per_run 1 is fewer than the 10 calls a daily run makes: its request asks one period a call and its look-back is 10 days; raise it (the budget gate counts every call)`},
		{"more pages than one ingest follows", "defaults:\n  max_pages_per_call: 2\n" + providers, kis + "ingest:\n  schedule: \"0 9 * * *\"\n  lookback_periods: 120\n",
			`registry/datasets/d.yaml:6: ingest.lookback_periods: lookback_periods 120: a daily run would follow 3 pages of 50 rows, more than defaults.max_pages_per_call 2; shorten the look-back (a backfill fetches long ranges)`},
		{"an unknown unit in the defaults", "defaults:\n  lookback_periods: {days: 3}\n" + providers, kis,
			`registry/providers.yaml:2: defaults.lookback_periods.days: unknown field "days" (allowed: day, week, half_month, month, quarter, half_year, year)`},
		{"a bad default", "defaults:\n  lookback_periods: {month: -1}\n" + providers, kis,
			`registry/providers.yaml:2: defaults.lookback_periods.month: value -1 out of range (1 to 400)`},
		{"a schedule in its own timezone", providers, kis + "ingest:\n  schedule: \"CRON_TZ=UTC 0 9 * * *\"\n",
			`registry/datasets/d.yaml:5: ingest.schedule: schedule "CRON_TZ=UTC 0 9 * * *" names a timezone: a dataset's schedule fires in its provider's timezone (providers.yaml timezone); remove CRON_TZ=UTC`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.providers, map[string]string{"d.yaml": tc.dataset})
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

// TestRunsPerDayCountsARepeatedHour: the budget gate counts the runs of
// the busiest day of the provider's timezone. On the day America/Chicago
// falls back (the first Sunday of November) 01:00–01:59 happens twice and
// Temporal fires a cron in that hour twice; a cron outside it, or in a
// timezone without daylight saving time, fires as often as any day.
func TestRunsPerDayCountsARepeatedHour(t *testing.T) {
	provs := `providers:
  - id: fred
    timezone: America/Chicago
    rate_limits: unknown
  - id: ecos
    timezone: Asia/Seoul
    rate_limits: unknown
`
	fred := func(id, sched string) string {
		return "id: " + id + "\nprovider: fred\nrequest: {series_id: DGS10}\ningest: {schedule: \"" + sched + "\"}\n"
	}
	reg, err := load(t, provs, map[string]string{"d.yaml": strings.Join([]string{
		fred("at-0130", "30 1 * * *"),
		fred("at-0700", "0 7 * * *"),
		fred("twice-in-the-hour", "0,30 1 * * *"),
		fred("every-6h", "@every 6h"),
		"id: seoul\nprovider: ecos\nrequest: {stat_code: 722Y001, cycle: D}\ningest: {schedule: \"30 1 * * *\"}\n",
	}, "---\n")})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"at-0130": 2, "at-0700": 1, "twice-in-the-hour": 4, "every-6h": 5, "seoul": 1} {
		if got := reg.Dataset(id).Ingest.RunsPerDay; got != want {
			t.Errorf("%s: %d runs on the busiest day, want %d", id, got, want)
		}
	}
}
