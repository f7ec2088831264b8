package registry

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/sluicehq/sluice/wire"
)

// Dataset is one endpoint Sluice ingests and probes: which provider serves
// it, which scope instance its calls count against, what to request and how
// often.
type Dataset struct {
	ID       string
	Name     string // display name, may be Korean
	Provider string
	// ScopeKey names the instance of a per-service scope the dataset
	// belongs to (the data.go.kr service id); several datasets may share it.
	ScopeKey string
	// ScopeKeyDefaulted is true when a dataset of a per-service provider
	// names no scope_key: it is counted in the shared UnassignedScopeKey
	// budget, the conservative choice, and reported as needing checking.
	ScopeKeyDefaulted bool
	Request           Request
	Probe             *Probe  // nil: never probed
	Ingest            *Ingest // nil: never ingested on a schedule
	// TermsOverride is what the dataset file declares; Terms is the
	// provider's terms with the override applied.
	TermsOverride Terms
	Terms         Terms
	// RowsOverride is what the dataset file's rows block declares: row
	// facts that differ from its connector's (a data.go.kr service whose
	// rows are dated by another field).
	RowsOverride wire.Override
	// CoverageOverride is what the dataset file's coverage block declares:
	// what one call covers where it differs from its connector's (the
	// rows a day of a data.go.kr service holds). Wire.Coverage has it
	// applied.
	CoverageOverride wire.CoverageOverride
	// Maintenance are the dataset's own maintenance windows (its file's
	// maintenance list); its provider's apply too.
	Maintenance []Maintenance
	// BoundsOverride is what the dataset file's bounds block declares;
	// Bounds is its provider's bounds with the override applied, every
	// field set (zero only in a Dataset not built by Load: then
	// Bounds.OrDefault applies).
	BoundsOverride Bounds
	Bounds         Bounds
	// Wire holds the wire facts of the dataset's connector resolved for
	// it (cycle, page size, row facts with RowsOverride applied): what a
	// planner and a watch read. Nil when the dataset declares no request
	// or its connector is not linked into the program (see wire.Register).
	Wire *wire.Facts
	Pos  Pos

	providerPos, scopeKeyPos, rowsPos Pos
	coverageFields                    map[string]Pos
	boundsDecl                        boundsDecl
}

// UnassignedScopeKey is the scope key of the datasets of a per-service
// provider that name no scope_key: they all share one budget.
const UnassignedScopeKey = "unassigned"

// Probe says how often a dataset is probed.
type Probe struct {
	IntervalMinutes int
	// PublicationLag is how long after a period ends its value is
	// expected in the provider's answer (probe.publication_lag_days); 0:
	// the watch's default for the dataset's cycle and provider.
	PublicationLag time.Duration
	Pos            Pos
}

// PerDay is ⌈1440 / interval⌉, the probes a day before headroom.
func (p *Probe) PerDay() int {
	if p == nil || p.IntervalMinutes <= 0 {
		return 0
	}
	return (1440 + p.IntervalMinutes - 1) / p.IntervalMinutes
}

// Ingest is the scheduled ingest of a dataset.
type Ingest struct {
	Schedule string // standard 5-field cron or a descriptor (@daily), in the provider's timezone
	// CallsPerRun is the calls one daily run makes: ingest.calls_per_run
	// when declared (never fewer than the look-back needs), else derived
	// from the wire facts: one request per period for a dataset that asks
	// one period a call, else the look-back's rows over the rows a page
	// holds.
	CallsPerRun int
	// LookBack is how many periods of the dataset's cycle, the logical
	// date's own included, a daily run asks for (ingest.lookback_periods,
	// else the default of the cycle's unit: DefaultLookBack); 0 when the
	// request asks for no dates.
	LookBack int
	// RunsPerDay is the most runs the schedule fires on any one day of
	// the provider's timezone, a day whose clocks fall back included.
	RunsPerDay int
	Cron       cron.Schedule
	Pos        Pos

	lookBackDeclared, callsDeclared bool
	lookBackPos, callsPos           Pos
}

// CallsPerDay is the most calls the schedule makes on any one day.
func (i *Ingest) CallsPerDay() int {
	if i == nil {
		return 0
	}
	return i.RunsPerDay * i.CallsPerRun
}

// Request is what a connector needs to build the dataset's call. Which
// fields apply depends on the provider's connector; loading rejects a field
// the connector does not use and a missing one it needs.
type Request struct {
	Method   string   // GET (default) or POST
	Path     string   // path under the provider's base URL (kis, datago)
	TrID     string   // KIS transaction id header
	Params   []Param  // query parameters in order; values may hold {from} and {to} placeholders
	StatCode string   // ECOS statistic code, e.g. 722Y001
	Cycle    string   // ECOS cycle: A, S, Q, M, SM, D
	Items    []string // ECOS item codes, at most four
	SeriesID string   // FRED series id
	Market   string   // UPBIT market, e.g. KRW-BTC
	Format   string   // json (default) or xml: the format asked of the provider
	PageSize int      // rows per call where the provider pages (ECOS, data.go.kr); 0 = connector default
	// Paging is PagingAll (the default: an ingest follows every page the
	// provider announces) or PagingFirstPage (the dataset is by design
	// the first page of a longer list, such as the newest 100 entries).
	Paging string

	fields     map[string]int // the fields the file declared, with their lines
	paramLines map[string]int // the lines of the params
	reqPos     Pos
	present    bool
}

// Paging values of a dataset's request.paging.
const (
	PagingAll       = "all"
	PagingFirstPage = "first_page"
)

// FirstPageOnly reports whether the dataset declares paging: first_page.
func (r Request) FirstPageOnly() bool { return r.Paging == PagingFirstPage }

// Param is one query parameter.
type Param struct {
	Name  string
	Value string
}

// Declared reports whether the dataset file declared a request block.
func (r Request) Declared() bool { return r.present }

// Param returns the value of the named parameter and whether it is set.
func (r Request) Param(name string) (string, bool) {
	for _, p := range r.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// ExpandParams returns the request's parameters with {from}, {to} and
// {until} placeholders filled in for the given civil dates (see Expand).
func (r Request) ExpandParams(from, to time.Time) []Param {
	out := make([]Param, len(r.Params))
	for i, p := range r.Params {
		v, err := Expand(p.Value, from, to)
		if err != nil {
			// Loading validated every placeholder; an error here means the
			// Request was built by hand. Keep the raw value.
			v = p.Value
		}
		out[i] = Param{Name: p.Name, Value: v}
	}
	return out
}
