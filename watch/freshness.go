package watch

import (
	"time"

	"github.com/sluicehq/sluice/registry"
)

// Freshness says when a dataset's newest period is late: a period is due
// in the answer Lag after it ends (in Location), and the answer may trail
// the newest due period by Tolerance periods (holidays the rule does not
// know) before it counts as late.
type Freshness struct {
	Cycle Cycle // "" disables the check
	// Lag is how long after a period ends its value is expected in the
	// provider's answer (the publication lag).
	Lag time.Duration
	// Weekdays: a daily series with no Saturday or Sunday periods (market
	// and business-day data).
	Weekdays bool
	// Tolerance is how many periods (weekdays for a Weekdays series) the
	// newest may trail the due one, for public holidays.
	Tolerance int
	Location  *time.Location // where periods begin and end; nil: UTC
}

// Enabled reports whether the dataset's lateness is judged.
func (f Freshness) Enabled() bool { return f.Cycle.Valid() }

func weekend(p Period) bool {
	wd := p.Start.Weekday()
	return wd == time.Saturday || wd == time.Sunday
}

// Due returns the newest period that must have been published by now:
// the latest period whose end plus Lag is not after now.
func (f Freshness) Due(now time.Time) Period {
	loc := f.Location
	if loc == nil {
		loc = time.UTC
	}
	p := PeriodOf(f.Cycle, now.Add(-f.Lag).In(loc)).Prev()
	if f.Weekdays && f.Cycle == Daily {
		for weekend(p) {
			p = p.Prev()
		}
	}
	return p
}

// Oldest returns the oldest newest period that is not late at now: Due
// less Tolerance periods.
func (f Freshness) Oldest(now time.Time) Period {
	p := f.Due(now)
	for i := 0; i < f.Tolerance; i++ {
		p = p.Prev()
		if f.Weekdays && f.Cycle == Daily {
			for weekend(p) {
				p = p.Prev()
			}
		}
	}
	return p
}

// Late reports whether newest is late at now, and the oldest period that
// would not have been. A zero newest is never late (nothing to judge).
func (f Freshness) Late(newest Period, now time.Time) (bool, Period) {
	if !f.Enabled() || newest.IsZero() {
		return false, Period{}
	}
	oldest := f.Oldest(now)
	return newest.Before(oldest), oldest
}

// LagRule is one declared publication-lag default: for a provider (""
// for any) and cycle, the Freshness fields.
type LagRule struct {
	Provider  string
	Cycle     Cycle
	Lag       time.Duration
	Weekdays  bool
	Tolerance int
	Note      string // where the numbers come from
}

const day = 24 * time.Hour

// DefaultLags are the declared publication-lag defaults, most specific
// first: the first rule matching a dataset's provider and cycle applies.
// A dataset overrides Lag with probe.publication_lag_days in the
// registry.
var DefaultLags = []LagRule{
	{Provider: "upbit", Cycle: Daily, Lag: time.Hour,
		Note: "a day's candle closes at 00:00 UTC and is in the next answer; markets trade every day"},
	{Provider: "fred", Cycle: Daily, Lag: day, Weekdays: true, Tolerance: 1,
		Note: "H.15 Treasury yields post the next business day; one US holiday at a time"},
	{Provider: "kis", Cycle: Daily, Lag: day, Weekdays: true, Tolerance: 3,
		Note: "daily chart rows exist at the close; up to three weekday holidays in a row (설날, 추석)"},
	{Provider: "datago", Cycle: Daily, Lag: 36 * time.Hour, Weekdays: true, Tolerance: 3,
		Note: "FSC 시세 rows appear the next business day after 13:00 KST; Korean holidays"},
	{Provider: "ecos", Cycle: Daily, Lag: day, Weekdays: true, Tolerance: 3,
		Note: "ECOS daily tables (rates, FX, markets) fill in by the next business day; Korean holidays"},
	{Cycle: Daily, Lag: day, Weekdays: true, Tolerance: 3, Note: "business-day series by default"},
	{Cycle: SemiMonthly, Lag: 30 * day, Note: "a half-month, published within a month"},
	{Cycle: Monthly, Lag: 60 * day, Note: "ECOS monthly statistics: most within a month, money and credit within two"},
	{Cycle: Quarterly, Lag: 120 * day, Note: "national accounts and quarterly surveys: within four months"},
	{Cycle: SemiAnnual, Lag: 150 * day, Note: "half-yearly statistics: within five months"},
	{Cycle: Annual, Lag: 270 * day, Note: "annual statistics: within nine months of the year's end"},
}

// CycleOf returns the cycle of a dataset's periods: ECOS's request.cycle;
// a KIS chart's FID_PERIOD_DIV_CODE (D, M, Y; D when absent); daily for
// FRED, UPBIT and data.go.kr. "" when unknown (KIS weekly charts, other
// connectors): lateness is then not judged.
func CycleOf(reg *registry.Registry, ds *registry.Dataset) Cycle {
	conn := ds.Provider
	if p := reg.Provider(ds.Provider); p != nil && p.Connector != "" {
		conn = p.Connector
	}
	switch conn {
	case "ecos":
		if c := Cycle(ds.Request.Cycle); c.Valid() {
			return c
		}
		return ""
	case "kis":
		v, ok := ds.Request.Param("FID_PERIOD_DIV_CODE")
		switch {
		case !ok || v == "D":
			return Daily
		case v == "M":
			return Monthly
		case v == "Y":
			return Annual
		}
		return ""
	case "fred", "upbit", "datago":
		return Daily
	}
	return ""
}

// FreshnessFor returns the lateness rule of a dataset: the first
// DefaultLags rule for its provider's connector and cycle, in the
// provider's timezone, with the dataset's probe.publication_lag_days in
// place of the default lag when declared.
func FreshnessFor(reg *registry.Registry, ds *registry.Dataset) Freshness {
	c := CycleOf(reg, ds)
	if c == "" {
		return Freshness{}
	}
	prov := reg.Provider(ds.Provider)
	conn := ds.Provider
	var loc *time.Location
	if prov != nil {
		loc = prov.Location
		if prov.Connector != "" {
			conn = prov.Connector
		}
	}
	f := Freshness{Cycle: c, Location: loc}
	for _, r := range DefaultLags {
		if r.Cycle == c && (r.Provider == "" || r.Provider == conn) {
			f.Lag, f.Weekdays, f.Tolerance = r.Lag, r.Weekdays, r.Tolerance
			break
		}
	}
	if ds.Probe != nil && ds.Probe.PublicationLag > 0 {
		f.Lag = ds.Probe.PublicationLag
	}
	return f
}
