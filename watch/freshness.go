package watch

import (
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
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

// cycleOfUnit maps a wire cycle unit onto the watch's cycles; the week
// has none (lateness of weekly series is not judged).
var cycleOfUnit = map[wire.Unit]Cycle{
	wire.Day:       Daily,
	wire.HalfMonth: SemiMonthly,
	wire.Month:     Monthly,
	wire.Quarter:   Quarterly,
	wire.HalfYear:  SemiAnnual,
	wire.Year:      Annual,
}

// CycleOf returns the cycle of a dataset's periods: the unit of the cycle
// its connector's wire spec resolved for it (registry.Dataset.Wire: ECOS's
// request.cycle, a KIS chart's FID_PERIOD_DIV_CODE, the one cycle of the
// others). "" when unknown (weekly charts, a dataset whose connector is
// not linked): lateness is then not judged.
func CycleOf(reg *registry.Registry, ds *registry.Dataset) Cycle {
	if ds == nil || ds.Wire == nil {
		return ""
	}
	return cycleOfUnit[ds.Wire.Cycle.Unit]
}

// FreshnessFor returns the lateness rule of a dataset: its provider's
// freshness rule for the dataset's cycle (registry.Provider.Freshness,
// declared in providers.yaml), in the provider's timezone, with the
// dataset's probe.publication_lag_days in place of the rule's lag when
// declared. A provider that declares no rule for the cycle gets
// registry.DefaultFreshness's, which the registry reports as a finding:
// its late data is flagged all the same. Disabled only for a cycle the
// watch cannot judge (CycleOf "").
func FreshnessFor(reg *registry.Registry, ds *registry.Dataset) Freshness {
	c := CycleOf(reg, ds)
	if c == "" {
		return Freshness{}
	}
	prov := reg.Provider(ds.Provider)
	rule, ok := prov.FreshnessOf(ds.Wire.Cycle.Unit)
	if !ok {
		return Freshness{}
	}
	f := Freshness{Cycle: c, Lag: rule.Lag, Weekdays: rule.Weekdays, Tolerance: rule.Tolerance}
	if prov != nil {
		f.Location = prov.Location
	}
	if ds.Probe != nil && ds.Probe.PublicationLag > 0 {
		f.Lag = ds.Probe.PublicationLag
	}
	return f
}
