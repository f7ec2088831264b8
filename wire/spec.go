// Package wire holds, as data, what a connector declares about its
// provider's wire format: the request fields a dataset must and may set,
// how one call is paged and how its date range is written (Spec), and
// where the rows of an answer are, with the fields that hold their period
// and their values (Rows). Extract reads those rows out of a raw answer.
//
// A connector declares one Spec beside its code and registers it
// (connector.Register does, from the connector's init). The registry
// validates every dataset against the Spec of its provider's connector and
// resolves it, with the dataset's own overrides, into the dataset's Facts
// (registry.Dataset.Wire): what a planner needs to cut a date range into
// calls, and what a watch needs to read periods and values.
//
// The package imports nothing of Sluice: the registry and the connectors
// both import it.
package wire

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Spec is one connector's declaration.
type Spec struct {
	// Connector is the registry connector name, e.g. "kis".
	Connector string
	// Fields are the request fields (request.<field> in a dataset file) a
	// dataset of this connector must and may set.
	Fields Fields
	// Paging is how the rows of one request are split into calls.
	Paging Paging
	// Dates is how a call's date range is written and what one row covers.
	Dates Dates
	// Rows is where an answer's rows are and what their fields mean.
	Rows Rows
	// Coverage is what one call can cover: how a planner cuts a long
	// range into calls. A dataset may override it (its coverage block).
	Coverage Coverage
}

// MaxCoveragePeriods bounds Coverage.Periods.
const MaxCoveragePeriods = 400

// Coverage is what one call (or a few pages of it) can cover, declared as
// data so that a planner holds no provider constant: the calendar unit a
// chunk of a long range is aligned to, how many of those units one chunk
// spans, and how many rows a period holds (with the paging's rows a page,
// that gives the pages a chunk takes).
type Coverage struct {
	// Align is the calendar unit a chunk's ends fall on (year for ECOS
	// and FRED, month for KIS, day for UPBIT's candle spans); "" is the
	// dataset's cycle's unit.
	Align Unit
	// Periods is how many Align units one chunk spans at most; 0 means 1.
	// A chunk of several units starts on a unit whose index is a multiple
	// of Periods (months counted from January of year 0, days from
	// 1970-01-01), so that 3 months are calendar quarters and 2 months
	// are January–February, March–April, …
	Periods int
	// RowsPerPeriod is the most rows one period of the dataset's cycle
	// holds: 1 for a series, one row an index a day for data.go.kr's FSC
	// services. 0 means 1.
	RowsPerPeriod int
	// Weekdays reports that a daily cycle has rows on weekdays only (a
	// market calendar): the bound on a chunk's rows counts weekdays.
	Weekdays bool
}

// Resolved returns c with its defaults filled in for a dataset of cycle
// unit u.
//
// An Align that would split one period of the cycle (finer than it, or
// not nesting with a week cycle) becomes the cycle's unit: a connector
// declares its alignment for its common cycle, and a yearly series of it
// is still cut by years.
func (c Coverage) Resolved(u Unit) Coverage {
	if u == "" {
		u = Day
	}
	if c.Align == "" || !c.Align.Holds(u) {
		c.Align, c.Periods = u, 1
	}
	if c.Periods <= 0 {
		c.Periods = 1
	}
	if c.RowsPerPeriod <= 0 {
		c.RowsPerPeriod = 1
	}
	return c
}

// Override applies a dataset's coverage block: each set field replaces
// c's. Weekdays is a pointer so that a dataset can turn it off.
func (c Coverage) Override(o CoverageOverride) Coverage {
	if o.Align != "" {
		c.Align = o.Align
	}
	if o.Periods > 0 {
		c.Periods = o.Periods
	}
	if o.RowsPerPeriod > 0 {
		c.RowsPerPeriod = o.RowsPerPeriod
	}
	if o.Weekdays != nil {
		c.Weekdays = *o.Weekdays
	}
	return c
}

// CoverageOverride is what a dataset's coverage block declares.
type CoverageOverride struct {
	Align         Unit
	Periods       int
	RowsPerPeriod int
	Weekdays      *bool
}

// Days returns the most and the fewest days one unit holds.
func (u Unit) Days() (most, fewest int) {
	switch u {
	case Week:
		return 7, 7
	case HalfMonth:
		return 16, 13
	case Month:
		return 31, 28
	case Quarter:
		return 92, 90
	case HalfYear:
		return 184, 181
	case Year:
		return 366, 365
	}
	return 1, 1
}

// Holds reports whether every unit u is made of whole periods of unit v,
// so that a chunk aligned to u never splits a period of v: days make up
// every unit, weeks only weeks, the calendar units every finer one but
// the week.
func (u Unit) Holds(v Unit) bool {
	switch {
	case u == v || v == Day || v == "":
		return true
	case u == Week || v == Week:
		return false
	}
	_, uf := u.Days()
	vm, _ := v.Days()
	return uf >= vm
}

// Units lists the calendar units, finest first.
var Units = []Unit{Day, Week, HalfMonth, Month, Quarter, HalfYear, Year}

// Fields lists request fields by their registry names (path, tr_id,
// params, stat_code, cycle, items, series_id, market, method, format,
// page_size).
type Fields struct {
	// Required must be set by every dataset.
	Required []string
	// Allowed may be set; a field outside it is an error. It includes
	// Required.
	Allowed []string
}

// Style is how a provider pages an answer too long for one call.
type Style string

// The paging styles.
const (
	// Continuation: the provider keeps the position. An answer whose
	// tr_cont header is F or M has more; the next page is the same
	// request with the header tr_cont: N (KIS).
	Continuation Style = "continuation"
	// RowRange: the request names its first and last row, 1-based and
	// inclusive (ECOS startRow/endRow path segments; list_total_count
	// counts the rows).
	RowRange Style = "row_range"
	// PageNumber: the request names a page and the rows a page holds
	// (data.go.kr pageNo/numOfRows; totalCount counts the rows).
	PageNumber Style = "page_number"
	// Offset: the request names how many rows to skip and the most to
	// return (FRED offset/limit; count counts the rows).
	Offset Style = "offset"
	// Cursor: the request names the exclusive end of what it wants and a
	// count; the next page ends where this one's oldest row starts
	// (UPBIT to/count).
	Cursor Style = "cursor"
)

// Paging is what one call can return.
type Paging struct {
	Style Style
	// Controls are the request parameters, path segments or headers that
	// select a page, in the provider's own words.
	Controls []string
	// DefaultRows is the rows one call asks for when the dataset names no
	// page_size (or the rows the provider answers when it decides).
	DefaultRows int
	// MaxRows is the most rows one call may return; 0 when the provider
	// states none.
	MaxRows int
	// Sizable reports whether a dataset may choose the rows a call asks
	// for (request.page_size); false when the provider decides.
	Sizable bool
}

// Dates is how a call asks for a date range.
type Dates struct {
	// From and To name where the range's ends go, in the provider's words.
	From, To string
	// InParams reports that the dataset's own request.params carry the
	// range as {from}/{to} placeholders: a dataset with only {from} asks
	// one period a call, one with neither asks no range at all.
	InParams bool
	// ToExclusive reports that To is the first instant not asked for
	// (UPBIT's to); otherwise both ends are included.
	ToExclusive bool
	// CycleField is where a dataset picks its cycle: "cycle" for
	// request.cycle, "params.NAME" for the request parameter NAME, "" when
	// every dataset has the first of Cycles.
	CycleField string
	// Cycles are the cycles the connector knows, the default first.
	Cycles []Cycle
}

// Cycle is one periodicity of a provider's rows.
type Cycle struct {
	// Code is how a dataset names it (ECOS A, S, Q, M, SM, D; KIS D, W,
	// M, Y); empty when the provider has one cycle.
	Code string
	// Unit is the stretch of the calendar one row covers.
	Unit Unit
	// Format is how a date of this cycle is written in a request and, when
	// Rows.PeriodFormat is empty, in a row's period field.
	Format Format
}

// Rows is where an answer's rows are and which of their fields a watch
// reads.
type Rows struct {
	// JSON is the dotted path of the rows in a JSON answer: an array of
	// objects, or one object standing for a single row (data.go.kr). ""
	// is the whole answer (UPBIT's top-level array).
	JSON string
	// XML is the dotted path of the row elements in an XML answer,
	// starting at the root element (FRED observations.observation); ""
	// when the provider answers JSON only. A row's fields are its child
	// elements and its attributes.
	XML string
	// Period is the field holding a row's period.
	Period string
	// PeriodFormat is how Period is written; "" means the dataset's
	// cycle's format (resolved in Facts).
	PeriodFormat Format
	// Keys are fields that, with the period, tell the rows of one answer
	// apart (data.go.kr idxNm); absent ones are skipped. Nil when an
	// answer holds one row a period.
	Keys []string
	// Values are the fields a revision compares; absent ones are skipped.
	Values []string
	// NewestFirst reports that the provider lists rows newest first.
	NewestFirst bool
}

// Override is what a dataset may change of its connector's Rows, where one
// provider's services answer differently (data.go.kr): each set field
// replaces the connector's.
type Override struct {
	JSON, XML    string
	Period       string
	PeriodFormat Format
	Keys         []string
	Values       []string
}

// Apply returns r with o's set fields (not "", not nil) in place of r's.
func (o Override) Apply(r Rows) Rows {
	r.JSON = cmp.Or(o.JSON, r.JSON)
	r.XML = cmp.Or(o.XML, r.XML)
	r.Period = cmp.Or(o.Period, r.Period)
	r.PeriodFormat = cmp.Or(o.PeriodFormat, r.PeriodFormat)
	if o.Keys != nil {
		r.Keys = slices.Clone(o.Keys)
	}
	if o.Values != nil {
		r.Values = slices.Clone(o.Values)
	}
	return r
}

// Span is how much of a range one call can ask for.
type Span string

// The spans.
const (
	// SpanRange: a call asks for [from, to]; Paging says how many rows it
	// returns.
	SpanRange Span = "range"
	// SpanSingle: a call asks for one period (data.go.kr basDt={from}).
	SpanSingle Span = "single"
	// SpanNone: a call asks for no dates; it answers what is current
	// (TourAPI's recently modified list).
	SpanNone Span = "none"
)

// Facts are a Spec resolved for one dataset: its cycle picked, its page
// size and row overrides applied. registry.Dataset.Wire holds them.
type Facts struct {
	// Connector is the connector the facts come from.
	Connector string
	// Paging is the connector's paging.
	Paging Paging
	// PageRows is the rows one call of this dataset asks for (or gets).
	PageRows int
	// Dates is the connector's dates.
	Dates Dates
	// Cycle is the dataset's cycle.
	Cycle Cycle
	// Span is how much of a range one call asks for.
	Span Span
	// Rows are the dataset's row facts, PeriodFormat resolved.
	Rows Rows
	// Coverage is what one call covers, the dataset's overrides applied
	// and defaults filled in.
	Coverage Coverage
}

// Resolve returns the facts of a dataset with cycle code cycle ("" for the
// default), page size pageSize (0 for the default), span and overrides o.
func (s *Spec) Resolve(cycle string, pageSize int, span Span, o Override) (Facts, error) {
	f := Facts{Connector: s.Connector, Paging: s.Paging, Dates: s.Dates, Span: span, Rows: o.Apply(s.Rows)}
	f.Paging.Controls = slices.Clone(s.Paging.Controls)
	f.Dates.Cycles = slices.Clone(s.Dates.Cycles)
	c, err := s.Cycle(cycle)
	if err != nil {
		return Facts{}, err
	}
	f.Cycle = c
	if f.Rows.PeriodFormat == "" {
		f.Rows.PeriodFormat = c.Format
	}
	f.PageRows = s.Paging.DefaultRows
	if pageSize > 0 && s.Paging.Sizable {
		f.PageRows = pageSize
	}
	if f.Span == "" {
		f.Span = SpanRange
	}
	f.Coverage = s.Coverage.Resolved(c.Unit)
	return f, nil
}

// Cycle returns the cycle with the given code; "" is the default (the
// first). An unknown code is an error listing the known ones.
func (s *Spec) Cycle(code string) (Cycle, error) {
	if len(s.Dates.Cycles) == 0 {
		return Cycle{Unit: Day}, nil
	}
	if code == "" {
		return s.Dates.Cycles[0], nil
	}
	for _, c := range s.Dates.Cycles {
		if c.Code == code {
			return c, nil
		}
	}
	return Cycle{}, fmt.Errorf("invalid value %q (allowed: %s)", truncate(code, 40), strings.Join(s.CycleCodes(), ", "))
}

// CycleCodes lists the codes of the cycles, in declared order.
func (s *Spec) CycleCodes() []string {
	out := make([]string, 0, len(s.Dates.Cycles))
	for _, c := range s.Dates.Cycles {
		out = append(out, c.Code)
	}
	return out
}

// Check reports what makes a Spec unusable: no connector name, a required
// field that is not allowed, a period format or style that does not
// exist, row facts without a period field.
func (s *Spec) Check() error {
	if s.Connector == "" {
		return fmt.Errorf("wire spec: no connector name")
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("wire spec %s: %s", s.Connector, fmt.Sprintf(format, args...))
	}
	for _, f := range s.Fields.Required {
		if !slices.Contains(s.Fields.Allowed, f) {
			return fail("required field %q is not in Allowed", f)
		}
	}
	switch s.Paging.Style {
	case Continuation, RowRange, PageNumber, Offset, Cursor:
	default:
		return fail("unknown paging style %q", s.Paging.Style)
	}
	if s.Paging.DefaultRows < 1 || (s.Paging.MaxRows > 0 && s.Paging.DefaultRows > s.Paging.MaxRows) {
		return fail("default rows %d must be at least 1 and at most the maximum %d", s.Paging.DefaultRows, s.Paging.MaxRows)
	}
	for _, c := range s.Dates.Cycles {
		if !c.Format.Valid() {
			return fail("cycle %q: unknown format %q", c.Code, c.Format)
		}
	}
	if s.Rows.Period == "" {
		return fail("rows name no period field")
	}
	if a := s.Coverage.Align; a != "" && !slices.Contains(Units, a) {
		return fail("coverage: unknown align unit %q", a)
	}
	if s.Coverage.Periods < 0 || s.Coverage.Periods > MaxCoveragePeriods || s.Coverage.RowsPerPeriod < 0 {
		return fail("coverage: periods %d must be 0..%d and rows per period %d not negative", s.Coverage.Periods, MaxCoveragePeriods, s.Coverage.RowsPerPeriod)
	}
	if s.Rows.PeriodFormat != "" && !s.Rows.PeriodFormat.Valid() {
		return fail("unknown period format %q", s.Rows.PeriodFormat)
	}
	return nil
}

var (
	specsMu sync.RWMutex
	specs   = map[string]*Spec{}
)

// Register makes a connector's Spec known to the registry's validation.
// connector.Register calls it; registering a name twice, or a Spec that
// fails Check, panics, as both are programming errors.
func Register(s Spec) {
	if err := s.Check(); err != nil {
		panic(err.Error())
	}
	specsMu.Lock()
	defer specsMu.Unlock()
	if _, dup := specs[s.Connector]; dup {
		panic("wire: Register called twice for " + s.Connector)
	}
	specs[s.Connector] = &s
}

// Lookup returns the registered Spec of a connector (shared: read it,
// never change it) and whether there is one.
func Lookup(connector string) (*Spec, bool) {
	specsMu.RLock()
	defer specsMu.RUnlock()
	s, ok := specs[connector]
	return s, ok
}

// Registered returns the names of the registered Specs, sorted.
func Registered() []string {
	specsMu.RLock()
	defer specsMu.RUnlock()
	out := make([]string, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
