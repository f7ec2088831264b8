package ledger

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/ratelimit/permit"
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
	// waitLease is how long a daily caller left waiting counts as waiting
	// after the time it was told to ask again: longer than a round trip to
	// the limiter (the client asks again at once), short enough that a
	// caller that went away holds backfills back for a few seconds only.
	waitLease = MaxAhead + MaxTolerance
	// yieldPoll is when a backfill held back by waiting daily callers asks
	// again.
	yieldPoll = 100 * time.Millisecond
	// ChainMargin is what a chained grant keeps after the answer to its
	// caller's own earlier request, beyond the window and slack
	// (RulesChain). A provider counts a request before it answers it, so
	// the answer bounds the count; the margin is for the callbacks that
	// report it.
	ChainMargin = 2 * time.Millisecond
	// ChainLead places a chained grant at least this much after the
	// earliest moment its chain allows (more when the caller asks for
	// more: Ask.Lead), so that the round trip and wake-up after each send
	// do not accumulate from window to window.
	ChainLead = 3 * time.Millisecond
	// ChainMaxWindow is the longest window (or interval) a grant is
	// chained over; longer ones are spaced from the earlier grant's
	// latest send, whose tolerance they hardly notice, and the caller need
	// not remember its sends that long.
	ChainMaxWindow = time.Minute
	// maxChains bounds the chaining callers a ledger remembers; past it,
	// callers no grant of the log names are forgotten.
	maxChains = 32
)

// Ledger rules. A limiter run records the generation of rules it follows
// (workflow.GetVersion, limiterState.rules, State.Rules), so that a run
// started before a rule changed keeps answering as it did when its
// history is replayed. What each generation does is data (RuleSet,
// ruleSets), not inferred from which fields of a grant are zero: a change
// to the arithmetic is a new generation behind a new version, and
// TestLimiterAnswersReplay fails on one that is not.
const (
	// RulesLegacy: one tolerance for all (the effective one), no
	// priorities, no backfill share.
	RulesLegacy = 0
	// RulesPriority: each grant keeps the latest moment it may be sent
	// (its caller's tolerance), daily calls are served before backfill
	// calls, and backfills use only the quota the day's reserved demand
	// leaves.
	RulesPriority = 1
	// RulesChain: RulesPriority, and a caller that chains (Ask.Chain)
	// gets grants spaced from its own earlier grants' times rather than
	// their latest send moments, each with Links it keeps: it sends no
	// earlier than each link's Gap after its own earlier send. A window's
	// tolerance is then spent once per run of a caller's calls, not per
	// window. Links keep 10 ms beyond the window, the lead is fixed.
	RulesChain = 2
	// RulesAnswer: RulesChain with links anchored at the answer to the
	// caller's earlier request: a link keeps ChainMargin (2 ms) beyond the
	// window, and a chained grant is placed the caller's lead (Ask.Lead,
	// its usual round trip) after what its links allow.
	RulesAnswer = 3
	// RulesWindow: RulesAnswer, and an ask may bound its first grant to a
	// window (Ask.NotBefore, Ask.NotAfter).
	RulesWindow = 4
	// RulesProbe: RulesWindow, and a probe's ask (permit.PriorityProbe)
	// yields to waiting daily callers as a backfill's does — it gets
	// nothing while one waits — without the backfill share: probes are in
	// the reserved demand.
	RulesProbe = 5
	// RulesAhead: RulesProbe, and each chained grant comes with how long
	// before its time it may be sent (Answer.Ahead): as early as every
	// constraint other than the caller's own links allows — the other
	// callers' latest sends, a pause, the backoff, the day's start —
	// since the links keep the caller's own sends apart. A process whose
	// own windows follow its answers then no longer waits for a grant time
	// its acquire's return leg pushed late, and its lateness does not
	// ratchet up from window to window.
	RulesAhead = 6
	// RulesRefill: RulesAhead, and a slot given back while grants after
	// it were already given stays in the log as a free entry (Grant.Free)
	// that a later ask may take over (at a time of its own, up to the
	// next grant's), instead of being lost: grants only move forward, so
	// before, no later grant could use it, and a batch whose calls fill
	// every slot lost a whole window at its end for each such slot.
	RulesRefill = 7
	// RulesLatest is the generation a new limiter run follows.
	RulesLatest = RulesRefill
)

// RuleSet is what one generation of ledger rules does.
type RuleSet struct {
	// Priority: per-grant tolerance (Grant.Late), daily before backfill,
	// the backfill share (RulesPriority).
	Priority bool
	// Chain: chained grants for callers that ask (RulesChain).
	Chain bool
	// ChainMargin is what a link keeps beyond the window and slack.
	ChainMargin time.Duration
	// CallerLead: a chained grant is placed Ask.Lead (at least ChainLead)
	// after its links; otherwise ChainLead.
	CallerLead bool
	// KeepUntil: every chained-rules grant carries its Until; otherwise
	// only one whose Until the running maximum (Late) hides.
	KeepUntil bool
	// Window: Ask.NotBefore and Ask.NotAfter bound the first grant;
	// otherwise they are ignored.
	Window bool
	// ProbeYields: a probe's ask waits behind daily callers (RulesProbe);
	// otherwise it is a daily ask.
	ProbeYields bool
	// Ahead: a chaining caller's grants come with Answer.Ahead
	// (RulesAhead); otherwise a grant is sent no earlier than its time.
	Ahead bool
	// Refill: a grant given back with later grants after it is kept as a
	// free entry that a later ask may take over (RulesRefill); otherwise
	// it is dropped from the log.
	Refill bool
}

// ruleSets are the generations' rules, by generation. An entry never
// changes once a limiter has run with it: a change is a new entry behind a
// new version of rulesChange.
var ruleSets = [...]RuleSet{
	RulesLegacy:   {},
	RulesPriority: {Priority: true},
	// As recorded in workflows/testdata/scope-limiter-v4.json: a 10 ms
	// margin, a fixed lead, Until on every grant.
	RulesChain:  {Priority: true, Chain: true, ChainMargin: 10 * time.Millisecond, KeepUntil: true},
	RulesAnswer: {Priority: true, Chain: true, ChainMargin: ChainMargin, CallerLead: true, KeepUntil: true},
	RulesWindow: {Priority: true, Chain: true, ChainMargin: ChainMargin, CallerLead: true, KeepUntil: true, Window: true},
	RulesProbe:  {Priority: true, Chain: true, ChainMargin: ChainMargin, CallerLead: true, KeepUntil: true, Window: true, ProbeYields: true},
	RulesAhead:  {Priority: true, Chain: true, ChainMargin: ChainMargin, CallerLead: true, KeepUntil: true, Window: true, ProbeYields: true, Ahead: true},
	RulesRefill: {Priority: true, Chain: true, ChainMargin: ChainMargin, CallerLead: true, KeepUntil: true, Window: true, ProbeYields: true, Ahead: true, Refill: true},
}

// Rules returns the rules of generation gen (the latest for a generation
// beyond it, RulesLegacy's below zero).
func Rules(gen int) RuleSet {
	return ruleSets[min(max(gen, 0), len(ruleSets)-1)]
}

// MutateRules changes the rules of generation gen in place and returns
// what restores them. It exists for one test, the replay mutation test
// (ratelimit.TestLimiterAnswersReplay), which proves that a change to a
// generation's arithmetic changes the limiter's recorded answers; nothing
// else calls it: a generation's rules never change once a limiter ran
// with them. Not safe for concurrent use with Reserve.
func MutateRules(gen int, mutate func(*RuleSet)) (restore func()) {
	saved := ruleSets[gen]
	mutate(&ruleSets[gen])
	return func() { ruleSets[gen] = saved }
}

// Grant is one call the ledger allowed: its id (unique within the scope's
// ledger, across continue-as-new and recovered runs) and the time it may be
// sent.
type Grant struct {
	ID uint64    `json:"id"`
	At time.Time `json:"at"`
	// Late (RulesPriority) is the latest moment this grant or any earlier
	// one may be sent: the running maximum of grant + its caller's
	// tolerance. Zero in grants of the legacy rules: At plus the effective
	// tolerance then.
	Late time.Time `json:"late,omitempty"`
	// Backfill says the grant counts against the day's backfill share.
	Backfill bool `json:"backfill,omitempty"`
	// Until (RulesChain) is the latest moment this grant itself may be
	// sent, At plus its caller's tolerance, where that is before Late;
	// zero means Late (a grant of the earlier rules: Late, or At plus the
	// effective tolerance, stands for it).
	Until time.Time `json:"until,omitempty"`
	// Chain (RulesChain) is 1 + the index in Ledger.Chains of the caller
	// the grant went to, when that caller chains its sends; 0 otherwise.
	Chain uint32 `json:"chain,omitempty"`
	// Free (RulesRefill) says the grant was given back: it is never sent,
	// but keeps its place in the log, counted as if it might be, until an
	// ask takes it over (Ledger.refillAt, takeOver) or none can any more
	// (Ledger.settle drops it then, as a given-back grant was before).
	Free bool `json:"free,omitempty"`
}

// Link is what a chained grant keeps of its caller's earlier sends: it
// is sent no earlier than Gap after the latest moment the caller sent
// (wrote) any of its own grants with an id up to ID — or, for a grant the
// caller cannot say it sent or dropped, after its deadline.
type Link struct {
	ID  uint64        `json:"id"`
	Gap time.Duration `json:"gap"`
}

// Waiting is a daily caller that was left waiting by its last answer (the
// horizon, MaxAhead): until Until, backfill calls of the scope get
// nothing.
type Waiting struct {
	Caller string    `json:"caller"`
	Until  time.Time `json:"until"`
}

// DayCount is the number of grants counted against one provider-local
// calendar day of a daily quota.
type DayCount struct {
	Day   string `json:"day"` // YYYY-MM-DD in the quota's timezone
	Count int    `json:"count"`
	// Backfill is how many of Count are backfill grants.
	Backfill int `json:"backfill,omitempty"`
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
	// Waiting are the daily callers waiting for a slot (RulesPriority),
	// sorted by caller.
	Waiting []Waiting `json:"waiting,omitempty"`
	// Chains are the callers that chain their grants (RulesChain), named
	// by Grant.Chain.
	Chains []string `json:"chains,omitempty"`

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
		l.setDay(l.LegacyDay, max(l.day(l.LegacyDay).Count, l.LegacyDayCount))
	}
	l.LegacyLog, l.LegacyDay, l.LegacyDayCount = nil, "", 0
}

// QuotaExhausted says the daily quota leaves no call before ResetAt.
type QuotaExhausted struct {
	ResetAt time.Time `json:"reset_at"`
	Quota   int       `json:"quota"`
	// Backfill says the day's backfill share (Quota: the quota less the
	// reserved daily demand) is spent, not the quota itself.
	Backfill bool `json:"backfill,omitempty"`
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
	// NotBefore and NotAfter (RulesWindow; when not zero) bound the first
	// grant to a window of the ledger's clock: no grant before NotBefore, and none at
	// all when the first slot lies after NotAfter — then the answer names
	// that slot (Answer.Earliest) and the ledger is left as it was. A call
	// that needs several scopes asks each with the window its permits of
	// the scopes before it leave (Gate.hold).
	NotBefore, NotAfter time.Time
	// Delay holds every grant back until now+Delay (a caller aligning the
	// permits of several scopes).
	Delay time.Duration
	// Rules is the generation of ledger rules to follow (RulesLegacy to
	// RulesLatest; Rules). Under RulesLegacy, Priority, Caller and
	// Tolerance are ignored.
	Rules int
	// Priority is the class of the calls asked for: a backfill ask gets
	// nothing while a daily caller waits, and only the day's backfill
	// share of the quota (DailyQuota − Reserved).
	Priority permit.Priority
	// Caller identifies the asking client, for the waiting daily callers.
	Caller string
	// Tolerance is how late after its grant the caller may send (0:
	// lim.Tolerance); the ledger spaces later grants from it.
	Tolerance time.Duration
	// Chain (RulesChain) says the caller keeps the Links of its grants:
	// it remembers when it sent each of its grants, and holds each call
	// back until every link allows it. Needs Caller.
	Chain bool
	// Lead is how much later than its links allow a chained grant is
	// placed, at least ChainLead: the caller's usual round trip, which it
	// spends after each linked answer.
	Lead time.Duration
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
	// more than MaxAhead ahead, or a backfill yielded to daily callers:
	// ask again after it.
	RetryIn time.Duration
	// Yielded says a backfill ask got nothing because daily callers wait.
	Yielded bool
	// Earliest is the first slot when it lies after Ask.NotAfter: nothing
	// was granted.
	Earliest time.Time
	// Links (RulesChain, a chaining caller) are, per grant, the caller's
	// own earlier grants it must keep its distance from.
	Links [][]Link
	// Ahead (RulesAhead, a chaining caller) is, per grant, how long before
	// its time the call may be sent once its links allow it: every
	// constraint but the caller's own earlier grants — the other callers'
	// latest sends, a pause, the day's start — is kept from that earlier
	// moment; under a backoff, 0.
	// It is never more than the grant's time less now.
	Ahead []time.Duration
}

// Reserve grants up to ask.N calls at or after now and returns them.
// Grants are spaced so that calls sent anywhere within
// [grant, grant+lim.Tolerance] keep every window and the minimum interval.
//
// Under RulesPriority, a backfill ask gets no grant while a daily caller of
// the scope waits (it is told to ask again shortly; under RulesProbe a
// probe's ask too), and none beyond the day's backfill share: it gets QuotaExhausted with the provider-local
// midnight instead. A daily ask that leaves callers waiting records its
// caller as waiting; one that leaves none clears it.
func (l *Ledger) Reserve(now time.Time, lim Limits, ask Ask) Answer {
	if !Rules(ask.Rules).Priority {
		return l.reserve(now, lim, ask)
	}
	l.Waiting = slices.DeleteFunc(l.Waiting, func(w Waiting) bool { return !w.Until.After(now) })
	yields := ask.Priority == permit.PriorityBackfill ||
		Rules(ask.Rules).ProbeYields && ask.Priority == permit.PriorityProbe
	if yields && len(l.Waiting) > 0 {
		return Answer{RetryIn: yieldPoll, Yielded: true}
	}
	ans := l.reserve(now, lim, ask)
	if !yields {
		l.setWaiting(ask.Caller, now, ask.N, ans)
	}
	return ans
}

// setWaiting records a daily caller whose answer left some of its calls
// waiting, or clears it.
func (l *Ledger) setWaiting(caller string, now time.Time, asked int, ans Answer) {
	i, found := slices.BinarySearchFunc(l.Waiting, caller, func(w Waiting, c string) int {
		switch {
		case w.Caller < c:
			return -1
		case w.Caller > c:
			return 1
		}
		return 0
	})
	if len(ans.Grants) >= asked || ans.Quota != nil {
		if found {
			l.Waiting = slices.Delete(l.Waiting, i, i+1)
		}
		return
	}
	w := Waiting{Caller: caller, Until: now.Add(ans.RetryIn + waitLease).UTC()}
	if found {
		l.Waiting[i] = w
	} else {
		l.Waiting = slices.Insert(l.Waiting, i, w)
	}
}

// StampLate gives every grant of the log without a latest send moment
// (given under the legacy rules, by a run before) At plus the tolerance
// then in force, as a running maximum, so that callers may lower their
// tolerance under RulesPriority without those grants' slack being
// forgotten.
func (l *Ledger) StampLate(lim Limits) {
	var prev time.Time
	for i := range l.Grants {
		g := &l.Grants[i]
		if g.Late.IsZero() {
			g.Late = g.At.Add(lim.Tolerance).UTC()
		}
		if prev.After(g.Late) {
			g.Late = prev
		}
		prev = g.Late
	}
}

// late is the latest moment grant g, or any grant before it, may be sent.
func late(g Grant, lim Limits) time.Time {
	if !g.Late.IsZero() {
		return g.Late
	}
	return g.At.Add(lim.Tolerance)
}

func (l *Ledger) reserve(now time.Time, lim Limits, ask Ask) Answer {
	loc := lim.Location()
	rules := Rules(ask.Rules)
	priority := rules.Priority
	backfill := priority && ask.Priority == permit.PriorityBackfill
	tol := lim.Tolerance
	if priority && ask.Tolerance > 0 {
		tol = ask.Tolerance
	}
	// A day is full for this ask when its quota is spent, or, for a
	// backfill, its share of it.
	full := func(day string) bool {
		if l.day(day).Count >= lim.DailyQuota {
			return true
		}
		return backfill && l.day(day).Backfill >= lim.backfillShare()
	}
	f := l.CurrentFactor(now, lim)
	stretch := func(d time.Duration) time.Duration { return time.Duration(float64(d) / f) }
	keep := lim.maxLog() + releaseSlack
	maxWait := min(max(ask.MaxWait, 0), MaxAhead)
	notBefore := now.Add(max(ask.Delay, 0))
	notAfter := ask.NotAfter
	if !rules.Window {
		notAfter = time.Time{}
	} else if ask.NotBefore.After(notBefore) {
		notBefore = ask.NotBefore
	}
	l.pruneDays(now, loc)
	var chain uint32
	lead, margin := time.Duration(ChainLead), rules.ChainMargin
	if rules.CallerLead {
		lead = max(ask.Lead, ChainLead)
	}
	if rules.Chain && ask.Chain && ask.Caller != "" {
		chain = l.chainOf(ask.Caller)
	}
	if rules.Refill {
		l.settle(now, lim)
	}
	var ans Answer
	// beyondHorizon says a grant at g would end the answer: a later one
	// than the answer's first burst, past the ask's horizon.
	beyondHorizon := func(g time.Time) bool {
		return ask.Horizon > 0 && len(ans.Grants) > 0 && g.After(now.Add(ask.Horizon)) && !g.Equal(ans.Grants[0].At)
	}
	for range ask.N {
		if rules.Refill && f >= 1 {
			// A free entry first (RulesRefill): its slot lies before every
			// new one.
			p, h, ok := l.refillAt(maxTime(notBefore, l.PausedUntil), lim, full)
			ok = ok && !h.After(now.Add(MaxAhead)) && (notAfter.IsZero() || !h.After(notAfter))
			if ok && !beyondHorizon(h) {
				gr := l.takeOver(p, h, tol, backfill, lim)
				ans.Grants = append(ans.Grants, gr)
				if chain != 0 {
					// Counted by its latest send, as an unchained grant: it
					// links to nothing, and nothing links to it.
					ans.Links = append(ans.Links, nil)
					ans.Ahead = append(ans.Ahead, 0)
				}
				continue
			}
		}
		var links []Link
		g := notBefore
		if l.PausedUntil.After(g) {
			g = l.PausedUntil
		}
		// early is the latest of the constraints other than the caller's
		// links (RulesAhead).
		early := l.PausedUntil
		if k := len(l.Grants); k > 0 {
			last := l.Grants[k-1].At
			if last.After(g) {
				g = last
			}
			// The latest moment the grant before (or the one a window
			// before) may be sent: a grant's own tolerance under
			// RulesPriority, the effective one otherwise.
			lateOf := func(i int) time.Time {
				if priority {
					return late(l.Grants[i], lim)
				}
				return l.Grants[i].At.Add(lim.Tolerance)
			}
			// space is the earliest moment a grant may follow grant i by
			// length: after i's (and every earlier grant's) latest send,
			// or, for a chaining caller, after its own earlier grants' times
			// (the caller keeps the link) and the others' latest sends.
			//
			// It also returns what of that is not the caller's own links
			// (others: RulesAhead): after the latest send of the other
			// callers' grants up to i.
			space := func(i int, length time.Duration) (t, others time.Time) {
				gap := stretch(length) + slack
				if chain == 0 || length > ChainMaxWindow {
					t = lateOf(i).Add(gap)
					return t, t
				}
				other, ownID, ownAt := l.chainFrom(i, chain, margin+lead, lim)
				t = other.Add(gap)
				if ownID != 0 {
					links = append(links, Link{ID: ownID, Gap: gap + margin})
					if o := ownAt.Add(gap + margin + lead); o.After(t) {
						t = o
					}
				}
				if rules.Ahead {
					others = l.othersFrom(i, now.Add(-gap), chain, margin+lead, lim).Add(gap)
				}
				return t, others
			}
			if lim.MinInterval > 0 {
				t, o := space(k-1, lim.MinInterval)
				if t.After(g) {
					g = t
				}
				early = maxTime(early, o)
			}
			for _, w := range lim.Windows {
				if k >= w.Count {
					t, o := space(k-w.Count, w.Length)
					if t.After(g) {
						g = t
					}
					early = maxTime(early, o)
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
			if full(day) {
				next := nextMidnight(g, loc)
				if next.Sub(now) > maxWait {
					l.Denied += int64(ask.N - len(ans.Grants))
					ans.Quota = l.exhausted(next, day, lim, backfill)
					return ans
				}
				g = next
				day = g.In(loc).Format(time.DateOnly)
				if full(day) {
					// Two spent days in a row (a quarantine): ask after the
					// first resets.
					l.Denied += int64(ask.N - len(ans.Grants))
					ans.Quota = l.exhausted(next, day, lim, backfill)
					return ans
				}
			}
		}
		if len(ans.Grants) == 0 && !notAfter.IsZero() && g.After(notAfter) {
			// Outside the asked window: nothing counted (the day counts
			// are set only below).
			ans.Earliest = g.UTC()
			return ans
		}
		if g.After(now.Add(MaxAhead)) {
			if len(ans.Grants) == 0 {
				ans.RetryIn = g.Sub(now.Add(MaxAhead))
			}
			return ans
		}
		if beyondHorizon(g) {
			return ans
		}
		l.count(g, lim, backfill)
		l.NextID++
		gr := Grant{ID: l.NextID, At: g.UTC()}
		if priority {
			gr.Late = g.Add(tol).UTC()
			if k := len(l.Grants); k > 0 && late(l.Grants[k-1], lim).After(gr.Late) {
				gr.Late = late(l.Grants[k-1], lim).UTC()
			}
			gr.Backfill = backfill
		}
		if rules.Chain {
			// Without KeepUntil, Until is kept only where the running
			// maximum (Late) hides it: a zero Until stands for Late.
			if u := g.Add(tol).UTC(); rules.KeepUntil || u.Before(gr.Late) {
				gr.Until = u
			}
			gr.Chain = chain
		}
		l.Grants = append(l.Grants, gr)
		if len(l.Grants) > keep {
			l.Grants = append(l.Grants[:0], l.Grants[len(l.Grants)-keep:]...)
			l.Trimmed = true
		}
		l.Granted++
		ans.Grants = append(ans.Grants, gr)
		if chain != 0 {
			ans.Links = append(ans.Links, links)
			if rules.Ahead {
				var ahead time.Duration
				// Backing off, every grant is spaced from the one before,
				// whoever it went to: none leaves early.
				if f >= 1 {
					if day != "" {
						y, m, d := g.In(loc).Date()
						early = maxTime(early, time.Date(y, m, d, 0, 0, 0, 0, loc))
					}
					ahead = min(max(g.Sub(early), 0), max(g.Sub(now), 0))
				}
				ans.Ahead = append(ans.Ahead, ahead)
			}
		}
	}
	return ans
}

// refillSpan is how many grants may follow a free entry for an ask to
// take it over (RulesRefill): fewer than the smallest window count, so
// that no grant after it counts it among the grants a window before it
// (those it was spaced from); none with a minimum interval, whose spacing
// is from the grant before. Zero: a given-back grant is dropped.
func (l Limits) refillSpan() int {
	if l.MinInterval > 0 || len(l.Windows) == 0 {
		return 0
	}
	n := l.Windows[0].Count
	for _, w := range l.Windows[1:] {
		n = min(n, w.Count)
	}
	return n
}

// refillAt returns the free entry an ask may take over (RulesRefill) and
// the time of the grant that takes it: of the free entries fewer than
// refillSpan grants follow, the one whose grant is earliest. A grant that
// takes over entry p is spaced as an unchained grant at p — after the
// latest sends of the grants a window count before it, as the grant it
// replaces was — no earlier than from and the grant before, and no later
// than the grant after (the log stays ascending); its day's quota must
// have room. Why that keeps every window: the grants after p were spaced
// from grants a window count before them, none of which is p, so they do
// not depend on when p is sent; a later ask counts p at its new latest
// send (takeOver raises the running maximum).
func (l *Ledger) refillAt(from time.Time, lim Limits, full func(day string) bool) (int, time.Time, bool) {
	span := lim.refillSpan()
	k := len(l.Grants)
	best, bestAt := -1, time.Time{}
	for p := k - 2; p >= 0 && k-1-p < span; p-- {
		if !l.Grants[p].Free {
			continue
		}
		h := from
		if p > 0 {
			h = maxTime(h, l.Grants[p-1].At)
		}
		for _, w := range lim.Windows {
			switch {
			case p >= w.Count:
				h = maxTime(h, late(l.Grants[p-w.Count], lim).Add(w.Length+slack))
			case l.Trimmed:
				// The grants a window count before were trimmed: each was
				// sent by the first kept grant's latest send.
				h = maxTime(h, late(l.Grants[0], lim).Add(w.Length+slack))
			}
		}
		if h.After(l.Grants[p+1].At) {
			continue
		}
		if lim.DailyQuota > 0 && full(h.In(lim.Location()).Format(time.DateOnly)) {
			continue
		}
		if best < 0 || h.Before(bestAt) {
			best, bestAt = p, h
		}
	}
	return best, bestAt, best >= 0
}

// takeOver replaces free entry p by a new grant at h (refillAt), counted
// against its day, and raises the running maximum of the latest sends
// (Grant.Late) after it.
func (l *Ledger) takeOver(p int, h time.Time, tol time.Duration, backfill bool, lim Limits) Grant {
	l.count(h, lim, backfill)
	l.NextID++
	gr := Grant{ID: l.NextID, At: h.UTC(), Late: h.Add(tol).UTC(), Until: h.Add(tol).UTC(), Backfill: backfill}
	if p > 0 {
		gr.Late = maxTime(gr.Late, late(l.Grants[p-1], lim)).UTC()
	}
	l.Grants[p] = gr
	for q := p + 1; q < len(l.Grants) && late(l.Grants[q], lim).Before(gr.Late); q++ {
		l.Grants[q].Late = gr.Late
	}
	l.Granted++
	return gr
}

// settle drops the free entries no ask can take over any more
// (RulesRefill): the last grant of the log (the next grant takes its
// place as a new one), one that refillSpan or more grants follow, and one
// the time of whose next grant not free has passed (a grant that takes it
// over comes after now, and no later than that). Dropping one only takes it out of the
// windows of the grants after it, which it was never sent in, and lets
// the grants to come use its slot, as dropping a given-back grant always
// did. A trimmed log is kept at the largest window count, as Release
// keeps it.
func (l *Ledger) settle(now time.Time, lim Limits) {
	span := lim.refillSpan()
	keep := lim.maxLog()
	for p := len(l.Grants) - 1; p >= 0; p-- {
		if !l.Grants[p].Free {
			continue
		}
		if after := len(l.Grants) - 1 - p; after > 0 && after < span && !l.nextTaken(p).Before(now) {
			continue
		}
		if l.Trimmed && len(l.Grants) <= keep {
			return
		}
		l.Grants = slices.Delete(l.Grants, p, p+1)
	}
}

// nextTaken is the time of the first grant after entry p that is not
// free (p is never the last: settle drops a last free entry).
func (l *Ledger) nextTaken(p int) time.Time {
	for q := p + 1; q < len(l.Grants); q++ {
		if !l.Grants[q].Free {
			return l.Grants[q].At
		}
	}
	return l.Grants[len(l.Grants)-1].At
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// until is the latest moment grant g itself may be sent.
func until(g Grant, lim Limits) time.Time {
	if !g.Until.IsZero() {
		return g.Until
	}
	return late(g, lim)
}

// chainFrom looks back from grant i for what a chaining caller's grant
// must keep its distance from: the latest send moment of the other
// callers' grants up to i (other), and the caller's own latest grant up to
// i (ownID, 0 if none; its time ownAt), whose send, and its earlier own
// grants' sends, the caller keeps the link to. An own grant of a
// tolerance no wider than a link's cost (the rules' margin and the lead)
// counts as another's. It stops at the first grant
// whose latest send moment — a running maximum — is no later than what it
// found: no grant before can be sent after it. Grants dropped from a
// trimmed log count at the first kept grant's latest send moment.
func (l *Ledger) chainFrom(i int, me uint32, cost time.Duration, lim Limits) (other time.Time, ownID uint64, ownAt time.Time) {
	var best time.Time
	for m := i; m >= 0; m-- {
		g := l.Grants[m]
		if !late(g, lim).After(best) {
			return other, ownID, ownAt
		}
		// An own grant whose tolerance is below what a link costs is
		// cheaper counted at its latest send.
		if g.Chain == me && until(g, lim).Sub(g.At) > cost {
			if ownID == 0 {
				ownID, ownAt = g.ID, g.At
				if g.At.After(best) {
					best = g.At
				}
			}
			continue
		}
		if u := until(g, lim); u.After(other) {
			other = u
			if u.After(best) {
				best = u
			}
		}
	}
	if l.Trimmed && len(l.Grants) > 0 {
		if t := late(l.Grants[0], lim); t.After(other) {
			other = t
		}
	}
	return other, ownID, ownAt
}

// othersFrom is what a chaining caller's grant sent before its time
// (RulesAhead) must keep its distance from, besides its own links: the
// latest send moment of the other callers' grants from i back (an own
// grant of a tolerance no wider than cost counts as another's, as in
// chainFrom). The caller's own grants up to i are kept apart by its
// links (the latest of them is chainFrom's ownID). It stops at the first
// grant whose latest send moment — a running maximum — is no later than
// what it found, or than horizon: no grant before is sent after it, and
// one sent by horizon is a window before any call the answer lets leave
// (horizon is now less the window; a call leaves after now).
func (l *Ledger) othersFrom(i int, horizon time.Time, me uint32, cost time.Duration, lim Limits) time.Time {
	var t time.Time
	for m := i; m >= 0; m-- {
		g := l.Grants[m]
		if lt := late(g, lim); !lt.After(t) || !lt.After(horizon) {
			return maxTime(t, lt)
		}
		if g.Chain == me && until(g, lim).Sub(g.At) > cost {
			continue
		}
		t = maxTime(t, until(g, lim))
	}
	if l.Trimmed && len(l.Grants) > 0 {
		t = maxTime(t, late(l.Grants[0], lim))
	}
	return t
}

// chainOf returns the Grant.Chain of a chaining caller, adding it to
// Chains; past maxChains, callers no grant of the log names are forgotten
// first (the others' numbers change with them).
func (l *Ledger) chainOf(caller string) uint32 {
	if i := slices.Index(l.Chains, caller); i >= 0 {
		return uint32(i + 1)
	}
	if len(l.Chains) >= maxChains {
		used := make([]bool, len(l.Chains)+1)
		for _, g := range l.Grants {
			if int(g.Chain) < len(used) {
				used[g.Chain] = true
			}
		}
		renum := make([]uint32, len(l.Chains)+1)
		var kept []string
		for i, c := range l.Chains {
			if used[i+1] {
				kept = append(kept, c)
				renum[i+1] = uint32(len(kept))
			}
		}
		for j := range l.Grants {
			if c := l.Grants[j].Chain; int(c) < len(renum) {
				l.Grants[j].Chain = renum[c]
			}
		}
		l.Chains = kept
	}
	l.Chains = append(l.Chains, caller)
	return uint32(len(l.Chains))
}

// exhausted says the quota leaves no call before next: the day's quota,
// or for a backfill whose share is spent while the quota is not, the
// share.
func (l *Ledger) exhausted(next time.Time, day string, lim Limits, backfill bool) *QuotaExhausted {
	q := &QuotaExhausted{ResetAt: next.UTC(), Quota: lim.DailyQuota}
	if backfill && l.day(day).Count < lim.DailyQuota {
		q.Quota, q.Backfill = lim.backfillShare(), true
	}
	return q
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
		l.uncount(g, lim)
		n++
	}
	return n
}

// ReleaseRules gives grants back by id under a generation of rules: as
// Release, except that under RulesRefill a grant that grants follow (fewer
// than Limits.refillSpan) is kept in the log as a free entry, never sent
// and no longer counted against its day, which a later ask may take over
// (Reserve). A free entry given back again changes nothing.
func (l *Ledger) ReleaseRules(ids []uint64, lim Limits, gen int) int {
	if !Rules(gen).Refill {
		return l.Release(ids, lim)
	}
	span := lim.refillSpan()
	n := 0
	for _, id := range ids {
		i := slices.IndexFunc(l.Grants, func(g Grant) bool { return g.ID == id })
		if i < 0 || l.Grants[i].Free {
			continue
		}
		if after := len(l.Grants) - 1 - i; after == 0 || after >= span {
			n += l.Release([]uint64{id}, lim)
			continue
		}
		l.Grants[i].Free = true
		l.uncount(l.Grants[i], lim)
		n++
	}
	return n
}

// count counts a grant at g against its provider-local day's quota (and
// the day's backfill share for a backfill grant), under a daily quota.
func (l *Ledger) count(g time.Time, lim Limits, backfill bool) {
	if lim.DailyQuota == 0 {
		return
	}
	day := g.In(lim.Location()).Format(time.DateOnly)
	l.setDay(day, l.day(day).Count+1)
	if backfill {
		l.setBackfill(day, l.day(day).Backfill+1)
	}
}

// uncount takes a given-back grant out of the counters and its day's
// quota.
func (l *Ledger) uncount(g Grant, lim Limits) {
	l.Released++
	if lim.DailyQuota == 0 {
		return
	}
	day := g.At.In(lim.Location()).Format(time.DateOnly)
	if c := l.day(day).Count; c > 0 {
		l.setDay(day, c-1)
	}
	if c := l.day(day).Backfill; g.Backfill && c > 0 {
		l.setBackfill(day, c-1)
	}
}

// DayCount returns the grants counted against the provider-local day of t.
func (l *Ledger) DayCount(t time.Time, lim Limits) int {
	return l.day(t.In(lim.Location()).Format(time.DateOnly)).Count
}

// BackfillCount returns the backfill grants counted against the
// provider-local day of t.
func (l *Ledger) BackfillCount(t time.Time, lim Limits) int {
	return l.day(t.In(lim.Location()).Format(time.DateOnly)).Backfill
}

// dayIndex returns the index in Days of a day (YYYY-MM-DD), -1 when the
// day is not counted.
func (l *Ledger) dayIndex(day string) int {
	return slices.IndexFunc(l.Days, func(d DayCount) bool { return d.Day == day })
}

// day returns a day's counts: zero when the day is not counted.
func (l *Ledger) day(day string) DayCount {
	if i := l.dayIndex(day); i >= 0 {
		return l.Days[i]
	}
	return DayCount{Day: day}
}

// setBackfill sets a day's backfill count; the day must be counted
// already (setDay).
func (l *Ledger) setBackfill(day string, n int) {
	if i := l.dayIndex(day); i >= 0 {
		l.Days[i].Backfill = n
	}
}

// setDay sets a day's count, counting the day if it was not.
func (l *Ledger) setDay(day string, n int) {
	if i := l.dayIndex(day); i >= 0 {
		l.Days[i].Count = n
		return
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
	end := now.Add(MaxAhead + MaxTolerance + lim.longest() + slack)
	if end.After(l.PausedUntil) {
		l.PausedUntil = end
	}
	if lim.DailyQuota > 0 {
		loc := lim.Location()
		for _, t := range []time.Time{now, now.Add(MaxAhead)} {
			day := t.In(loc).Format(time.DateOnly)
			l.setDay(day, max(l.day(day).Count, lim.DailyQuota))
		}
	}
	l.NextID = max(l.NextID, uint64(max(now.UnixNano(), 0)))
	l.Quarantines++
}
