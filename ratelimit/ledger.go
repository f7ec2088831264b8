package ratelimit

import (
	"math"
	"time"
)

// Backoff constants: on a provider's rate-limit answer the ledger halves
// its rate at once (multiplicative decrease) and recovers by a quarter per
// recovery step without a new penalty.
const (
	minFactor     = 1.0 / 64
	recoveryRatio = 1.25
	// releaseSlack is how many grants beyond the largest window count the
	// log keeps, so that a late answer's grants can be released.
	releaseSlack = 64
	// DefaultRecoveryStep is how long the rate must go unpenalized before
	// it recovers by a quarter.
	DefaultRecoveryStep = 30 * time.Second
)

// Ledger is the deterministic state of one scope instance's limiter: the
// recent grants, the day's quota count and the backoff state. It is a plain
// value so that a workflow can carry it across continue-as-new. Not safe
// for concurrent use. The zero value is an empty ledger at full rate.
type Ledger struct {
	// Log holds the most recent grant times, ascending; as many as the
	// largest window count.
	Log []time.Time `json:"log,omitempty"`
	// Trimmed is true once older grants were dropped from the log.
	Trimmed bool `json:"trimmed,omitempty"`
	// Day is the provider-local date (YYYY-MM-DD) DayCount counts for.
	Day      string `json:"day,omitempty"`
	DayCount int    `json:"day_count,omitempty"`
	// Factor multiplies every rate while backing off; 0 means 1.
	Factor      float64   `json:"factor,omitempty"`
	PenalizedAt time.Time `json:"penalized_at,omitempty"`
	// PausedUntil holds every grant back after a provider's Retry-After.
	PausedUntil time.Time `json:"paused_until,omitempty"`
	// Counters, for status and metrics.
	Granted   int64 `json:"granted"`
	Released  int64 `json:"released"`
	Denied    int64 `json:"denied"`
	Penalties int64 `json:"penalties"`
}

// Release takes back grants a caller will never use (its answer arrived
// too late to use them): each is removed from the log, and from the day's
// count. Removing a grant only leaves the schedule sparser, so every
// remaining and future grant keeps the limits; when the released grants
// were the latest, their slots are given out again. Times not in the log
// are ignored, and so are those that would leave a trimmed log shorter
// than the largest window count (the slots then stay wasted: safe).
func (l *Ledger) Release(times []time.Time, lim Limits) {
	loc := time.UTC
	if lim.Timezone != "" {
		if z, err := time.LoadLocation(lim.Timezone); err == nil {
			loc = z
		}
	}
	keep := lim.maxLog()
	for _, t := range times {
		// Only while the log keeps at least a window's count after the
		// removal: the grants before a released one must stay known.
		if l.Trimmed && len(l.Log) <= keep {
			return
		}
		for i := len(l.Log) - 1; i >= 0; i-- {
			if l.Log[i].Equal(t) {
				l.Log = append(l.Log[:i], l.Log[i+1:]...)
				l.Released++
				if lim.DailyQuota > 0 && t.In(loc).Format(time.DateOnly) == l.Day && l.DayCount > 0 {
					l.DayCount--
				}
				break
			}
		}
	}
}

// QuotaExhausted says the daily quota leaves no call before ResetAt.
type QuotaExhausted struct {
	ResetAt time.Time `json:"reset_at"`
	Quota   int       `json:"quota"`
}

// CurrentFactor is the rate multiplier in force at now.
func (l *Ledger) CurrentFactor(now time.Time, step time.Duration) float64 {
	if l.Factor <= 0 || l.Factor >= 1 {
		return 1
	}
	if step <= 0 {
		step = DefaultRecoveryStep
	}
	steps := math.Floor(float64(now.Sub(l.PenalizedAt)) / float64(step))
	if steps < 0 {
		steps = 0
	}
	return math.Min(1, l.Factor*math.Pow(recoveryRatio, steps))
}

// Penalize records a provider's rate-limit answer: the rate halves (down to
// 1/64 of the declared one) and, when the provider said how long to wait,
// no grant is given before then. Rejections arriving within cooldown of the
// last halving are answers to calls sent before it took effect: they are
// counted but do not halve the rate again. It returns the factor in force.
func (l *Ledger) Penalize(now time.Time, retryAfter, step, cooldown time.Duration) float64 {
	l.Penalties++
	if until := now.Add(retryAfter); retryAfter > 0 && until.After(l.PausedUntil) {
		l.PausedUntil = until
	}
	cur := l.CurrentFactor(now, step)
	if cur < 1 && now.Before(l.PenalizedAt.Add(time.Duration(float64(cooldown)/cur))) {
		return cur
	}
	f := math.Max(minFactor, cur/2)
	l.Factor, l.PenalizedAt = f, now
	return f
}

// Reserve grants up to n calls at or after now and returns their times,
// ascending. Grants are spaced so that calls sent anywhere within
// [grant, grant+lim.Tolerance] keep every window and the minimum interval.
// When the daily quota leaves no room for a grant within maxWait, Reserve
// stops and reports the quota: the caller gets fewer than n grants.
//
// A horizon > 0 bounds how far ahead one call reserves: after the first
// grant (and every grant at that same instant), Reserve stops at the first
// grant later than now+horizon and returns what it has. A caller whose
// answer arrived too late to use its grants then wastes at most a
// horizon's worth of slots.
func (l *Ledger) Reserve(now time.Time, lim Limits, n int, maxWait, step, horizon time.Duration) ([]time.Time, *QuotaExhausted) {
	loc := time.UTC
	if lim.Timezone != "" {
		if z, err := time.LoadLocation(lim.Timezone); err == nil {
			loc = z
		}
	}
	f := l.CurrentFactor(now, step)
	stretch := func(d time.Duration) time.Duration { return time.Duration(float64(d) / f) }
	// A millisecond of slack keeps a call out of the window whether the
	// provider counts it closed or half-open.
	const slack = time.Millisecond
	// Keep some history beyond the largest window count, so that released
	// grants leave the grants before them in the log.
	keep := lim.maxLog() + releaseSlack
	var out []time.Time
	for range n {
		g := now
		if l.PausedUntil.After(g) {
			g = l.PausedUntil
		}
		if k := len(l.Log); k > 0 {
			last := l.Log[k-1]
			if last.After(g) {
				g = last
			}
			if lim.MinInterval > 0 {
				if t := last.Add(stretch(lim.MinInterval) + lim.Tolerance + slack); t.After(g) {
					g = t
				}
			}
			for _, w := range lim.Windows {
				if k >= w.Count {
					if t := l.Log[k-w.Count].Add(stretch(w.Length) + lim.Tolerance + slack); t.After(g) {
						g = t
					}
				}
				// Backing off, calls leave evenly spaced instead of in a
				// window's burst: a provider whose real limit is below the
				// declared one then sees a steady, lowered rate.
				if f < 1 {
					if t := last.Add(stretch(w.Length/time.Duration(w.Count)) + lim.Tolerance + slack); t.After(g) {
						g = t
					}
				}
			}
		}
		if lim.DailyQuota > 0 {
			day := g.In(loc).Format(time.DateOnly)
			if day == l.Day && l.DayCount >= lim.DailyQuota {
				y, m, d := g.In(loc).Date()
				next := time.Date(y, m, d+1, 0, 0, 0, 0, loc)
				if next.Sub(now) > maxWait {
					l.Denied += int64(n - len(out))
					return out, &QuotaExhausted{ResetAt: next.UTC(), Quota: lim.DailyQuota}
				}
				g = next
				day = g.In(loc).Format(time.DateOnly)
			}
			if day != l.Day {
				l.Day, l.DayCount = day, 0
			}
			l.DayCount++
		}
		if horizon > 0 && len(out) > 0 && g.After(now.Add(horizon)) && !g.Equal(out[0]) {
			if lim.DailyQuota > 0 {
				l.DayCount-- // not granted after all
			}
			return out, nil
		}
		l.Log = append(l.Log, g.UTC())
		if len(l.Log) > keep {
			l.Log = append(l.Log[:0], l.Log[len(l.Log)-keep:]...)
			l.Trimmed = true
		}
		l.Granted++
		out = append(out, g.UTC())
	}
	return out, nil
}

// Cooldown is how long after a halving further rejections are taken as
// answers to calls already under way: the longest window or minimum
// interval of the limits, plus the tolerance (Penalize stretches it by the
// factor in force).
func (l Limits) Cooldown() time.Duration {
	c := l.MinInterval
	for _, w := range l.Windows {
		c = max(c, w.Length)
	}
	return c + l.Tolerance
}
