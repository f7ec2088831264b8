package registry

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/wire"
)

// DefaultLookBack is the look-back of a daily run by the calendar unit of
// a dataset's cycle: how many periods, the logical date's own included, a
// daily run for date D asks for, so that it holds the newest period the
// provider has published and the revisions of the periods just before it.
// defaults.lookback_periods in providers.yaml overrides it unit by unit,
// ingest.lookback_periods dataset by dataset.
//
// Each default reaches past the slowest publication the registry's
// providers are known for, and past the calendar gaps between them:
//
//   - day 10: a daily run must reach back over the longest closure of a
//     market calendar (the Korea Exchange closed seven days running over
//     추석 2025, 3–9 October) plus one business day of publication lag
//     (FRED and ECOS publish a day's value the next business day), and
//     re-read the past week, which providers revise;
//   - week 4: a month of weekly bars;
//   - half_month 6: three months of ECOS half-month series (published
//     some ten days after the half);
//   - month 6: the slowest monthly statistics (money supply, about 45 days
//     after the month) plus the revisions of the months before;
//   - quarter 4: a year of quarters (GDP's preliminary estimate comes
//     about two months after the quarter and is revised for a year);
//   - half_year 3 and year 3: annual statistics appear up to three months
//     after the year, so early in a year the newest published year is two
//     years back.
var DefaultLookBack = map[wire.Unit]int{
	wire.Day:       10,
	wire.Week:      4,
	wire.HalfMonth: 6,
	wire.Month:     6,
	wire.Quarter:   4,
	wire.HalfYear:  3,
	wire.Year:      3,
}

// MaxLookBack bounds a declared look-back, in periods: a longer window is
// a backfill's job (range keys), not a daily run's.
const MaxLookBack = 400

// lookBackUnits lists the units in the order defaults.lookback_periods
// documents them.
var lookBackUnits = []wire.Unit{wire.Day, wire.Week, wire.HalfMonth, wire.Month, wire.Quarter, wire.HalfYear, wire.Year}

func defaultLookBack() map[wire.Unit]int {
	out := make(map[wire.Unit]int, len(DefaultLookBack))
	for u, n := range DefaultLookBack {
		out[u] = n
	}
	return out
}

// lookBackDefaults reads defaults.lookback_periods: a mapping of unit
// names to periods, each replacing the built-in default of its unit.
func lookBackDefaults(d *decoder, n *yaml.Node, path string, into map[wire.Unit]int) {
	fields := make([]field, 0, len(lookBackUnits))
	for _, u := range lookBackUnits {
		fields = append(fields, field{string(u), func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, MaxLookBack); ok {
				into[u] = v
			}
		}})
	}
	d.mapping(n, path, fields)
}

// Dates is the window of civil dates a daily run for a logical date asks
// its provider for (both ends included). Zero Dates (a request that asks
// for no dates) ask for what is current.
type Dates struct {
	From, To time.Time
}

// IsZero reports whether w names no dates.
func (w Dates) IsZero() bool { return w.From.IsZero() }

// String writes the window as YYYY-MM-DD..YYYY-MM-DD ("" when zero).
func (w Dates) String() string {
	if w.IsZero() {
		return ""
	}
	return w.From.Format(time.DateOnly) + ".." + w.To.Format(time.DateOnly)
}

// DailyWindow returns the window a daily run of the dataset for logical
// date d asks for: the dataset's look-back (Ingest.LookBack, or the
// default of its cycle's unit when it has no ingest block) ending on d.
// A dataset whose request asks for no dates gets a zero Dates.
func (ds *Dataset) DailyWindow(d time.Time, defaults Defaults) Dates {
	if ds.Wire != nil && ds.Wire.Span == wire.SpanNone {
		return Dates{}
	}
	unit := ds.unit()
	n := 0
	if ds.Ingest != nil {
		n = ds.Ingest.LookBack
	}
	if n <= 0 {
		n = defaults.lookBack(unit)
	}
	from, to := unit.Window(d, n)
	return Dates{From: from, To: to}
}

// Requests splits a window into the requests a daily run makes: a
// dataset that asks one period a call (data.go.kr basDt={from}) makes one
// request per period of the window, oldest first, any other dataset one
// request for the whole window. A zero window is one request with no
// dates.
func (ds *Dataset) Requests(w Dates) []Dates {
	if w.IsZero() || ds.Wire == nil || ds.Wire.Span != wire.SpanSingle {
		return []Dates{w}
	}
	unit := ds.unit()
	var out []Dates
	for p := unit.Floor(w.From); !p.After(w.To); p = unit.Next(p) {
		out = append(out, Dates{From: p, To: p})
	}
	return out
}

func (ds *Dataset) unit() wire.Unit {
	if ds.Wire != nil && ds.Wire.Cycle.Unit != "" {
		return ds.Wire.Cycle.Unit
	}
	return wire.Day
}

func (def Defaults) lookBack(u wire.Unit) int {
	if n := def.LookBack[u]; n > 0 {
		return n
	}
	if n := DefaultLookBack[u]; n > 0 {
		return n
	}
	return 1
}

// resolveIngest settles a dataset's daily run once its wire facts are
// known: its look-back (declared, or the default of its cycle's unit) and
// the calls a run makes, which the budget gate counts. A declared
// calls_per_run below what the look-back needs is an error, and so is a
// look-back on a request that asks for no dates, or one whose pages are
// more than one ingest may follow.
func (l *loader) resolveIngest(ds *Dataset, pr *Provider) {
	in := ds.Ingest
	if in == nil {
		return
	}
	if pr != nil && pr.Location != nil {
		in.RunsPerDay += repeatedRuns(in.Cron, pr.Location, l.now)
	}
	problem := func(pos Pos, format string, args ...any) {
		l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: pos.Line, Path: pos.Path, Msg: fmt.Sprintf(format, args...)})
	}
	span, pageRows, rowsPerPeriod := wire.SpanRange, 0, 1
	if ds.Wire != nil {
		span, pageRows, rowsPerPeriod = ds.Wire.Span, ds.Wire.PageRows, max(ds.Wire.Coverage.RowsPerPeriod, 1)
	}
	unit := ds.unit()
	if span == wire.SpanNone {
		if in.lookBackDeclared {
			problem(in.lookBackPos, "lookback_periods %d: the request of dataset %q asks for no dates (no {from} or {to} in its params), so a daily run has no window to reach back over; remove the field",
				in.LookBack, ds.ID)
		}
		in.LookBack = 0
	} else if !in.lookBackDeclared {
		in.LookBack = l.reg.Defaults.lookBack(unit)
	}
	requests, pages := 1, 1
	switch {
	case span == wire.SpanSingle:
		// One request a period of the window, each the period's rows
		// over the rows a page holds.
		requests = in.LookBack
		if pageRows > 0 && !ds.Request.FirstPageOnly() {
			pages = (rowsPerPeriod + pageRows - 1) / pageRows
		}
	case span == wire.SpanRange && pageRows > 0 && !ds.Request.FirstPageOnly():
		// A series answers one row a period (coverage.rows_per_period
		// for a service with one row an index a day): the window's rows
		// over the rows a page holds.
		pages = (in.LookBack*rowsPerPeriod + pageRows - 1) / pageRows
	}
	lookBackPos := in.lookBackPos
	if !in.lookBackDeclared {
		lookBackPos = in.Pos
	}
	if max := l.reg.Defaults.MaxPagesPerCall; max > 0 && pages > max {
		problem(lookBackPos, "lookback_periods %d: a daily run would follow %d pages of %d rows, more than defaults.max_pages_per_call %d; shorten the look-back (a backfill fetches long ranges)",
			in.LookBack, pages, pageRows, max)
	}
	need := requests * pages
	if in.callsDeclared {
		if in.CallsPerRun < need {
			problem(in.callsPos, "calls_per_run %d is fewer than the %d calls a daily run makes: %s; raise it (the budget gate counts every call)",
				in.CallsPerRun, need, describeRun(ds, unit, in.LookBack, requests, pages, pageRows))
		}
		return
	}
	in.CallsPerRun = need
}

// describeRun says in words what a daily run asks for.
func describeRun(ds *Dataset, unit wire.Unit, periods, requests, pages, pageRows int) string {
	if requests > 1 {
		return fmt.Sprintf("its request asks one period a call and its look-back is %d %s", periods, unitWord(unit, periods))
	}
	rows := periods
	if ds.Wire != nil && ds.Wire.Coverage.RowsPerPeriod > 1 {
		rows *= ds.Wire.Coverage.RowsPerPeriod
	}
	return fmt.Sprintf("its look-back of %d %s is %d rows, %d pages of %d rows", periods, unitWord(unit, periods), rows, pages, pageRows)
}

func unitWord(u wire.Unit, n int) string {
	w := strings.ReplaceAll(string(u), "_", "-")
	if n != 1 {
		w += "s"
	}
	return w
}

// repeatedRuns is how many more times a schedule fires on a day whose
// clocks fall back than on an ordinary day: Temporal matches the clock of
// the schedule's time zone literally, so a cron whose hour the day repeats
// fires in it twice, and an interval (@every) counts a 25-hour day. (A
// cron in an hour that a spring-forward day skips does not fire that day,
// which only lowers that day's count.)
func repeatedRuns(s cron.Schedule, loc *time.Location, now time.Time) int {
	hours := repeatedHours(loc, now)
	if len(hours) == 0 {
		return 0
	}
	switch s := s.(type) {
	case *cron.SpecSchedule:
		const star = 1 << 63
		n := 0
		for _, h := range hours {
			if s.Hour&(1<<uint(h)) != 0 {
				n++
			}
		}
		return n * bits.OnesCount64(s.Minute&^star)
	case cron.ConstantDelaySchedule:
		if s.Delay <= 0 {
			return 0
		}
		ceil := func(d time.Duration) int { return int((d + s.Delay - 1) / s.Delay) }
		return ceil(25*time.Hour) - ceil(24*time.Hour)
	}
	return 0
}

var (
	repeatedMu    sync.Mutex
	repeatedCache = map[string][]int{}
)

// repeatedHours lists the local hours that occur twice on some day within
// a year either side of now in loc (01:00 in America/Chicago, on the first
// Sunday of November); none for a zone without daylight saving time.
func repeatedHours(loc *time.Location, now time.Time) []int {
	key := loc.String() + now.UTC().Format("2006")
	repeatedMu.Lock()
	defer repeatedMu.Unlock()
	if h, ok := repeatedCache[key]; ok {
		return h
	}
	start := time.Date(now.UTC().Year()-1, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(3, 0, 0)
	seen := map[string]bool{}
	hours := map[int]bool{}
	// Quarter-hour steps: every offset in use is a multiple of 15 minutes.
	for t := start; t.Before(end); t = t.Add(15 * time.Minute) {
		lt := t.In(loc)
		k := lt.Format("2006-01-02T15:04")
		if seen[k] {
			hours[lt.Hour()] = true
		}
		seen[k] = true
	}
	var out []int
	for h := 0; h < 24; h++ {
		if hours[h] {
			out = append(out, h)
		}
	}
	repeatedCache[key] = out
	return out
}

// DailyWindow returns the window a daily run of ds for logical date d asks
// for, with the registry's defaults (see Dataset.DailyWindow).
func (r *Registry) DailyWindow(ds *Dataset, d time.Time) Dates { return ds.DailyWindow(d, r.Defaults) }
