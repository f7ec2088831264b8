package simulator

import (
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator/synth"
)

// window is one enforced limit of a scope instance.
type window struct {
	field  string        // registry field, e.g. requests_per_second
	length time.Duration // scaled by the rate scale; 24h for the daily quota
	count  int
	daily  bool // a requests_per_day quota: calendar day in the provider's timezone, never scaled

	accepted callLog // accepted calls inside the window (enforcement)
	all      callLog // every call inside the window (statistics)
}

// Scope is the exact bookkeeping of one scope instance: sliding-window
// logs, the daily quota, token issuance, blocks and the statistics
// /_sim/stats reports. It is guarded by the simulator's state lock: a
// provider calls its methods inside Host.Locked.
type Scope struct {
	id          string
	provider    string
	inst        *registry.ScopeInstance
	loc         *time.Location
	windows     []*window
	minInterval time.Duration // scaled

	epoch    time.Time
	hasEpoch bool

	// daily quota
	day         synth.Day
	dayAccepted int
	dayAll      int
	// spent is the day a Shape fault spent the quota (0: none); told the
	// day the provider last answered "quota spent" (0: none). Calls on a
	// told day count as calls against a spent quota.
	spent, told       synth.Day
	againstSpentQuota int64

	// acceptedGaps follows the accepted calls, allGaps every call.
	acceptedGaps, allGaps spacing
	// lastCall and lastAccepted are the arrivals of the latest call and
	// the latest accepted one; minGapCalls the two calls of allGaps'
	// smallest gap; firstViolation the first call rejected over a limit
	// with the accepted call before it.
	lastCall, lastAccepted, cur Arrival
	// maxStampLag is the longest a call was stamped after the kernel
	// received it.
	maxStampLag    time.Duration
	minGapCalls    []Arrival
	firstViolation *Violation

	calls, accepted, rejected, rejectedByFault, rejectedElsewhere, blocked int64

	// KIS token issuance (1 a minute per app key, scaled).
	tokenWindow                               time.Duration
	tokenAccepted                             timeQueue
	tokenAll                                  callLog
	tokenRequests, tokensIssued, tokensReused int64
	tokenRejected                             int64

	// UPBIT 418 escalation.
	strikes    timeQueue
	blockUntil int64
	hasBlock   bool
	blocks     int
}

func newScopeState(inst *registry.ScopeInstance, scale float64) *Scope {
	st := &Scope{
		id:       inst.ID,
		provider: inst.Provider.ID,
		inst:     inst,
		loc:      inst.Provider.Location,
	}
	if st.loc == nil {
		st.loc = time.UTC
	}
	for _, w := range inst.Limit.Windows {
		if w.Count <= 0 || w.Length <= 0 {
			continue
		}
		win := &window{field: w.Field, count: w.Count}
		if w.Length == 24*time.Hour {
			win.daily = true
			win.length = w.Length
		} else {
			win.length = scaleDuration(w.Length, scale)
		}
		st.windows = append(st.windows, win)
	}
	st.minInterval = scaleDuration(inst.Limit.MinInterval, scale)
	st.tokenWindow = scaleDuration(time.Minute, scale)
	st.resetCounters()
	return st
}

func scaleDuration(d time.Duration, scale float64) time.Duration {
	if d <= 0 {
		return 0
	}
	s := time.Duration(math.Round(float64(d) / scale))
	if s < 1 {
		s = 1
	}
	return s
}

// resetCounters clears every window, quota and statistic.
func (st *Scope) resetCounters() {
	for _, w := range st.windows {
		w.accepted.reset()
		w.all.reset()
	}
	st.hasEpoch = false
	st.day, st.dayAccepted, st.dayAll = 0, 0, 0
	st.spent, st.told, st.againstSpentQuota = 0, 0, 0
	st.acceptedGaps.reset()
	st.allGaps.reset()
	st.lastCall, st.lastAccepted, st.cur, st.minGapCalls, st.firstViolation, st.maxStampLag = Arrival{}, Arrival{}, Arrival{}, nil, nil, 0
	st.calls, st.accepted, st.rejected, st.rejectedByFault, st.rejectedElsewhere, st.blocked = 0, 0, 0, 0, 0, 0
	st.tokenAccepted.reset()
	st.tokenAll.reset()
	st.tokenRequests, st.tokensIssued, st.tokensReused, st.tokenRejected = 0, 0, 0, 0
	st.strikes.reset()
	st.hasBlock, st.blocks = false, 0
}

// clock converts now into nanoseconds since the scope's epoch (the first
// call after a reset). Going back in time is clamped by callers' use of
// differences only.
func (st *Scope) clock(now time.Time) int64 {
	if !st.hasEpoch {
		st.epoch, st.hasEpoch = now, true
	}
	return int64(now.Sub(st.epoch))
}

// Verdict is the outcome of checking one call against a scope instance.
type Verdict int

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Admitted:
		return "admitted"
	case OverWindow:
		return "over_window"
	case OverInterval:
		return "over_interval"
	case OverDaily:
		return "over_daily"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Violation is the first call a scope rejected over a declared limit,
// with the accepted call before it: enough to tell which calls came too
// close, when each arrived and from which connection.
type Violation struct {
	// Reason is the verdict (over_window, over_interval, over_daily).
	Reason string `json:"reason"`
	// Field is the limit that bound (a window field,
	// min_interval_seconds, or "blocked").
	Field string `json:"field"`
	// Call is the rejected call.
	Call Arrival `json:"call"`
	// Previous is the accepted call before it, nil if none.
	Previous *Arrival `json:"previous,omitempty"`
}

// The verdicts.
const (
	Admitted     Verdict = iota
	OverWindow           // a sliding window is full
	OverInterval         // the minimum interval has not passed
	OverDaily            // the daily quota is spent
)

// observeArrival is observe for a call whose arrival is known: the
// statistics keep it for the report of the smallest gap and of the first
// violation.
func (st *Scope) observeArrival(now time.Time, a Arrival) int64 {
	prev := st.allGaps.minGap
	seen := st.allGaps.seen
	t := st.observe(now)
	if seen && st.allGaps.minGap != prev {
		st.minGapCalls = []Arrival{st.lastCall, a}
	}
	st.lastCall, st.cur = a, a
	if !a.Kernel.IsZero() {
		st.maxStampLag = max(st.maxStampLag, a.Stamped.Sub(a.Kernel))
	}
	return t
}

// noteViolation records the call being admitted as the first violation,
// unless one is recorded already.
func (st *Scope) noteViolation(v Verdict, field string) {
	if st.firstViolation != nil {
		return
	}
	st.firstViolation = &Violation{Reason: v.String(), Field: field, Call: st.cur}
	if st.acceptedGaps.seen {
		prev := st.lastAccepted
		st.firstViolation.Previous = &prev
	}
}

// observe records a call in the statistics of every window ("as seen by
// the provider": accepted and rejected alike) and rolls the daily quota.
func (st *Scope) observe(now time.Time) int64 {
	t := st.clock(now)
	st.calls++
	st.rollDay(now)
	st.dayAll++
	if st.told != 0 && st.told == st.day {
		st.againstSpentQuota++
	}
	st.logCall(t, st.dayAll, func(w *window) *callLog { return &w.all })
	st.allGaps.note(t)
	return t
}

// logCall logs a call at t in the log of every window that pick chooses:
// a sliding window's log takes it (its calls at or before the window's
// start dropped), a daily window's peak rises to day, the calls of the
// day so far.
func (st *Scope) logCall(t int64, day int, pick func(*window) *callLog) {
	for _, w := range st.windows {
		l := pick(w)
		if w.daily {
			l.raise(day)
			continue
		}
		l.add(t, t-int64(w.length))
	}
}

func (st *Scope) rollDay(now time.Time) {
	d := synth.DayOf(now.In(st.loc))
	if d != st.day {
		st.day, st.dayAccepted, st.dayAll = d, 0, 0
	}
}

// dailyField returns the field of the scope's daily quota, or "".
func (st *Scope) dailyField() string {
	for _, w := range st.windows {
		if w.daily {
			return w.field
		}
	}
	return ""
}

// spentByFault returns the daily quota's field when a Shape fault spent
// the quota today (the day observe last rolled to), else "".
func (st *Scope) spentByFault() string {
	if st.spent == 0 || st.spent != st.day {
		return ""
	}
	return st.dailyField()
}

// quotaSpent reports whether today's quota is spent, by calls or by a
// fault.
func (st *Scope) quotaSpent() bool {
	if st.spentByFault() != "" {
		return true
	}
	for _, w := range st.windows {
		if w.daily && st.dayAccepted >= w.count {
			return true
		}
	}
	return false
}

// check decides whether a call at t (from observe) is within the limits,
// each count multiplied by fraction (1 = as declared; below 1 when a fault
// makes the provider stricter than its declaration). It changes nothing.
func (st *Scope) check(t int64, fraction float64) (Verdict, string) {
	for _, w := range st.windows {
		limit := scaledCount(w.count, fraction)
		if w.daily {
			if st.dayAccepted >= limit {
				return OverDaily, w.field
			}
			continue
		}
		w.accepted.dropThrough(t - int64(w.length))
		if w.accepted.len() >= limit {
			return OverWindow, w.field
		}
	}
	if st.minInterval > 0 && st.acceptedGaps.seen {
		mi := st.minInterval
		if fraction > 0 && fraction < 1 {
			mi = time.Duration(float64(mi) / fraction)
		}
		if t-st.acceptedGaps.last < int64(mi) {
			return OverInterval, "min_interval_seconds"
		}
	}
	return Admitted, ""
}

func scaledCount(count int, fraction float64) int {
	if fraction <= 0 || fraction >= 1 {
		return count
	}
	n := int(math.Floor(float64(count) * fraction))
	if n < 1 {
		n = 1
	}
	return n
}

// accept commits an Admitted call.
func (st *Scope) accept(t int64) {
	st.accepted++
	st.dayAccepted++
	st.logCall(t, st.dayAccepted, func(w *window) *callLog { return &w.accepted })
	st.acceptedGaps.note(t)
	st.lastAccepted = st.cur
}

// remaining returns how many more calls the tightest sliding window allows
// right now (after t), for UPBIT's Remaining-Req header.
func (st *Scope) remaining(t int64) int {
	best := -1
	for _, w := range st.windows {
		if w.daily {
			continue
		}
		w.accepted.dropThrough(t - int64(w.length))
		r := w.count - w.accepted.len()
		if r < 0 {
			r = 0
		}
		if best < 0 || r < best {
			best = r
		}
	}
	if best < 0 {
		return 0
	}
	return best
}

// TokenRequest applies the one-token-a-minute rule (÷ the rate scale) of
// a provider that issues access tokens (KIS tokenP) and reports whether
// the request may proceed; a refusal counts as a violation.
func (st *Scope) TokenRequest(now time.Time) bool {
	t := st.clock(now)
	st.tokenRequests++
	st.tokenAll.add(t, t-int64(st.tokenWindow))
	st.tokenAccepted.dropThrough(t - int64(st.tokenWindow))
	if st.tokenAccepted.len() >= 1 {
		st.tokenRejected++
		return false
	}
	st.tokenAccepted.push(t)
	return true
}

// TokenIssued counts a token request answered with a new token.
func (st *Scope) TokenIssued() { st.tokensIssued++ }

// TokenReused counts a token request answered with the current token.
func (st *Scope) TokenReused() { st.tokensReused++ }
