package registry

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/wire"
)

// Freshness is when a provider publishes the periods of one cycle unit:
// a period is due in the provider's answer Lag after it ends (in the
// provider's timezone), and the newest may trail the due one by Tolerance
// periods (holidays the rule does not know) before the watch calls it
// late. It is a fact of the provider, declared in providers.yaml
// (providers[].freshness); a dataset's probe.publication_lag_days
// replaces Lag.
type Freshness struct {
	Unit wire.Unit // the cycle unit the rule is for
	// Lag is the publication lag: how long after a period ends its value
	// is in the answer.
	Lag time.Duration
	// Weekdays: a daily series with no Saturday or Sunday periods
	// (market and business-day data).
	Weekdays bool
	// Tolerance is how many periods (weekdays for a Weekdays series) the
	// newest may trail the due one.
	Tolerance int
	Note      string // where the numbers come from
	// Defaulted reports a rule of DefaultFreshness, the provider having
	// declared none for the unit.
	Defaulted bool
	Pos       Pos
}

// FreshnessUnits are the cycle units a freshness rule may be declared
// for: the units whose periods the watch can judge (not the week).
var FreshnessUnits = []wire.Unit{wire.Day, wire.HalfMonth, wire.Month, wire.Quarter, wire.HalfYear, wire.Year}

// maxLagDays bounds a freshness rule's lag: two years.
const maxLagDays = 731

// maxTolerance bounds a freshness rule's tolerance in periods.
const maxTolerance = 31

// DefaultFreshness are the conservative rules that apply, one a cycle
// unit, to a provider that declares none for a unit its datasets use: its
// late data is still flagged (a business-day series may trail by three
// weekdays, a monthly one by two months, …), and `sluice registry
// validate` lists the provider as needing checking (FindingFreshness).
var DefaultFreshness = []Freshness{
	{Unit: wire.Day, Lag: 24 * time.Hour, Weekdays: true, Tolerance: 3, Note: "default: a business-day series, published by the next day, three holidays in a row"},
	{Unit: wire.HalfMonth, Lag: 30 * 24 * time.Hour, Note: "default: a half-month, published within a month"},
	{Unit: wire.Month, Lag: 60 * 24 * time.Hour, Note: "default: a month, published within two"},
	{Unit: wire.Quarter, Lag: 120 * 24 * time.Hour, Note: "default: a quarter, published within four months"},
	{Unit: wire.HalfYear, Lag: 150 * 24 * time.Hour, Note: "default: a half-year, published within five months"},
	{Unit: wire.Year, Lag: 270 * 24 * time.Hour, Note: "default: a year, published within nine months of its end"},
}

// FreshnessOf returns the rule for cycle unit u of a provider's datasets:
// the provider's own, else DefaultFreshness's with Defaulted set; false
// only for a unit no rule covers (the week, whose lateness the watch
// does not judge).
func (p *Provider) FreshnessOf(u wire.Unit) (Freshness, bool) {
	if p != nil {
		for _, f := range p.Freshness {
			if f.Unit == u {
				return f, true
			}
		}
	}
	for _, f := range DefaultFreshness {
		if f.Unit == u {
			f.Defaulted = true
			return f, true
		}
	}
	return Freshness{}, false
}

// freshness reads a provider's freshness list: one rule a cycle unit,
// each with lag_days or lag_hours (exactly one), optional weekdays,
// tolerance and note.
func (d *decoder) freshness(n *yaml.Node, path string) []Freshness {
	units := make([]string, len(FreshnessUnits))
	for i, u := range FreshnessUnits {
		units[i] = string(u)
	}
	var out []Freshness
	d.sequence(n, path, func(_ int, item *yaml.Node, p string) {
		f := Freshness{Pos: d.pos(item, p)}
		present := d.mapping(item, p, []field{
			{"cycle", func(n *yaml.Node, p string) { f.Unit = wire.Unit(d.oneOf(n, p, units)) }},
			{"lag_days", func(n *yaml.Node, p string) {
				if v, ok := d.days(n, p, maxLagDays); ok {
					f.Lag = v
				}
			}},
			{"lag_hours", func(n *yaml.Node, p string) {
				if v, ok := d.intValue(n, p, 1, maxLagDays*24); ok {
					f.Lag = time.Duration(v) * time.Hour
				}
			}},
			{"weekdays", func(n *yaml.Node, p string) { f.Weekdays, _ = d.boolValue(n, p) }},
			{"tolerance", func(n *yaml.Node, p string) {
				if v, ok := d.intValue(n, p, 0, maxTolerance); ok {
					f.Tolerance = v
				}
			}},
			{"note", func(n *yaml.Node, p string) { f.Note = d.str(n, p) }},
		})
		if present == nil {
			return
		}
		switch {
		case present["cycle"] == nil:
			d.errorf(item, p, "missing field \"cycle\" (one of: %s)", strings.Join(units, ", "))
			return
		case present["lag_days"] != nil && present["lag_hours"] != nil:
			d.errorf(item, p, "both lag_days and lag_hours given: declare the publication lag once")
			return
		case present["lag_days"] == nil && present["lag_hours"] == nil:
			d.errorf(item, p, "missing field \"lag_days\" or \"lag_hours\": how long after a period ends it is in the answer")
			return
		}
		if f.Unit == "" || f.Lag <= 0 {
			return
		}
		if f.Weekdays && f.Unit != wire.Day {
			d.errorf(item, join(p, "weekdays"), "weekdays applies to the day cycle only, not %s", f.Unit)
			return
		}
		for _, prev := range out {
			if prev.Unit == f.Unit {
				d.errorf(item, join(p, "cycle"), "cycle %s declared twice (first at line %d)", f.Unit, prev.Pos.Line)
				return
			}
		}
		out = append(out, f)
	})
	return out
}

// freshnessFindings flags each provider that declares no freshness rule
// for a cycle unit its probed datasets use: their lateness is judged by
// DefaultFreshness, which a person should check against the provider's
// publication calendar; and a probed cycle no rule can judge (the week),
// whose late data is never flagged.
func (l *loader) freshnessFindings(add func(kind, subject string, pos Pos, format string, args ...any)) {
	for _, pr := range l.reg.Providers {
		var units []wire.Unit
		byUnit := map[wire.Unit][]string{}
		for _, ds := range l.reg.Datasets {
			if ds.Provider != pr.ID || ds.Probe == nil || ds.Wire == nil {
				continue
			}
			u := ds.Wire.Cycle.Unit
			if f, ok := pr.FreshnessOf(u); ok && !f.Defaulted {
				continue
			}
			if byUnit[u] == nil {
				units = append(units, u)
			}
			byUnit[u] = append(byUnit[u], ds.ID)
		}
		for _, u := range units {
			f, judged := pr.FreshnessOf(u)
			ids := byUnit[u]
			more := ""
			if len(ids) > 1 {
				more = fmt.Sprintf(" and %d more", len(ids)-1)
			}
			if !judged {
				add(FindingFreshness, pr.ID, pr.Pos, "freshness: the lateness of %s periods is not judged (probed: %s%s): their late data is never flagged", u, ids[0], more)
				continue
			}
			weekdays := ""
			if f.Weekdays {
				weekdays = ", weekdays"
			}
			add(FindingFreshness, pr.ID, pr.Pos,
				"freshness: no rule for cycle %s (probed: %s%s): the default applies (lag %s%s, tolerance %d); declare `- {cycle: %s, lag_days: N}` under freshness",
				u, ids[0], more, fmtLag(f.Lag), weekdays, f.Tolerance, u)
		}
	}
}

// fmtLag writes a lag in days, or hours when shorter than a day or not
// whole days.
func fmtLag(d time.Duration) string {
	unit, n := "hour", d.Hours()
	if d%(24*time.Hour) == 0 {
		unit, n = "day", float64(d/(24*time.Hour))
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%g %s", n, unit)
}
