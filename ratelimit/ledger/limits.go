// Package ledger is the arithmetic of Sluice's rate limits, pure: the
// limits of a scope instance (Limits, from its registry declaration), the
// ledger that decides when a call may be sent (Ledger.Reserve: sliding
// windows, the minimum interval, the daily quota in the provider's
// timezone, priorities and chained grants), gives grants back by id
// (Release) and backs off when a provider rejects a call (Penalize).
// Time is a parameter of every method: the ledger reads no clock and
// knows no workflow, so that the limiter workflow (package ratelimit)
// replays it deterministically and the planner predicts with it
// (docs/ratelimit.md).
package ledger

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// Window is "at most Count calls in any sliding window of Length".
type Window struct {
	Length time.Duration `json:"length"`
	Count  int           `json:"count"`
}

// Limits are the effective limits of one scope instance, as the ledger
// enforces them. All durations are already divided by any rate scale.
type Limits struct {
	Windows     []Window      `json:"windows,omitempty"`
	MinInterval time.Duration `json:"min_interval,omitempty"`
	// DailyQuota is the calls allowed per calendar day in Timezone; 0 means
	// none. A requests_per_day limit is a quota that resets at local
	// midnight, as providers count it, not a sliding 24-hour window.
	DailyQuota int    `json:"daily_quota,omitempty"`
	Timezone   string `json:"timezone,omitempty"`
	// Reserved is how much of each day's quota is kept for daily runs and
	// probes (the scope's registry demand, registry.ScopeInstance.Demand):
	// backfill calls get only DailyQuota − Reserved a day.
	Reserved int `json:"reserved,omitempty"`
	// Tolerance is how late after its grant a call may still be sent. The
	// ledger spaces grants by it so that a call sent anywhere in
	// [grant, grant+Tolerance] keeps every window.
	Tolerance time.Duration `json:"tolerance"`
}

// DefaultTolerance is the default slack between a grant and the send.
const DefaultTolerance = 50 * time.Millisecond

// MaxTolerance bounds how far a client widens its tolerance to slow round
// trips, and so how late any grant may be used.
const MaxTolerance = 2 * time.Second

// FromScope derives the limits of a registry scope instance. scale (≥ 1
// for the simulator's --rate-scale; ≤ 0 means 1) multiplies every rate: it
// divides window lengths and the minimum interval; daily quotas are not
// scaled.
func FromScope(s *registry.ScopeInstance, scale float64, tolerance time.Duration) Limits {
	if scale <= 0 {
		scale = 1
	}
	l := Limits{Timezone: s.Provider.Timezone, Tolerance: tolerance}
	for _, w := range s.Limit.Windows {
		if w.Length >= 24*time.Hour {
			if w.Length == 24*time.Hour {
				l.DailyQuota = w.Count
				continue
			}
		}
		l.Windows = append(l.Windows, Window{Length: time.Duration(float64(w.Length) / scale), Count: w.Count})
	}
	if s.Limit.MinInterval > 0 {
		l.MinInterval = time.Duration(float64(s.Limit.MinInterval) / scale)
	}
	return l
}

// Stricter returns the limits that satisfy both a and b: the smaller
// count for a window length present in both, every window of either, the
// longer minimum interval and tolerance, the smaller quota. A misconfigured
// worker can tighten a scope's limits for a while, never loosen them.
func Stricter(a, b Limits) Limits {
	out := Limits{
		MinInterval: max(a.MinInterval, b.MinInterval),
		Tolerance:   max(a.Tolerance, b.Tolerance),
		Timezone:    a.Timezone,
		DailyQuota:  a.DailyQuota,
		Reserved:    max(a.Reserved, b.Reserved),
	}
	if out.Timezone == "" {
		out.Timezone = b.Timezone
	}
	if b.DailyQuota > 0 && (out.DailyQuota == 0 || b.DailyQuota < out.DailyQuota) {
		out.DailyQuota = b.DailyQuota
	}
	byLen := map[time.Duration]int{}
	var order []time.Duration
	for _, w := range append(append([]Window(nil), a.Windows...), b.Windows...) {
		c, ok := byLen[w.Length]
		if !ok {
			order = append(order, w.Length)
			byLen[w.Length] = w.Count
			continue
		}
		byLen[w.Length] = min(c, w.Count)
	}
	for _, length := range order {
		out.Windows = append(out.Windows, Window{Length: length, Count: byLen[length]})
	}
	return out
}

// Validate checks the limits are usable by the ledger.
func (l Limits) Validate() error {
	for _, w := range l.Windows {
		if w.Length <= 0 || w.Count <= 0 {
			return fmt.Errorf("invalid window %d per %s", w.Count, w.Length)
		}
		if w.Count > registry.MaxWindowCount {
			return fmt.Errorf("window %d per %s: the ledger keeps one entry per call of a window, at most %d", w.Count, w.Length, registry.MaxWindowCount)
		}
	}
	if l.MinInterval < 0 || l.Tolerance < 0 || l.DailyQuota < 0 || l.Reserved < 0 {
		return fmt.Errorf("negative limit in %+v", l)
	}
	if l.Timezone != "" {
		if _, err := time.LoadLocation(l.Timezone); err != nil {
			return fmt.Errorf("loading timezone %q: %w", l.Timezone, err)
		}
	}
	return nil
}

// backfillShare is how many calls of a day's quota backfills may use.
func (l Limits) backfillShare() int { return max(l.DailyQuota-l.Reserved, 0) }

// maxLog is how many past grants the ledger must remember.
func (l Limits) maxLog() int {
	n := 1
	for _, w := range l.Windows {
		n = max(n, w.Count)
	}
	return n
}

// Spacing is the average time between calls the limits allow at most:
// the minimum interval, or a window's length over its count, whichever is
// longest.
func (l Limits) Spacing() time.Duration {
	d := l.MinInterval
	for _, w := range l.Windows {
		if w.Count > 0 {
			d = max(d, w.Length/time.Duration(w.Count))
		}
	}
	return d
}

// Location is the quota's timezone (UTC when unset or unknown).
func (l Limits) Location() *time.Location {
	if l.Timezone != "" {
		if z, err := time.LoadLocation(l.Timezone); err == nil {
			return z
		}
	}
	return time.UTC
}

// longest is the longest window or minimum interval of the limits.
func (l Limits) longest() time.Duration {
	c := l.MinInterval
	for _, w := range l.Windows {
		c = max(c, w.Length)
	}
	return c
}

// increaseWindow is the window the backoff's additive increase counts:
// the shortest window, else the minimum interval, else a second.
func (l Limits) increaseWindow() time.Duration {
	var w time.Duration
	for _, win := range l.Windows {
		if w == 0 || win.Length < w {
			w = win.Length
		}
	}
	if w == 0 {
		w = l.MinInterval
	}
	if w <= 0 {
		w = time.Second
	}
	return max(w, time.Millisecond)
}

// Horizon is how far ahead one acquire answer may reserve beyond its first
// burst: the tolerance. An answer that arrives too late to be used then
// wastes one burst of slots, not a window's worth; the client asks again
// at once for the callers still waiting.
func (l Limits) Horizon() time.Duration { return max(l.Tolerance, time.Millisecond) }
