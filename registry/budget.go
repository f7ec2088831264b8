package registry

import (
	"fmt"
	"math"
	"strings"
)

// budgetGate rejects every scope instance whose daily demand exceeds any of
// its limits (docs/registry.md, "The registry's rules" 4). Each violation names the dataset that
// contributes most, where its demand is declared, the computed demand and
// the limit.
func (l *loader) budgetGate() {
	headroom := l.reg.Defaults.ProbeHeadroom
	for _, s := range l.reg.Scopes {
		dem := s.Demand(headroom)
		if dem.Total == 0 {
			continue
		}
		for _, c := range constraints(s.Limit) {
			if float64(dem.Total) <= c.perDay {
				continue
			}
			at := heaviest(s, headroom)
			msg := fmt.Sprintf("scope %s: daily demand %s (probes %s ×%d = %s + ingest %s) exceeds %s; datasets: %s",
				s.ID, group(dem.Total), group(dem.Probes), headroom, group(dem.ProbeCalls), group(dem.IngestCalls),
				c.describe, scopeSummary(s))
			l.errs = append(l.errs, Problem{File: at.File, Line: at.Line, Path: at.Path, Msg: msg})
		}
	}
}

type constraint struct {
	perDay   float64
	describe string
}

// constraints lists what bounds a limit's calls a day: each window and the
// minimum interval.
func constraints(rl *RateLimit) []constraint {
	var out []constraint
	for _, w := range rl.Windows {
		d := fmt.Sprintf("%s %s", w.Field, group(w.Count))
		if w.Length != 24*60*60*1e9 {
			d += fmt.Sprintf(" (%s a day)", group(int(math.Floor(w.PerDay()))))
		}
		if w.Defaulted {
			d += " — unknown, so the conservative default from defaults.unknown_limits applies"
		}
		d += " (" + w.Pos.String() + ")"
		out = append(out, constraint{perDay: math.Floor(w.PerDay()), describe: d})
	}
	if rl.MinInterval > 0 {
		perDay := math.Floor(float64(24*60*60*1e9) / float64(rl.MinInterval))
		d := fmt.Sprintf("min_interval_seconds %s (%s a day)", fmtSeconds(rl.MinInterval), group(int(perDay)))
		if rl.MinIntervalUnknown || rl.AllUnknown {
			d += " — unknown, so the conservative default from defaults.unknown_limits applies"
		}
		pos := rl.MinIntervalPos
		if pos.File == "" {
			pos = rl.Pos
		}
		d += " (" + pos.String() + ")"
		out = append(out, constraint{perDay: perDay, describe: d})
	}
	return out
}

// heaviest returns where the dataset contributing the most daily calls to
// the scope declares them.
func heaviest(s *ScopeInstance, headroom int) Pos {
	var best *Dataset
	bestCalls := -1
	for _, d := range s.Datasets {
		calls := d.Probe.PerDay()*headroom + d.Ingest.CallsPerDay()
		if calls > bestCalls {
			best, bestCalls = d, calls
		}
	}
	switch {
	case best == nil:
		return s.Declared.Pos
	case best.Probe != nil && best.Probe.PerDay()*headroom >= best.Ingest.CallsPerDay():
		return best.Probe.Pos
	case best.Ingest != nil:
		return best.Ingest.Pos
	}
	return best.Pos
}

// group formats an integer with thousands separators: 6336 → 6,336.
func group(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
