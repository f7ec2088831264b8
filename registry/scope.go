package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// ScopeInstance is one budget that calls are counted against: a provider's
// rate limit at a scope, and for per-service scopes one service
// (provider/service/<scope_key>). Its Limit has unknown windows filled in
// from the registry's defaults (Window.Unknown stays true).
type ScopeInstance struct {
	ID       string // provider/scope[/key], e.g. datago/service/15073861, kis/key
	Provider *Provider
	Scope    string
	Key      string
	Limit    *RateLimit // effective: unknowns replaced by defaults
	Declared *RateLimit // as declared
	Datasets []*Dataset // sorted by id
}

// Demand is a scope instance's daily call demand.
type Demand struct {
	Probes      int // Σ ⌈1440 / interval⌉
	Headroom    int // the probe headroom multiplier
	ProbeCalls  int // Probes × Headroom
	IngestCalls int // Σ scheduled ingest calls a day
	Total       int // ProbeCalls + IngestCalls
}

// Demand computes the daily demand of the scope instance's datasets.
func (s *ScopeInstance) Demand(headroom int) Demand {
	var d Demand
	d.Headroom = headroom
	for _, ds := range s.Datasets {
		d.Probes += ds.Probe.PerDay()
		d.IngestCalls += ds.Ingest.CallsPerDay()
	}
	d.ProbeCalls = d.Probes * headroom
	d.Total = d.ProbeCalls + d.IngestCalls
	return d
}

// effective returns a copy of rl with unknown windows and interval taken
// from the defaults. An unknown window the defaults do not cover is an
// error: the gate must never treat unknown as unlimited.
func (l *loader) effective(rl *RateLimit) *RateLimit {
	eff := *rl
	eff.Windows = nil
	def := l.reg.Defaults.UnknownLimits
	if rl.AllUnknown {
		for _, w := range def.Windows {
			w.Unknown, w.Defaulted, w.Pos = true, true, rl.Pos
			eff.Windows = append(eff.Windows, w)
		}
		eff.MinInterval = def.MinInterval
		return &eff
	}
	for _, w := range rl.Windows {
		if w.Unknown {
			dw, ok := def.Window(w.Length)
			if !ok {
				l.errs = append(l.errs, Problem{File: w.Pos.File, Line: w.Pos.Line, Path: w.Pos.Path,
					Msg: w.Field + " is unknown, and defaults.unknown_limits declares no " + w.Field + " to apply instead"})
				continue
			}
			w.Count, w.Defaulted = dw.Count, true
		}
		eff.Windows = append(eff.Windows, w)
	}
	if rl.MinIntervalUnknown {
		eff.MinInterval = def.MinInterval
	}
	sort.Slice(eff.Windows, func(i, j int) bool { return eff.Windows[i].Length < eff.Windows[j].Length })
	return &eff
}

func (l *loader) buildScopes() {
	byID := map[string]*ScopeInstance{}
	for _, pr := range l.reg.Providers {
		for _, rl := range pr.RateLimits {
			eff := l.effective(rl)
			if rl.Scope != ScopeService {
				id := pr.ID + "/" + rl.Scope
				byID[id] = &ScopeInstance{ID: id, Provider: pr, Scope: rl.Scope, Limit: eff, Declared: rl}
				continue
			}
			for _, ds := range l.reg.Datasets {
				if ds.Provider != pr.ID || ds.ScopeKey == "" {
					continue
				}
				id := pr.ID + "/" + rl.Scope + "/" + ds.ScopeKey
				if byID[id] == nil {
					byID[id] = &ScopeInstance{ID: id, Provider: pr, Scope: rl.Scope, Key: ds.ScopeKey, Limit: eff, Declared: rl}
				}
			}
		}
	}
	for _, ds := range l.reg.Datasets {
		for _, s := range byID {
			if s.Provider.ID == ds.Provider && (s.Scope != ScopeService || s.Key == ds.ScopeKey) {
				s.Datasets = append(s.Datasets, ds)
			}
		}
	}
	for _, s := range byID {
		sort.Slice(s.Datasets, func(i, j int) bool { return s.Datasets[i].ID < s.Datasets[j].ID })
		l.reg.Scopes = append(l.reg.Scopes, s)
	}
	sort.Slice(l.reg.Scopes, func(i, j int) bool { return l.reg.Scopes[i].ID < l.reg.Scopes[j].ID })
}

// everyDatasetScoped refuses a dataset that counts against no scope
// instance: its calls could never wait for a permit. The checks on
// rate_limits make this unreachable from YAML; it stays as the last line.
func (l *loader) everyDatasetScoped() {
	scoped := map[string]bool{}
	for _, s := range l.reg.Scopes {
		for _, ds := range s.Datasets {
			scoped[ds.ID] = true
		}
	}
	for _, ds := range l.reg.Datasets {
		pr := l.reg.providers[ds.Provider]
		if scoped[ds.ID] || pr == nil || len(pr.RateLimits) == 0 {
			continue // the provider's own problem is reported
		}
		l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: ds.Pos.Line, Path: ds.Pos.Path,
			Msg: fmt.Sprintf("dataset %q counts against no rate-limit scope: provider %s declares no limit that applies to it, so its calls could never hold a permit", ds.ID, ds.Provider)})
	}
}

// MinInterval returns the effective minimum interval between two calls of
// the scope instance, 0 when none.
func (s *ScopeInstance) MinInterval() time.Duration { return s.Limit.MinInterval }

// String returns the scope instance id.
func (s *ScopeInstance) String() string { return s.ID }

// Unknowns lists the YAML fields of the scope's limit declared unknown.
func (s *ScopeInstance) Unknowns() []string {
	if s.Declared.AllUnknown {
		return []string{"rate_limits"}
	}
	var out []string
	for _, w := range s.Declared.Windows {
		if w.Unknown {
			out = append(out, w.Field)
		}
	}
	if s.Declared.MinIntervalUnknown {
		out = append(out, "min_interval_seconds")
	}
	return out
}

func scopeSummary(s *ScopeInstance) string {
	var ids []string
	for _, d := range s.Datasets {
		ids = append(ids, d.ID)
	}
	if len(ids) > 5 {
		ids = append(ids[:5], "…")
	}
	return strings.Join(ids, ", ")
}
