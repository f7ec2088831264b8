// Package planner says what a backfill or a daily run will cost before it
// runs: it cuts each dataset's range into chunks aligned to the calendar
// boundaries one call (or a few pages) can serve, as the dataset's wire
// facts declare (wire.Coverage), counts the calls each chunk makes, and
// predicts, per scope instance, the provider-days and the makespan at the
// declared limits with the limiter's own arithmetic (ledger.Ledger).
//
// The package is pure: no I/O, no clock; the run's start is a parameter.
package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// Input selects what a backfill covers.
type Input struct {
	// From and To are civil dates, both included.
	From, To time.Time
	// Providers and Datasets filter the registry; empty filters mean the
	// whole registry (every dataset whose request asks for dates).
	Providers, Datasets []string
	// Start is when the run starts, for the makespan and the days it
	// spans; zero means at the start of a provider-local day.
	Start time.Time
	// RateScale multiplies every rate as the simulator's --rate-scale
	// does (≤ 0 means 1); daily quotas are not scaled.
	RateScale float64
	// Tolerance is the limiter's send tolerance; 0 means
	// ledger.DefaultTolerance.
	Tolerance time.Duration
}

// Chunk is one object a run lands: a dataset's range and the provider
// calls it takes.
type Chunk struct {
	Dataset  string `json:"dataset"`
	Provider string `json:"provider"`
	// From and To are YYYY-MM-DD, both included; "" for a request that
	// asks no dates.
	From string `json:"from"`
	To   string `json:"to"`
	// Calls is the planned provider calls: the pages the chunk's rows
	// take at the dataset's rows a page.
	Calls int `json:"calls"`
	// Rows is the most rows the chunk holds, the bound Calls is counted
	// from.
	Rows int `json:"rows"`
	// Scopes are the scope instance ids every call counts against.
	Scopes []string `json:"scopes"`
}

// ScopePlan is what a run costs one scope instance.
type ScopePlan struct {
	Scope    string   `json:"scope"`
	Provider string   `json:"provider"`
	Datasets []string `json:"datasets"`
	Chunks   int      `json:"chunks"`
	Calls    int      `json:"calls"`
	// DailyQuota is the calls a provider-local day allows (the
	// requests_per_day window); 0 when none is declared.
	DailyQuota int `json:"daily_quota"`
	// Unknown lists the limit fields declared unknown and planned at
	// defaults.unknown_limits, as the budget gate does.
	Unknown []string `json:"unknown,omitempty"`
	// Reserved is the day's reserved demand: scheduled ingests and probes
	// (with the probe headroom), as the budget gate counts it.
	Reserved registry.Demand `json:"reserved"`
	// Share is the calls a day the run may use: for a backfill the quota
	// less the reserved demand, for a daily run the quota; 0 with
	// DailyQuota 0 means unbounded.
	Share int `json:"share"`
	// ProviderDays is how many provider-local days the run's calls span.
	ProviderDays int `json:"provider_days"`
	// Makespan is the predicted time from the start to the last call's
	// grant at the declared limits.
	Makespan time.Duration `json:"makespan_ns"`
	// Stalled is true when the share is spent by reserved demand alone:
	// the run can never finish at these limits.
	Stalled bool `json:"stalled,omitempty"`
}

// Totals sum a plan.
type Totals struct {
	Datasets int `json:"datasets"`
	Chunks   int `json:"chunks"`
	Calls    int `json:"calls"`
	// ProviderDays is the most provider-days any scope needs.
	ProviderDays int `json:"provider_days"`
	// Makespan is the longest scope's makespan: scopes run side by side.
	Makespan time.Duration `json:"makespan_ns"`
	// OneCallPerDay is what one call per dataset per day of the range
	// would cost (a backfill plan only), and Ratio is it over Calls.
	OneCallPerDay int     `json:"one_call_per_day,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"`
	// Stalled is true when some scope can never finish.
	Stalled bool `json:"stalled,omitempty"`
}

// Plan is what a run will cost.
type Plan struct {
	// Kind is "backfill" or "daily".
	Kind string `json:"kind"`
	// From and To are the range (a backfill) or the date (a daily run).
	From   string      `json:"from"`
	To     string      `json:"to"`
	Chunks []Chunk     `json:"chunks"` // by dataset, then From
	Scopes []ScopePlan `json:"scopes"` // by scope id
	Totals Totals      `json:"totals"`
}

// Backfill plans the backfill of in.From..in.To over the selected
// datasets: every dataset whose request asks for dates is cut into
// chunks (Cut); a dataset that asks for no dates cannot be backfilled
// and is left out unless named in in.Datasets, which is an error.
func Backfill(reg *registry.Registry, in Input) (*Plan, error) {
	from, to := civil(in.From), civil(in.To)
	if in.From.IsZero() || in.To.IsZero() {
		return nil, fmt.Errorf("planning backfill: from and to are required")
	}
	if to.Before(from) {
		return nil, fmt.Errorf("planning backfill: to %s is before from %s", to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	sel, err := selectDatasets(reg, in.Providers, in.Datasets)
	if err != nil {
		return nil, fmt.Errorf("planning backfill: %w", err)
	}
	p := &Plan{Kind: "backfill", From: from.Format(time.DateOnly), To: to.Format(time.DateOnly)}
	days := int(to.Sub(from)/(24*time.Hour)) + 1
	for _, ds := range sel {
		if !backfillable(ds) {
			if slices.Contains(in.Datasets, ds.ID) {
				return nil, fmt.Errorf("planning backfill: dataset %q asks for no dates (its request has no {from}/{to}): it cannot be backfilled", ds.ID)
			}
			continue
		}
		p.Totals.Datasets++
		p.Totals.OneCallPerDay += days
		scopes := scopeIDs(reg, ds)
		for _, r := range datasetChunks(ds, from, to) {
			rows := Rows(ds.Wire.Coverage, ds.Wire.Cycle.Unit, r.From, r.To)
			p.Chunks = append(p.Chunks, Chunk{Dataset: ds.ID, Provider: ds.Provider,
				From: r.From.Format(time.DateOnly), To: r.To.Format(time.DateOnly),
				Calls: calls(ds, rows), Rows: rows, Scopes: scopes})
		}
	}
	p.finish(reg, in, true)
	return p, nil
}

// Daily plans the daily run for logical date date over the selected
// datasets (every dataset with a request when both filters are empty):
// each dataset's look-back window, one chunk per request it makes.
func Daily(reg *registry.Registry, date time.Time, providers, datasets []string) (*Plan, error) {
	return DailyWith(reg, Input{From: date, To: date, Providers: providers, Datasets: datasets})
}

// DailyWith is Daily with the start, rate scale and tolerance of in
// (in.From is the logical date).
func DailyWith(reg *registry.Registry, in Input) (*Plan, error) {
	if in.From.IsZero() {
		return nil, fmt.Errorf("planning daily run: a date is required")
	}
	date := civil(in.From)
	sel, err := selectDatasets(reg, in.Providers, in.Datasets)
	if err != nil {
		return nil, fmt.Errorf("planning daily run: %w", err)
	}
	p := &Plan{Kind: "daily", From: date.Format(time.DateOnly), To: date.Format(time.DateOnly)}
	for _, ds := range sel {
		if !ds.Request.Declared() {
			continue
		}
		p.Totals.Datasets++
		scopes := scopeIDs(reg, ds)
		w := reg.DailyWindow(ds, date)
		for _, r := range ds.Requests(w) {
			c := Chunk{Dataset: ds.ID, Provider: ds.Provider, Calls: 1, Scopes: scopes}
			if !r.IsZero() {
				c.From, c.To = r.From.Format(time.DateOnly), r.To.Format(time.DateOnly)
				if ds.Wire != nil {
					c.Rows = Rows(ds.Wire.Coverage, ds.Wire.Cycle.Unit, r.From, r.To)
					c.Calls = calls(ds, c.Rows)
				}
			}
			p.Chunks = append(p.Chunks, c)
		}
	}
	p.finish(reg, in, false)
	return p, nil
}

// backfillable reports whether a dataset's request asks for dates.
func backfillable(ds *registry.Dataset) bool {
	return ds.Request.Declared() && ds.Wire != nil && ds.Wire.Span != wire.SpanNone
}

// datasetChunks cuts a dataset's range: by its coverage, or one period a
// chunk for a request that asks one period a call.
func datasetChunks(ds *registry.Dataset, from, to time.Time) []Range {
	cov := ds.Wire.Coverage
	if ds.Wire.Span == wire.SpanSingle {
		cov = wire.Coverage{Align: ds.Wire.Cycle.Unit, Periods: 1}
	}
	return Cut(cov, from, to)
}

// calls is how many calls rows take for the dataset: its pages, one for a
// dataset that reads the first page only.
func calls(ds *registry.Dataset, rows int) int {
	if ds.Request.FirstPageOnly() || ds.Wire == nil {
		return 1
	}
	return Pages(rows, ds.Wire.PageRows)
}

func scopeIDs(reg *registry.Registry, ds *registry.Dataset) []string {
	var out []string
	for _, s := range reg.ScopesFor(ds.ID) {
		out = append(out, s.ID)
	}
	return out
}

// selectDatasets applies the filters; an unknown provider or dataset is
// an error naming it.
func selectDatasets(reg *registry.Registry, providers, datasets []string) ([]*registry.Dataset, error) {
	for _, p := range providers {
		if reg.Provider(p) == nil {
			var ids []string
			for _, pr := range reg.Providers {
				ids = append(ids, pr.ID)
			}
			return nil, fmt.Errorf("unknown provider %q (known: %v)", p, ids)
		}
	}
	for _, d := range datasets {
		if reg.Dataset(d) == nil {
			return nil, fmt.Errorf("unknown dataset %q", d)
		}
	}
	var out []*registry.Dataset
	for _, ds := range reg.Datasets {
		if len(providers) > 0 && !slices.Contains(providers, ds.Provider) {
			continue
		}
		if len(datasets) > 0 && !slices.Contains(datasets, ds.ID) {
			continue
		}
		out = append(out, ds)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the filters (providers %v, datasets %v) select no dataset", providers, datasets)
	}
	return out, nil
}

// finish sorts the chunks and fills in the scope plans and totals.
func (p *Plan) finish(reg *registry.Registry, in Input, backfill bool) {
	sort.SliceStable(p.Chunks, func(i, j int) bool {
		if p.Chunks[i].Dataset != p.Chunks[j].Dataset {
			return p.Chunks[i].Dataset < p.Chunks[j].Dataset
		}
		return p.Chunks[i].From < p.Chunks[j].From
	})
	byScope := map[string]*ScopePlan{}
	seen := map[string]map[string]bool{}
	headroom := reg.Defaults.ProbeHeadroom
	for _, c := range p.Chunks {
		p.Totals.Chunks++
		p.Totals.Calls += c.Calls
		for _, id := range c.Scopes {
			sp := byScope[id]
			if sp == nil {
				s := reg.Scope(id)
				sp = &ScopePlan{Scope: id, Provider: s.Provider.ID, Unknown: s.Unknowns(), Reserved: s.Demand(headroom)}
				if w, ok := s.Limit.Window(24 * time.Hour); ok {
					sp.DailyQuota = w.Count
				}
				sp.Share = sp.DailyQuota
				if backfill && sp.DailyQuota > 0 {
					sp.Share = sp.DailyQuota - sp.Reserved.Total
					if sp.Share <= 0 {
						sp.Share, sp.Stalled = 0, true
					}
				}
				byScope[id] = sp
				seen[id] = map[string]bool{}
			}
			if !seen[id][c.Dataset] {
				seen[id][c.Dataset] = true
				sp.Datasets = append(sp.Datasets, c.Dataset)
			}
			sp.Chunks++
			sp.Calls += c.Calls
		}
	}
	for _, sp := range byScope {
		p.Scopes = append(p.Scopes, *sp)
	}
	sort.Slice(p.Scopes, func(i, j int) bool { return p.Scopes[i].Scope < p.Scopes[j].Scope })
	predict(reg, p, in)
	for _, sp := range p.Scopes {
		p.Totals.ProviderDays = max(p.Totals.ProviderDays, sp.ProviderDays)
		p.Totals.Makespan = max(p.Totals.Makespan, sp.Makespan)
		p.Totals.Stalled = p.Totals.Stalled || sp.Stalled
	}
	if backfill && p.Totals.Calls > 0 {
		p.Totals.Ratio = float64(p.Totals.OneCallPerDay) / float64(p.Totals.Calls)
	}
}

// limitsOf is the ledger's limits of a scope plan: the scope's declared
// limits at the rate scale, the daily quota replaced by the share.
func limitsOf(s *registry.ScopeInstance, sp *ScopePlan, in Input) ledger.Limits {
	tol := in.Tolerance
	if tol <= 0 {
		tol = ledger.DefaultTolerance
	}
	lim := ledger.FromScope(s, in.RateScale, tol)
	if lim.DailyQuota > 0 {
		lim.DailyQuota = sp.Share
	}
	return lim
}
