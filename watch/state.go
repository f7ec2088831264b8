package watch

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// State is a dataset's state as the status pages show it.
type State string

// The states (docs/watch.md has the rules).
const (
	// Unknown: never probed, the last probe was held back by our own
	// limiter or quota or answered with a rate limit, or no probe came in
	// time (DatasetState.Current).
	Unknown State = "unknown"
	// Up: confirmed answering.
	Up State = "up"
	// Degraded: answering, but a failure (or a recovery) is not yet
	// confirmed, or the answers are slower than Policy.SlowAfter.
	Degraded State = "degraded"
	// Down: a failure confirmed by Policy.FailuresToConfirm consecutive
	// failed probes, and no confirmed recovery since.
	Down State = "down"
)

// States lists the states in a stable order.
var States = []State{Up, Degraded, Down, Unknown}

// Valid reports whether s is one of the states.
func (s State) Valid() bool { return s == Up || s == Degraded || s == Down || s == Unknown }

// Policy is how a dataset's probes become a state: how many probes confirm
// a failure or a recovery, how they are spaced, and the day's budget of
// confirmation probes the budget gate reserved.
type Policy struct {
	// FailuresToConfirm is how many consecutive failed probes — the
	// first and its confirmations — confirm an outage. Default 1 +
	// probe_headroom (3).
	FailuresToConfirm int
	// SuccessesToConfirm is how many consecutive answering probes confirm
	// a recovery from down. Default 2. From unknown, one answer is up.
	SuccessesToConfirm int
	// ConfirmSpacing is the gap between a probe and the confirmation it
	// asks for.
	ConfirmSpacing time.Duration
	// ConfirmationsPerDay is the day's budget of confirmation probes:
	// probes a day × (probe_headroom − 1), what the gate reserved beyond
	// the scheduled probes. 0: no confirmation probe is ever sent; the
	// scheduled probes confirm.
	ConfirmationsPerDay int
	// SlowAfter: an answer slower than this is degraded; 0: never.
	SlowAfter time.Duration
	// StaleAfter: with no probe for this long the state is unknown.
	StaleAfter time.Duration
	// Location is where the budget's day begins (the provider's quota
	// day); nil: UTC.
	Location *time.Location
	// DayLength is the length of the budget's day when the watch's clock
	// is scaled (Config.Scaled: a day of 24 h ÷ the rate scale, counted
	// from the calendar day's midnight); 0 or 24 h and more: the calendar
	// day.
	DayLength time.Duration
}

// budgetDay names the budget day at: the calendar date in Location, and
// with a scaled DayLength the index of the scaled day within it
// ("2026-11-30/17").
func (p Policy) budgetDay(at time.Time) string {
	local := at.In(p.Location)
	d := local.Format("2006-01-02")
	if p.DayLength > 0 && p.DayLength < 24*time.Hour {
		midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, p.Location)
		d += fmt.Sprintf("/%d", local.Sub(midnight)/p.DayLength)
	}
	return d
}

// Default policy values.
const (
	DefaultSuccessesToConfirm = 2
	DefaultSlowAfter          = 15 * time.Second
	minConfirmSpacing         = time.Minute
	maxConfirmSpacing         = 10 * time.Minute
)

func (p Policy) normalized() Policy {
	if p.FailuresToConfirm <= 0 {
		p.FailuresToConfirm = 3
	}
	if p.SuccessesToConfirm <= 0 {
		p.SuccessesToConfirm = DefaultSuccessesToConfirm
	}
	if p.ConfirmSpacing <= 0 {
		p.ConfirmSpacing = 5 * time.Minute
	}
	if p.StaleAfter <= 0 {
		p.StaleAfter = 2*time.Hour + 10*time.Minute
	}
	if p.ConfirmationsPerDay < 0 {
		p.ConfirmationsPerDay = 0
	}
	if p.Location == nil {
		p.Location = time.UTC
	}
	return p
}

// Config is everything Step needs to know about a dataset.
type Config struct {
	Policy    Policy
	Freshness Freshness
}

// ConfigFor derives a dataset's Config from the registry:
// FailuresToConfirm 1 + probe_headroom, ConfirmationsPerDay ⌈1440 /
// interval⌉ × (probe_headroom − 1), ConfirmSpacing a quarter of the
// interval within 1 to 10 minutes, StaleAfter two intervals and ten
// minutes, SlowAfter 15 s, the provider's timezone, and FreshnessFor.
func ConfigFor(reg *registry.Registry, ds *registry.Dataset) (Config, error) {
	if ds == nil {
		return Config{}, fmt.Errorf("configuring the watch: no dataset")
	}
	if ds.Probe == nil || ds.Probe.IntervalMinutes <= 0 {
		return Config{}, fmt.Errorf("configuring the watch of %s: the dataset has no probe section", ds.ID)
	}
	h := reg.Defaults.ProbeHeadroom
	if h < 1 {
		h = 1
	}
	interval := time.Duration(ds.Probe.IntervalMinutes) * time.Minute
	spacing := min(max(interval/4, minConfirmSpacing), maxConfirmSpacing)
	var loc *time.Location
	if p := reg.Provider(ds.Provider); p != nil {
		loc = p.Location
	}
	return Config{
		Policy: Policy{
			FailuresToConfirm:   1 + h,
			SuccessesToConfirm:  DefaultSuccessesToConfirm,
			ConfirmSpacing:      spacing,
			ConfirmationsPerDay: ds.Probe.PerDay() * (h - 1),
			SlowAfter:           DefaultSlowAfter,
			StaleAfter:          2*interval + 10*time.Minute,
			Location:            loc,
		},
		Freshness: FreshnessFor(reg, ds),
	}.normalized(), nil
}

func (c Config) normalized() Config { c.Policy = c.Policy.normalized(); return c }

// Scaled returns the Config of a watch whose clock runs scale times as
// fast, as the simulator's and the limiter's do under --rate-scale: the
// confirmation spacing, the staleness and the budget's day are divided by
// scale (so the day's confirmation budget is spent over a scaled day);
// lateness, which the data's calendar decides, and the slowness threshold,
// which the network's latency decides, are not. scale ≤ 0 or 1: c
// unchanged.
func (c Config) Scaled(scale float64) Config {
	if scale <= 0 || scale == 1 {
		return c
	}
	c = c.normalized()
	day := c.Policy.DayLength
	if day <= 0 || day > 24*time.Hour {
		day = 24 * time.Hour
	}
	c.Policy.ConfirmSpacing = scaleDuration(c.Policy.ConfirmSpacing, scale)
	c.Policy.StaleAfter = scaleDuration(c.Policy.StaleAfter, scale)
	c.Policy.DayLength = scaleDuration(day, scale)
	return c
}

// Interval is how often a dataset is probed: its probe.interval_minutes,
// divided by scale (the rate scale; ≤ 0 means 1). 0 for a dataset without
// a probe section.
func Interval(ds *registry.Dataset, scale float64) time.Duration {
	if ds == nil || ds.Probe == nil || ds.Probe.IntervalMinutes <= 0 {
		return 0
	}
	d := time.Duration(ds.Probe.IntervalMinutes) * time.Minute
	if scale <= 0 {
		return d
	}
	return scaleDuration(d, scale)
}

// scaleDuration divides d by scale, never below a millisecond.
func scaleDuration(d time.Duration, scale float64) time.Duration {
	if scale <= 0 || scale == 1 {
		return d
	}
	return max(time.Duration(float64(d)/scale), time.Millisecond)
}

// DatasetState is what the watch knows about one dataset: the state shown
// and since when, the confirmed state and the probes pointing away from
// it, the last success, the newest period seen, whether it is late, the
// answer's last shape and the day's confirmation budget. Step computes
// the next one; the store keeps it.
type DatasetState struct {
	Dataset string    `json:"dataset"`
	State   State     `json:"state"`
	Since   time.Time `json:"since"`
	Reason  string    `json:"reason,omitempty"`

	// Confirmed is the confirmed availability: unknown (never
	// confirmed), up or down.
	Confirmed      State     `json:"confirmed"`
	ConfirmedSince time.Time `json:"confirmed_since"`
	// Streak are the consecutive decisive probes since the last one that
	// agreed with Confirmed: failures while up, answers while down. When
	// it is long enough the state changes.
	Streak []ProbeRef `json:"streak,omitempty"`
	// Slow is true when the last answer took longer than SlowAfter.
	Slow bool `json:"slow,omitempty"`
	// SlowStreak counts the consecutive slow answers while confirmed up;
	// SlowConfirmed is set when FailuresToConfirm of them confirmed the
	// dataset degraded (a ChangeDegraded), and FastStreak counts the
	// answers in time since, SuccessesToConfirm of which confirm it up
	// again. A failed probe breaks a streak; an operational one (our
	// throttling, a rate limit) leaves them as they are.
	SlowStreak    int  `json:"slow_streak,omitempty"`
	SlowConfirmed bool `json:"slow_confirmed,omitempty"`
	FastStreak    int  `json:"fast_streak,omitempty"`
	// Resumed is when probing resumed after time the state was not
	// known (our throttling, a rate limit, a gap): an up or down shown
	// since then, not since ConfirmedSince.
	Resumed time.Time `json:"resumed"`

	LastProbe   time.Time `json:"last_probe"`
	LastOutcome Outcome   `json:"last_outcome,omitempty"`
	// LastPassive is when the last passive observation (Probe.Passive:
	// an ingest's own answer) was stepped; zero when none was.
	LastPassive time.Time `json:"last_passive,omitzero"`
	LastSuccess time.Time `json:"last_success"`
	// ValidUntil is when the state lapses into unknown without another
	// probe.
	ValidUntil time.Time `json:"valid_until"`
	// Probes counts the probes stepped.
	Probes int64 `json:"probes"`

	// Newest is the newest period any answer held (canonical).
	Newest    string    `json:"newest,omitempty"`
	Late      bool      `json:"late,omitempty"`
	LateSince time.Time `json:"late_since"`
	// LateDue is the oldest period that would not have been late.
	LateDue string `json:"late_due,omitempty"`

	// Shape is the last OK answer's shape.
	Shape Shape `json:"shape"`

	// BudgetDay is the budget's current day (YYYY-MM-DD in
	// Policy.Location, with "/n" appended for the nth scaled day of a
	// Policy.DayLength) and ConfirmationsUsed the confirmation probes sent
	// in it.
	BudgetDay         string `json:"budget_day,omitempty"`
	ConfirmationsUsed int    `json:"confirmations_used"`
	BudgetNoted       bool   `json:"budget_noted,omitempty"`

	// Timeline is the last state written to the availability timeline.
	Timeline State `json:"timeline,omitempty"`
}

// NeverProbed is the state of a dataset with no probe yet.
func NeverProbed(dataset string) DatasetState {
	return DatasetState{Dataset: dataset, State: Unknown, Confirmed: Unknown, Reason: "never probed"}
}

// Current returns the state as of now: unknown, since ValidUntil, when no
// probe came in time; a zero state is NeverProbed.
func (s DatasetState) Current(now time.Time) DatasetState {
	if s.State == "" {
		n := NeverProbed(s.Dataset)
		return n
	}
	if !s.ValidUntil.IsZero() && now.After(s.ValidUntil) {
		s.State, s.Since = Unknown, s.ValidUntil
		s.Reason = "no probe since " + s.LastProbe.UTC().Format(time.RFC3339)
	}
	return s
}

// Mark is one edit of a dataset's availability timeline (the step
// function of confirmed states that uptime is computed from).
type Mark struct {
	At    time.Time `json:"at"`
	State State     `json:"state"`
	// Until is how long the state is known to hold without another mark
	// (the ValidUntil of the last probe that extended it).
	Until time.Time `json:"until"`
	// Rewrite backdates a confirmed change: every mark from At on that is
	// not unknown takes State, since the probes that confirmed it showed
	// it from the first one.
	Rewrite bool `json:"rewrite,omitempty"`
}

// Confirm tells the watch workflow whether to send a confirmation probe.
type Confirm struct {
	// At is when to send it; zero: none.
	At time.Time `json:"at"`
	// BudgetSpent is true when one was wanted but the day's confirmation
	// budget is used up: wait for the next scheduled probe.
	BudgetSpent bool `json:"budget_spent,omitempty"`
	// Remaining is what is left of the day's confirmation budget.
	Remaining int `json:"remaining"`
}

// Wanted reports whether a confirmation probe should be sent.
func (c Confirm) Wanted() bool { return !c.At.IsZero() }

// Result is what one probe did to a dataset.
type Result struct {
	Probe   Probe        `json:"probe"`
	State   DatasetState `json:"state"`
	Changes []Change     `json:"changes,omitempty"`
	Events  []Event      `json:"events,omitempty"`
	Marks   []Mark       `json:"marks,omitempty"`
	Confirm Confirm      `json:"confirm"`
	// Duplicate is set by a store that had recorded this probe already
	// (same dataset and time): nothing was stepped again.
	Duplicate bool `json:"duplicate,omitempty"`
}

// NextConfirm says whether the state wants a confirmation probe after the
// last one: only while a streak is pending, never right after an
// operational outcome (our limiter or the provider asked for a pause), and
// only within the day's budget.
func NextConfirm(cfg Config, s DatasetState) Confirm {
	pol := cfg.Policy.normalized()
	c := Confirm{Remaining: max(pol.ConfirmationsPerDay-s.ConfirmationsUsed, 0)}
	if len(s.Streak) == 0 || s.LastOutcome.Operational() {
		return c
	}
	if c.Remaining == 0 {
		c.BudgetSpent = true
		return c
	}
	c.At = s.LastProbe.Add(pol.ConfirmSpacing)
	return c
}

func describeRef(r ProbeRef) string {
	s := string(r.Outcome)
	if r.HTTPStatus != 0 {
		s += fmt.Sprintf(", HTTP %d", r.HTTPStatus)
	}
	return s
}

// Step applies one probe to a dataset's state: the record's operational
// events, the confirmation streak, the state shown, the timeline marks,
// shape and lateness Changes, and whether to send a confirmation probe.
// It is pure: prev is not modified, and the result depends only on its
// arguments.
//
// Probes are taken in the order they are stepped. A probe older than the
// last one (a worker's clock behind) counts at the last probe's time, so
// times never run backwards.
func Step(cfg Config, prev DatasetState, p Probe) Result {
	cfg = cfg.normalized()
	pol := cfg.Policy
	p = p.Normalize()
	s := prev
	s.Streak = append([]ProbeRef(nil), prev.Streak...)
	if s.State == "" {
		s = NeverProbed(p.Dataset)
	}
	s.Dataset = p.Dataset
	at := p.At
	if at.Before(prev.LastProbe) {
		at = prev.LastProbe
	}
	gap := !prev.ValidUntil.IsZero() && at.After(prev.ValidUntil)
	res := Result{Probe: p}

	s.Probes++
	s.LastProbe, s.LastOutcome = at, p.Outcome
	if p.Passive {
		s.LastPassive = at
	}
	s.ValidUntil = at.Add(pol.StaleAfter)
	if d := pol.budgetDay(at); d != s.BudgetDay {
		s.BudgetDay, s.ConfirmationsUsed, s.BudgetNoted = d, 0, false
	}
	if p.Confirmation && p.Outcome != Throttled {
		s.ConfirmationsUsed++
	}
	ref := p.Ref()
	ref.At = at

	displayed := prev.State
	if displayed == "" {
		displayed = Unknown
	}
	var tl State
	var next State
	var since time.Time
	var confirmedAt time.Time // set when this probe confirmed a change

	if p.Outcome.Operational() {
		kind, why := KindProbeThrottled, "probe held back by Sluice's own limiter or quota (an operational event, not an outage)"
		if p.Outcome == RateLimited {
			kind, why = KindProbeRateLimited, "the provider rate-limited the probe (an operational event, not an outage)"
		}
		msg := p.Message
		if msg == "" {
			msg = why
		}
		ev := Event{Kind: kind, At: at, Provider: p.Provider, Dataset: p.Dataset, Message: msg,
			Attrs: map[string]string{"outcome": string(p.Outcome)}}
		if p.HTTPStatus != 0 {
			ev.Attrs["http_status"] = fmt.Sprint(p.HTTPStatus)
		}
		res.Events = append(res.Events, ev)
		next, s.Reason, tl = Unknown, why, Unknown
	} else {
		good := p.Outcome.Good()
		cand := Down
		if good {
			cand = Up
			s.LastSuccess = at
			s.Slow = pol.SlowAfter > 0 && p.Latency > pol.SlowAfter
		}
		if cand == s.Confirmed {
			s.Streak = nil
		} else {
			if len(s.Streak) > 0 && s.Streak[0].Outcome.Good() != good {
				s.Streak = nil
			}
			s.Streak = append(s.Streak, ref)
			need := pol.FailuresToConfirm
			if good {
				need = pol.SuccessesToConfirm
				if s.Confirmed == Unknown {
					need = 1
				}
			}
			if len(s.Streak) >= need {
				from := s.Confirmed
				start := s.Streak[0].At
				evidence := s.Streak
				s.Confirmed, s.ConfirmedSince, s.Streak = cand, start, nil
				confirmedAt = start
				res.Changes = append(res.Changes, Change{
					At: at, Dataset: p.Dataset, Kind: ChangeState, From: string(from), To: string(cand),
					Evidence: evidence,
					Summary:  stateSummary(p.Dataset, from, cand, evidence),
				})
			}
		}
		switch {
		case len(s.Streak) > 0:
			next = Degraded
			need := pol.FailuresToConfirm
			if good {
				need = pol.SuccessesToConfirm
			}
			if good {
				s.Reason = fmt.Sprintf("recovery not yet confirmed: %d of %d probes answered", len(s.Streak), need)
			} else {
				s.Reason = fmt.Sprintf("failure not yet confirmed: %d of %d probes failed (%s)", len(s.Streak), need, describeRef(ref))
			}
		case s.Confirmed == Up && s.Slow:
			next = Degraded
			s.Reason = fmt.Sprintf("answered in %s, slower than %s", p.Latency.Round(time.Millisecond), pol.SlowAfter)
		case s.Confirmed == Up:
			next, s.Reason = Up, ""
		default:
			next = Down
			s.Reason = "failing: " + describeRef(ref)
			if p.Message != "" {
				s.Reason += ": " + p.Message
			}
			s.Reason = cleanText(s.Reason, MaxMessageBytes)
		}
		slowness(pol, &s, good, p, at, &res)
		tl = s.Confirmed
		if tl == Up && s.Slow && len(s.Streak) == 0 {
			tl = Degraded
		}
		if good {
			freshnessAndShape(cfg, &s, p, at, &res)
		}
	}

	// The state shown, and since when: an up or down since it was
	// confirmed (a blip in between does not restart it) or since probing
	// resumed after unknown time; a pending streak since its first probe.
	if !p.Outcome.Operational() && (gap || displayed == Unknown) {
		s.Resumed = at
	}
	switch {
	case (next == Up || next == Down) && next == s.Confirmed:
		since = s.ConfirmedSince
		if s.Resumed.After(since) {
			since = s.Resumed
		}
	case next == Degraded && len(s.Streak) > 0:
		since = s.Streak[0].At
	case next == displayed && !gap:
		since = prev.Since
	default:
		since = at
	}
	s.State, s.Since = next, since

	// The timeline.
	if !confirmedAt.IsZero() {
		res.Marks = append(res.Marks, Mark{At: confirmedAt, State: s.Confirmed, Rewrite: true})
		if tl != s.Confirmed {
			res.Marks = append(res.Marks, Mark{At: at, State: tl})
		}
	} else if tl != prev.Timeline || gap {
		res.Marks = append(res.Marks, Mark{At: at, State: tl})
	}
	for i := range res.Marks {
		res.Marks[i].Until = s.ValidUntil
	}
	s.Timeline = tl

	res.Confirm = NextConfirm(cfg, s)
	if res.Confirm.BudgetSpent && pol.ConfirmationsPerDay > 0 && !s.BudgetNoted {
		s.BudgetNoted = true
		res.Events = append(res.Events, Event{
			Kind: KindConfirmBudgetSpent, At: at, Provider: p.Provider, Dataset: p.Dataset,
			Message: fmt.Sprintf("the day's %d confirmation probes are used up; the next scheduled probe confirms instead", pol.ConfirmationsPerDay),
			Attrs:   map[string]string{"budget_day": s.BudgetDay, "confirmations_per_day": fmt.Sprint(pol.ConfirmationsPerDay)},
		})
	}
	res.State = s
	return res
}

// slowness confirms a dataset degraded by slow answers, and up again by
// answers in time: FailuresToConfirm consecutive answers slower than
// SlowAfter while confirmed up make a ChangeDegraded up → degraded;
// SuccessesToConfirm answers in time after it make one degraded → up. A
// dataset no longer confirmed up (down, or a failure streak pending) is
// not degraded by slowness: a down subsumes it.
func slowness(pol Policy, s *DatasetState, good bool, p Probe, at time.Time, res *Result) {
	if s.Confirmed != Up {
		s.SlowStreak, s.SlowConfirmed, s.FastStreak = 0, false, 0
		return
	}
	if !good || len(s.Streak) > 0 {
		s.SlowStreak, s.FastStreak = 0, 0
		return
	}
	threshold := pol.SlowAfter.String()
	if s.Slow {
		s.FastStreak = 0
		s.SlowStreak++
		if !s.SlowConfirmed && s.SlowStreak >= pol.FailuresToConfirm {
			s.SlowConfirmed = true
			res.Changes = append(res.Changes, Change{
				At: at, Dataset: p.Dataset, Kind: ChangeDegraded, From: string(Up), To: string(Degraded),
				Summary: fmt.Sprintf("%s up → degraded: %d consecutive answers slower than %s (last: %s)",
					p.Dataset, s.SlowStreak, threshold, p.Latency.Round(time.Millisecond)),
			})
		}
		return
	}
	s.SlowStreak = 0
	if !s.SlowConfirmed {
		return
	}
	s.FastStreak++
	if s.FastStreak >= pol.SuccessesToConfirm {
		res.Changes = append(res.Changes, Change{
			At: at, Dataset: p.Dataset, Kind: ChangeDegraded, From: string(Degraded), To: string(Up),
			Summary: fmt.Sprintf("%s degraded → up: %d consecutive answers within %s (last: %s)",
				p.Dataset, s.FastStreak, threshold, p.Latency.Round(time.Millisecond)),
		})
		s.SlowConfirmed, s.FastStreak = false, 0
	}
}

func stateSummary(dataset string, from, to State, ev []ProbeRef) string {
	first, last := ev[0], ev[len(ev)-1]
	word := "failed"
	if to == Up {
		word = "answering"
	}
	return fmt.Sprintf("%s %s → %s: confirmed by %d %s probe(s) from %s to %s (last: %s)",
		dataset, from, to, len(ev), word, first.At.UTC().Format(time.RFC3339), last.At.UTC().Format(time.RFC3339), describeRef(last))
}

// freshnessAndShape runs the detectors that need an answer: the newest
// period and lateness (OK and NoData), the shape (OK only).
func freshnessAndShape(cfg Config, s *DatasetState, p Probe, at time.Time, res *Result) {
	if p.Newest != "" {
		if cfg.Freshness.Enabled() {
			if np, err := ParsePeriod(cfg.Freshness.Cycle, p.Newest); err == nil {
				cur, cerr := ParsePeriod(cfg.Freshness.Cycle, s.Newest)
				if s.Newest == "" || cerr != nil || cur.Before(np) {
					s.Newest = np.String()
				}
			}
		} else if p.Newest > s.Newest {
			s.Newest = p.Newest
		}
	}
	if cfg.Freshness.Enabled() && s.Newest != "" {
		if np, err := ParsePeriod(cfg.Freshness.Cycle, s.Newest); err == nil {
			late, oldest := cfg.Freshness.Late(np, at)
			switch {
			case late && !s.Late:
				s.Late, s.LateSince, s.LateDue = true, at, oldest.String()
				res.Changes = append(res.Changes, Change{
					At: at, Dataset: p.Dataset, Kind: ChangeLate, From: s.Newest, To: oldest.String(), Period: s.Newest,
					Summary: fmt.Sprintf("%s is late: its newest period %s is older than %s, due by now (cycle %s, publication lag %s, %d period(s) of tolerance)",
						p.Dataset, s.Newest, oldest, cfg.Freshness.Cycle, cfg.Freshness.Lag, cfg.Freshness.Tolerance),
				})
			case !late && s.Late:
				res.Changes = append(res.Changes, Change{
					At: at, Dataset: p.Dataset, Kind: ChangeCaughtUp, From: s.LateDue, To: s.Newest, Period: s.Newest,
					Summary: fmt.Sprintf("%s caught up: its newest period is %s (late since %s)", p.Dataset, s.Newest, s.LateSince.UTC().Format(time.RFC3339)),
				})
				s.Late, s.LateSince, s.LateDue = false, time.Time{}, ""
			}
		}
	}
	if p.Outcome == OK && !p.Shape.Empty() {
		if !s.Shape.Empty() && s.Shape.Fingerprint() != p.Shape.Fingerprint() {
			if d := DiffShapes(s.Shape, p.Shape); !d.Empty() {
				res.Changes = append(res.Changes, Change{
					At: at, Dataset: p.Dataset, Kind: ChangeShape, Shape: &d,
					From: s.Shape.Fingerprint(), To: p.Shape.Fingerprint(),
					Summary: fmt.Sprintf("%s answer changed shape: %s", p.Dataset, d),
				})
			}
		}
		s.Shape = p.Shape
	}
}
