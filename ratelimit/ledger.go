package ratelimit

import (
	"slices"
	"time"
)

// Ledger constants.
const (
	// MaxAhead bounds how far after its decision a ledger grants a call;
	// callers whose slot lies further ahead ask again when it comes near
	// (Answer.RetryIn), so slots are decided late, by whoever asks then.
	// It keeps three things small: the calls already granted at the old
	// rate when the backoff lowers it (they are in flight, and rejected);
	// how long a ledger whose state was lost must quarantine (every grant
	// of a run that ended lies at most MaxAhead past its last decision);
	// and how long a later, more urgent caller can be kept behind earlier
	// ones. It is longer than a round trip to the limiter, so a client
	// asking again in time loses no slot.
	MaxAhead = time.Second
	// MaxPause caps how long a provider's wait (Retry-After, an UPBIT
	// block) holds a scope back, whatever the connector reported.
	MaxPause = time.Hour
	// releaseSlack is how many grants beyond the largest window count the
	// log keeps, so that a late answer's grants can be released.
	releaseSlack = 64
	// slack keeps a call out of a window whether the provider counts it
	// closed or half-open.
	slack = time.Millisecond
)

// Grant is one call the ledger allowed: its id (unique within the scope's
// ledger, across continue-as-new and recovered runs) and the time it may be
// sent.
type Grant struct {
	ID uint64    `json:"id"`
	At time.Time `json:"at"`
}

// DayCount is the number of grants counted against one provider-local
// calendar day of a daily quota.
type DayCount struct {
	Day   string `json:"day"` // YYYY-MM-DD in the quota's timezone
	Count int    `json:"count"`
}

// Ledger is the deterministic state of one scope instance's limiter: the
// recent grants, the quota counts per day and the backoff state. It is a
// plain value so that a workflow can carry it across continue-as-new and a
// new run can recover it from the last one. Not safe for concurrent use.
// The zero value is an empty ledger at full rate.
type Ledger struct {
	// Grants holds the most recent grants, ascending by time; at least as
	// many as the largest window count once that many were given.
	Grants []Grant `json:"grants,omitempty"`
	// Trimmed is true once older grants were dropped from the log.
	Trimmed bool `json:"trimmed,omitempty"`
	// NextID is the id of the next grant.
	NextID uint64 `json:"next_id,omitempty"`
	// Days counts grants per provider-local day, for the daily quota: the
	// current day and any later day a grant was given for.
	Days []DayCount `json:"days,omitempty"`

	// Backoff (AIMD). Factor multiplies every rate while backing off (0
	// means 1); it was set at ChangedAt and grows by AdditiveIncrease per
	// window since then (CurrentFactor).
	Factor    float64   `json:"factor,omitempty"`
	ChangedAt time.Time `json:"penalized_at,omitempty"`
	// DecreaseID is NextID at the last decrease: a rejection of a grant
	// with a smaller id answers a call granted before the rate came down,
	// already in flight, and does not decrease it again.
	DecreaseID uint64 `json:"decrease_id,omitempty"`
	// DecreaseHorizon is the latest grant given before the last decrease:
	// a rejection that names no grant counts as in flight until then.
	DecreaseHorizon time.Time `json:"decrease_horizon,omitempty"`
	// PausedUntil holds every grant back after a provider's Retry-After,
	// a block, or a quarantine.
	PausedUntil time.Time `json:"paused_until,omitempty"`

	// Counters, for status, metrics and tests.
	Granted     int64 `json:"granted"`
	Released    int64 `json:"released"`
	Denied      int64 `json:"denied"`
	Penalties   int64 `json:"penalties"`
	Decreases   int64 `json:"decreases,omitempty"`
	Quarantines int64 `json:"quarantines,omitempty"`

	// LegacyLog, LegacyDay and LegacyDayCount are the fields of the
	// ledger before grant ids; Upgrade converts them.
	LegacyLog      []time.Time `json:"log,omitempty"`
	LegacyDay      string      `json:"day,omitempty"`
	LegacyDayCount int         `json:"day_count,omitempty"`
}

// Upgrade converts a ledger carried by an older limiter (grant times
// without ids, one day count) into the current form. Idempotent.
func (l *Ledger) Upgrade() {
	for _, t := range l.LegacyLog {
		l.NextID++
		l.Grants = append(l.Grants, Grant{ID: l.NextID, At: t})
	}
	if l.LegacyDay != "" && l.LegacyDayCount > 0 {
		l.setDay(l.LegacyDay, max(l.dayCount(l.LegacyDay), l.LegacyDayCount))
	}
	l.LegacyLog, l.LegacyDay, l.LegacyDayCount = nil, "", 0
}

// QuotaExhausted says the daily quota leaves no call before ResetAt.
type QuotaExhausted struct {
	ResetAt time.Time `json:"reset_at"`
	Quota   int       `json:"quota"`
}

// Ask is one request for grants.
type Ask struct {
	// N is how many grants are asked for.
	N int
	// MaxWait is how long a call may wait for a daily quota's reset
	// within one answer (at most MaxAhead); past it the quota is reported
	// exhausted.
	MaxWait time.Duration
	// Horizon > 0 bounds how far ahead one answer reserves: after the first
	// grant (and every grant at that same instant) it stops at the first
	// grant later than now+Horizon. A caller whose answer arrived too late
	// to use its grants then wastes at most a horizon's worth of slots.
	Horizon time.Duration
	// Delay holds every grant back until now+Delay (a caller aligning the
	// permits of several scopes).
	Delay time.Duration
}

// Answer is what Reserve grants.
type Answer struct {
	// Grants are the grants given, ascending; fewer than asked when the
	// quota ran out (Quota), the horizon was reached, or the next slot lies
	// beyond MaxAhead (RetryIn).
	Grants []Grant
	// Quota is set when the daily quota leaves no room within MaxWait.
	Quota *QuotaExhausted
	// RetryIn is set when no grant was given because the next slot lies
	// more than MaxAhead ahead: ask again after it.
	RetryIn time.Duration
}

// Reserve grants up to ask.N calls at or after now and returns them.
// Grants are spaced so that calls sent anywhere within
// [grant, grant+lim.Tolerance] keep every window and the minimum interval.
func (l *Ledger) Reserve(now time.Time, lim Limits, ask Ask) Answer {
	loc := lim.location()
	f := l.CurrentFactor(now, lim)
	stretch := func(d time.Duration) time.Duration { return time.Duration(float64(d) / f) }
	keep := lim.maxLog() + releaseSlack
	maxWait := min(max(ask.MaxWait, 0), MaxAhead)
	notBefore := now.Add(max(ask.Delay, 0))
	l.pruneDays(now, loc)
	var ans Answer
	for range ask.N {
		g := notBefore
		if l.PausedUntil.After(g) {
			g = l.PausedUntil
		}
		if k := len(l.Grants); k > 0 {
			last := l.Grants[k-1].At
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
					if t := l.Grants[k-w.Count].At.Add(stretch(w.Length) + lim.Tolerance + slack); t.After(g) {
						g = t
					}
				}
				// Backing off, calls leave evenly spaced instead of in a
				// window's burst: a provider whose real limit is below the
				// declared one then sees a steady, lowered rate, and the
				// factor maps onto a rate (f × C per L).
				if f < 1 {
					if t := last.Add(stretch(w.Length/time.Duration(w.Count)) + slack); t.After(g) {
						g = t
					}
				}
			}
		}
		var day string
		if lim.DailyQuota > 0 {
			day = g.In(loc).Format(time.DateOnly)
			if l.dayCount(day) >= lim.DailyQuota {
				next := nextMidnight(g, loc)
				if next.Sub(now) > maxWait {
					l.Denied += int64(ask.N - len(ans.Grants))
					ans.Quota = &QuotaExhausted{ResetAt: next.UTC(), Quota: lim.DailyQuota}
					return ans
				}
				g = next
				day = g.In(loc).Format(time.DateOnly)
				if l.dayCount(day) >= lim.DailyQuota {
					// Two spent days in a row (a quarantine): ask after the
					// first resets.
					l.Denied += int64(ask.N - len(ans.Grants))
					ans.Quota = &QuotaExhausted{ResetAt: next.UTC(), Quota: lim.DailyQuota}
					return ans
				}
			}
		}
		if g.After(now.Add(MaxAhead)) {
			if len(ans.Grants) == 0 {
				ans.RetryIn = g.Sub(now.Add(MaxAhead))
			}
			return ans
		}
		if ask.Horizon > 0 && len(ans.Grants) > 0 && g.After(now.Add(ask.Horizon)) && !g.Equal(ans.Grants[0].At) {
			return ans
		}
		if lim.DailyQuota > 0 {
			l.setDay(day, l.dayCount(day)+1)
		}
		l.NextID++
		gr := Grant{ID: l.NextID, At: g.UTC()}
		l.Grants = append(l.Grants, gr)
		if len(l.Grants) > keep {
			l.Grants = append(l.Grants[:0], l.Grants[len(l.Grants)-keep:]...)
			l.Trimmed = true
		}
		l.Granted++
		ans.Grants = append(ans.Grants, gr)
	}
	return ans
}

// Release takes back grants a caller will never use (its answer arrived
// too late, its permit expired, or another scope's permit could not be
// held with it), by id: each is removed from the log and from its day's
// count. Removing a grant only leaves the schedule sparser, so every
// remaining and future grant keeps the limits. Ids not in the log are
// ignored — released already, or never given — so a release sent twice
// changes nothing, and never touches another caller's grant. A release
// that would leave a trimmed log shorter than the largest window count is
// ignored too (the slot then stays wasted: safe). It returns how many
// grants were released.
func (l *Ledger) Release(ids []uint64, lim Limits) int {
	loc := lim.location()
	keep := lim.maxLog()
	n := 0
	for _, id := range ids {
		if l.Trimmed && len(l.Grants) <= keep {
			break
		}
		i := slices.IndexFunc(l.Grants, func(g Grant) bool { return g.ID == id })
		if i < 0 {
			continue
		}
		g := l.Grants[i]
		l.Grants = append(l.Grants[:i], l.Grants[i+1:]...)
		l.Released++
		n++
		if lim.DailyQuota > 0 {
			day := g.At.In(loc).Format(time.DateOnly)
			if c := l.dayCount(day); c > 0 {
				l.setDay(day, c-1)
			}
		}
	}
	return n
}

// DayCount returns the grants counted against the provider-local day of t.
func (l *Ledger) DayCount(t time.Time, lim Limits) int {
	return l.dayCount(t.In(lim.location()).Format(time.DateOnly))
}

func (l *Ledger) dayCount(day string) int {
	for _, d := range l.Days {
		if d.Day == day {
			return d.Count
		}
	}
	return 0
}

func (l *Ledger) setDay(day string, n int) {
	for i := range l.Days {
		if l.Days[i].Day == day {
			l.Days[i].Count = n
			return
		}
	}
	l.Days = append(l.Days, DayCount{Day: day, Count: n})
	slices.SortFunc(l.Days, func(a, b DayCount) int {
		switch {
		case a.Day < b.Day:
			return -1
		case a.Day > b.Day:
			return 1
		}
		return 0
	})
}

// pruneDays forgets the counts of days before now's.
func (l *Ledger) pruneDays(now time.Time, loc *time.Location) {
	today := now.In(loc).Format(time.DateOnly)
	l.Days = slices.DeleteFunc(l.Days, func(d DayCount) bool { return d.Day < today })
}

// nextMidnight is the first midnight after t in loc.
func nextMidnight(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// Quarantine makes the ledger safe when the state of the run before it
// cannot be read. That run's grants lie at most MaxAhead past now (its last
// decision was before now), so no grant is given before they have all left
// every window: MaxAhead, plus the widest tolerance a client may use, plus
// the longest window or interval. Their number is unknown, so every quota
// day they could fall in (now's, and the next if MaxAhead reaches it)
// counts as spent. Grant ids start afresh above any earlier run's.
func (l *Ledger) Quarantine(now time.Time, lim Limits) {
	end := now.Add(MaxAhead + maxTolerance + lim.longest() + slack)
	if end.After(l.PausedUntil) {
		l.PausedUntil = end
	}
	if lim.DailyQuota > 0 {
		loc := lim.location()
		for _, t := range []time.Time{now, now.Add(MaxAhead)} {
			day := t.In(loc).Format(time.DateOnly)
			l.setDay(day, max(l.dayCount(day), lim.DailyQuota))
		}
	}
	l.NextID = max(l.NextID, uint64(max(now.UnixNano(), 0)))
	l.Quarantines++
}
