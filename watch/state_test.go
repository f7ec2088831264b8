package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is a Monday.
var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// hourly is the Config of an hourly dataset under the default headroom of
// 2: three failures confirm, two answers recover, 10-minute spacing, 24
// confirmations a day.
var hourly = Config{Policy: Policy{
	FailuresToConfirm: 3, SuccessesToConfirm: 2, ConfirmSpacing: 10 * time.Minute,
	ConfirmationsPerDay: 24, SlowAfter: 15 * time.Second, StaleAfter: 2*time.Hour + 10*time.Minute,
}}

// step is one probe of a scenario and what must follow from it.
type step struct {
	at      time.Duration // after t0
	outcome Outcome
	status  int
	latency time.Duration
	confirm bool   // the probe is a confirmation probe
	newest  string // newest period in the answer
	body    string // JSON answer to fingerprint (OK only)

	state   State    // the state shown afterwards
	changes []string // kind:from→to of the Changes it produced
	events  []string // kinds of the events it produced
	wantAt  time.Duration
	// wantConfirm: after this step a confirmation is wanted at wantAt
	// (after t0); spent: wanted but the budget is spent.
	wantConfirm, spent bool
}

func run(t *testing.T, cfg Config, steps []step) (DatasetState, []Result, Timeline) {
	t.Helper()
	var s DatasetState
	var tl Timeline
	var results []Result
	for i, st := range steps {
		p := Probe{At: t0.Add(st.at), Dataset: "ds", Provider: "prov", Outcome: st.outcome, HTTPStatus: st.status,
			Latency: st.latency, Confirmation: st.confirm, Newest: st.newest, ID: int64(i + 1)}
		if p.Latency == 0 && p.Outcome.Good() {
			p.Latency = 300 * time.Millisecond
		}
		if st.body != "" {
			sh, err := FingerprintJSON([]byte(st.body))
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			p.Shape = sh
		}
		res := Step(cfg, s, p)
		label := fmt.Sprintf("step %d (%s at +%s)", i, st.outcome, st.at)
		if res.State.State != st.state {
			t.Errorf("%s: state %s (%s), want %s", label, res.State.State, res.State.Reason, st.state)
		}
		var changes []string
		for _, c := range res.Changes {
			changes = append(changes, fmt.Sprintf("%s:%s→%s", c.Kind, c.From, c.To))
		}
		if strings.Join(changes, " ") != strings.Join(st.changes, " ") {
			t.Errorf("%s: changes %q, want %q", label, changes, st.changes)
		}
		var events []string
		for _, e := range res.Events {
			events = append(events, e.Kind)
		}
		if strings.Join(events, " ") != strings.Join(st.events, " ") {
			t.Errorf("%s: events %q, want %q", label, events, st.events)
		}
		if res.Confirm.Wanted() != st.wantConfirm {
			t.Errorf("%s: confirmation wanted = %v (%+v), want %v", label, res.Confirm.Wanted(), res.Confirm, st.wantConfirm)
		}
		if st.wantConfirm && !res.Confirm.At.Equal(t0.Add(st.wantAt)) {
			t.Errorf("%s: confirmation at +%s, want +%s", label, res.Confirm.At.Sub(t0), st.wantAt)
		}
		if res.Confirm.BudgetSpent != st.spent {
			t.Errorf("%s: budget spent = %v, want %v", label, res.Confirm.BudgetSpent, st.spent)
		}
		tl = tl.Apply(res.Marks, res.State.ValidUntil)
		s = res.State
		results = append(results, res)
	}
	return s, results, tl
}

const (
	h = time.Hour
	m = time.Minute
)

func TestConfirmedOutage(t *testing.T) {
	s, results, tl := run(t, hourly, []step{
		{at: 0, outcome: OK, status: 200, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: ProviderError, status: 503, state: Degraded, wantConfirm: true, wantAt: 1*h + 10*m},
		{at: 1*h + 10*m, outcome: ProviderError, status: 503, confirm: true, state: Degraded, wantConfirm: true, wantAt: 1*h + 20*m},
		{at: 1*h + 20*m, outcome: Network, confirm: true, state: Down, changes: []string{"state:up→down"}},
		{at: 2 * h, outcome: ProviderError, status: 500, state: Down},
		{at: 3 * h, outcome: OK, status: 200, state: Degraded, wantConfirm: true, wantAt: 3*h + 10*m},
		{at: 3*h + 10*m, outcome: OK, status: 200, confirm: true, state: Up, changes: []string{"state:down→up"}},
	})
	down := results[3].Changes[0]
	if len(down.Evidence) != 3 || down.Evidence[0].ID != 2 || down.Evidence[2].ID != 4 || down.Evidence[0].HTTPStatus != 503 {
		t.Errorf("evidence of the outage = %+v, want probes 2, 3, 4", down.Evidence)
	}
	if !results[3].State.Since.Equal(t0.Add(1 * h)) {
		t.Errorf("down since %s, want the first failure at +1h", results[3].State.Since.Sub(t0))
	}
	if !s.Since.Equal(t0.Add(3*h)) || s.ConfirmationsUsed != 3 {
		t.Errorf("up since +%s with %d confirmations used, want +3h and 3", s.Since.Sub(t0), s.ConfirmationsUsed)
	}
	// The timeline counts the outage from its first failed probe to the
	// first answer that the recovery confirmed: 2 h.
	a := tl.Between(t0, t0.Add(4*h))
	if a.Down != 2*h || a.Up != 2*h || a.Unknown != 0 {
		t.Errorf("availability = %+v, want 2h up, 2h down", a)
	}
}

func TestFlappingNeverConfirms(t *testing.T) {
	var steps []step
	steps = append(steps, step{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}})
	for i := 1; i <= 6; i++ {
		at := time.Duration(i) * h
		steps = append(steps,
			step{at: at, outcome: ProviderError, status: 502, state: Degraded, wantConfirm: true, wantAt: at + 10*m},
			step{at: at + 10*m, outcome: OK, confirm: true, state: Up})
	}
	// One failure, then one answer, then two failures: still not three.
	steps = append(steps,
		step{at: 7 * h, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 7*h + 10*m},
		step{at: 7*h + 10*m, outcome: Network, confirm: true, state: Degraded, wantConfirm: true, wantAt: 7*h + 20*m},
		step{at: 7*h + 20*m, outcome: OK, confirm: true, state: Up})
	s, _, tl := run(t, hourly, steps)
	if s.Confirmed != Up || s.ConfirmationsUsed != 8 {
		t.Errorf("confirmed %s with %d confirmations, want up and 8", s.Confirmed, s.ConfirmationsUsed)
	}
	if a := tl.Between(t0, t0.Add(8*h)); a.Down != 0 || a.Up != 8*h {
		t.Errorf("flapping counted as downtime: %+v", a)
	}
}

func TestFlappingWhileDownNeverRecovers(t *testing.T) {
	steps := []step{
		{at: 0, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 10 * m},
		{at: 10 * m, outcome: Network, confirm: true, state: Degraded, wantConfirm: true, wantAt: 20 * m},
		{at: 20 * m, outcome: Network, confirm: true, state: Down, changes: []string{"state:unknown→down"}},
	}
	for i := 1; i <= 4; i++ {
		at := time.Duration(i) * h
		steps = append(steps,
			step{at: at, outcome: OK, state: Degraded, wantConfirm: true, wantAt: at + 10*m},
			step{at: at + 10*m, outcome: ProviderError, status: 500, confirm: true, state: Down})
	}
	s, _, tl := run(t, hourly, steps)
	if s.Confirmed != Down || !s.Since.Equal(t0) {
		t.Errorf("confirmed %s since +%s, want down since +0", s.Confirmed, s.Since.Sub(t0))
	}
	if a := tl.Between(t0, t0.Add(4*h+10*m)); a.Down != 4*h+10*m {
		t.Errorf("availability %+v, want down all along", a)
	}
}

// TestOurThrottlingIsNotAnOutage: probes our limiter held back show as
// unknown, are operational events, never break or extend a streak, and
// never make the dataset down.
func TestOurThrottlingIsNotAnOutage(t *testing.T) {
	s, _, tl := run(t, hourly, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: Throttled, state: Unknown, events: []string{KindProbeThrottled}},
		{at: 2 * h, outcome: Throttled, state: Unknown, events: []string{KindProbeThrottled}},
		{at: 3 * h, outcome: Throttled, state: Unknown, events: []string{KindProbeThrottled}},
		{at: 4 * h, outcome: OK, state: Up},
		// A failure whose confirmations our limiter holds back stays
		// unconfirmed: no confirmation is asked right after a throttled
		// one, and the next decisive probe continues the streak.
		{at: 5 * h, outcome: ProviderError, status: 500, state: Degraded, wantConfirm: true, wantAt: 5*h + 10*m},
		{at: 5*h + 10*m, outcome: Throttled, confirm: true, state: Unknown, events: []string{KindProbeThrottled}},
		{at: 6 * h, outcome: OK, state: Up},
	})
	if s.Confirmed != Up || s.ConfirmationsUsed != 0 {
		t.Errorf("confirmed %s, %d confirmations counted; want up and 0 (a held-back probe spends nothing)", s.Confirmed, s.ConfirmationsUsed)
	}
	a := tl.Between(t0, t0.Add(7*h))
	if a.Down != 0 || a.Unknown != 3*h+50*m || a.Up != 3*h+10*m {
		t.Errorf("availability %+v, want 3h10m up and 3h50m unknown (the throttled hours), none down", a)
	}
}

// TestProviderRateLimitWithinLimits: a 429 answer is an operational event:
// unknown, never down, and it neither counts towards nor breaks a
// confirmation streak.
func TestProviderRateLimitWithinLimits(t *testing.T) {
	s, _, tl := run(t, hourly, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: RateLimited, status: 429, state: Unknown, events: []string{KindProbeRateLimited}},
		{at: 2 * h, outcome: RateLimited, status: 429, state: Unknown, events: []string{KindProbeRateLimited}},
		{at: 3 * h, outcome: ProviderError, status: 500, state: Degraded, wantConfirm: true, wantAt: 3*h + 10*m},
		{at: 3*h + 10*m, outcome: RateLimited, status: 429, confirm: true, state: Unknown, events: []string{KindProbeRateLimited}},
		{at: 4 * h, outcome: ProviderError, status: 500, state: Degraded, wantConfirm: true, wantAt: 4*h + 10*m},
		{at: 4*h + 10*m, outcome: ProviderError, status: 500, confirm: true, state: Down, changes: []string{"state:up→down"}},
	})
	// The outage counts from the first failure at +3h; the 429 in
	// between neither counted nor broke the streak, and its time stays
	// unknown, so the state shown is down since probing resumed at +4h.
	if len(s.Streak) != 0 || !s.ConfirmedSince.Equal(t0.Add(3*h)) || !s.Since.Equal(t0.Add(4*h)) {
		t.Errorf("down confirmed since +%s, shown since +%s; want +3h and +4h", s.ConfirmedSince.Sub(t0), s.Since.Sub(t0))
	}
	if a := tl.Between(t0, t0.Add(4*h+10*m)); a.Up != h || a.Down != 20*m || a.Unknown != 2*h+50*m {
		t.Errorf("availability %+v, want 1h up, 20m down, 2h50m unknown", a)
	}
}

// TestStarvedByQuota: a day of probes held back by our exhausted quota
// leaves the dataset unknown, not down, and spends no confirmation.
func TestStarvedByQuota(t *testing.T) {
	steps := []step{{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}}}
	for i := 1; i < 24; i++ {
		steps = append(steps, step{at: time.Duration(i) * h, outcome: Throttled, state: Unknown, events: []string{KindProbeThrottled}})
	}
	s, _, tl := run(t, hourly, steps)
	if s.Confirmed != Up || s.State != Unknown {
		t.Errorf("starved: confirmed %s shown %s, want up and unknown", s.Confirmed, s.State)
	}
	if a := tl.Between(t0, t0.Add(24*h)); a.Down != 0 || a.Up != h || a.Unknown != 23*h {
		t.Errorf("availability %+v, want 1h up and 23h unknown", a)
	}
	if got := s.Current(t0.Add(23*h + 30*m)).State; got != Unknown {
		t.Errorf("current = %s", got)
	}
}

func TestNeverProbed(t *testing.T) {
	var zero DatasetState
	cur := zero.Current(t0)
	if cur.State != Unknown || cur.Reason != "never probed" {
		t.Errorf("never probed: %+v", cur)
	}
	// And a dataset whose probes stopped lapses into unknown.
	res := Step(hourly, zero, Probe{At: t0, Dataset: "ds", Outcome: OK})
	if got := res.State.Current(t0.Add(2 * h)).State; got != Up {
		t.Errorf("2h after the last probe: %s, want up", got)
	}
	cur = res.State.Current(t0.Add(2*h + 11*m))
	if cur.State != Unknown || !cur.Since.Equal(t0.Add(2*h+10*m)) || !strings.HasPrefix(cur.Reason, "no probe since") {
		t.Errorf("stale: %+v", cur)
	}
}

func TestBudgetSpent(t *testing.T) {
	cfg := hourly
	cfg.Policy.ConfirmationsPerDay = 1
	s, _, _ := run(t, cfg, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: ProviderError, status: 500, state: Degraded, wantConfirm: true, wantAt: 1*h + 10*m},
		{at: 1*h + 10*m, outcome: ProviderError, status: 500, confirm: true, state: Degraded, spent: true, events: []string{KindConfirmBudgetSpent}},
		// The next scheduled probe confirms instead; the event is not
		// repeated the same day.
		{at: 2 * h, outcome: ProviderError, status: 500, state: Down, changes: []string{"state:up→down"}},
		{at: 3 * h, outcome: OK, state: Degraded, spent: true},
		{at: 4 * h, outcome: OK, state: Up, changes: []string{"state:down→up"}},
		// A new day (UTC here) brings a new budget.
		{at: 24 * h, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 24*h + 10*m},
	})
	if s.BudgetDay != "2026-12-01" || s.ConfirmationsUsed != 0 {
		t.Errorf("budget day %s used %d", s.BudgetDay, s.ConfirmationsUsed)
	}
}

// TestBudgetDayInProviderTimezone: the confirmation budget resets at the
// provider's midnight, as its quota does.
func TestBudgetDayInProviderTimezone(t *testing.T) {
	seoul, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	cfg := hourly
	cfg.Policy.ConfirmationsPerDay = 1
	cfg.Policy.Location = seoul
	// 14:50 UTC is 23:50 KST; 15:10 UTC is 00:10 KST the next day.
	run(t, cfg, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 14*h + 40*m, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 14*h + 50*m},
		{at: 14*h + 50*m, outcome: Network, confirm: true, state: Degraded, spent: true, events: []string{KindConfirmBudgetSpent}},
		{at: 15*h + 10*m, outcome: Network, state: Down, changes: []string{"state:up→down"}},
		{at: 15*h + 20*m, outcome: OK, state: Degraded, wantConfirm: true, wantAt: 15*h + 30*m},
	})
}

func TestZeroBudgetNeverConfirms(t *testing.T) {
	cfg := hourly
	cfg.Policy.ConfirmationsPerDay = 0
	run(t, cfg, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: Network, state: Degraded, spent: true},
		{at: 2 * h, outcome: Network, state: Degraded, spent: true},
		{at: 3 * h, outcome: Network, state: Down, changes: []string{"state:up→down"}},
	})
}

func TestSlowIsDegraded(t *testing.T) {
	_, _, tl := run(t, hourly, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: OK, latency: 20 * time.Second, state: Degraded},
		{at: 2 * h, outcome: OK, latency: time.Second, state: Up},
	})
	if a := tl.Between(t0, t0.Add(3*h)); a.Degraded != h || a.Up != 2*h {
		t.Errorf("availability %+v, want 1h degraded", a)
	}
	if u, _ := tl.Between(t0, t0.Add(3*h)).Uptime(); u != 1 {
		t.Errorf("uptime %v: degraded counts as up", u)
	}
}

// TestSlownessConfirmedIsADegradedChange: three consecutive slow answers
// (FailuresToConfirm) confirm the dataset degraded — one Change, not one
// per slow answer — and two answers in time (SuccessesToConfirm) confirm
// it up again. A failed probe breaks a slow streak; our own throttling
// in between neither breaks nor extends it.
func TestSlownessConfirmedIsADegradedChange(t *testing.T) {
	slow := 20 * time.Second
	run(t, hourly, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 2 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 3 * h, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 3*h + 10*m},
		{at: 3*h + 10*m, outcome: OK, latency: slow, confirm: true, state: Degraded},
		{at: 4 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 5 * h, outcome: Throttled, state: Unknown, events: []string{KindProbeThrottled}},
		{at: 6 * h, outcome: OK, latency: slow, state: Degraded, changes: []string{"degraded:up→degraded"}},
		{at: 7 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 8 * h, outcome: OK, state: Up},
		{at: 9 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 10 * h, outcome: OK, state: Up},
		{at: 11 * h, outcome: OK, state: Up, changes: []string{"degraded:degraded→up"}},
		{at: 12 * h, outcome: OK, state: Up},
	})
}

// TestADownSubsumesSlowness: a dataset confirmed degraded that goes down
// is one down; its recovery is one up, with no degraded → up after it.
func TestADownSubsumesSlowness(t *testing.T) {
	slow := 20 * time.Second
	run(t, hourly, []step{
		{at: 0, outcome: OK, latency: slow, state: Degraded, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: OK, latency: slow, state: Degraded},
		{at: 2 * h, outcome: OK, latency: slow, state: Degraded, changes: []string{"degraded:up→degraded"}},
		{at: 3 * h, outcome: Network, state: Degraded, wantConfirm: true, wantAt: 3*h + 10*m},
		{at: 3*h + 10*m, outcome: Network, confirm: true, state: Degraded, wantConfirm: true, wantAt: 3*h + 20*m},
		{at: 3*h + 20*m, outcome: Network, confirm: true, state: Down, changes: []string{"state:up→down"}},
		{at: 6 * h, outcome: OK, state: Degraded, wantConfirm: true, wantAt: 6*h + 10*m},
		{at: 6*h + 10*m, outcome: OK, confirm: true, state: Up, changes: []string{"state:down→up"}},
		{at: 8 * h, outcome: OK, state: Up},
		{at: 9 * h, outcome: OK, state: Up},
	})
}

func TestAuthFailedCountsAsFailure(t *testing.T) {
	run(t, hourly, []step{
		{at: 0, outcome: AuthFailed, status: 401, state: Degraded, wantConfirm: true, wantAt: 10 * m},
		{at: 10 * m, outcome: AuthFailed, status: 401, confirm: true, state: Degraded, wantConfirm: true, wantAt: 20 * m},
		{at: 20 * m, outcome: AuthFailed, status: 401, confirm: true, state: Down, changes: []string{"state:unknown→down"}},
	})
}

func TestNoDataIsUp(t *testing.T) {
	run(t, hourly, []step{
		{at: 0, outcome: NoData, status: 200, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: NoData, status: 200, state: Up},
	})
}

// TestShapeChange: fields added, removed and retyped are Changes; key
// order, values, nulls and an error answer are not.
func TestShapeChange(t *testing.T) {
	var s DatasetState
	var got []Change
	for i, body := range []string{
		`{"rows":[{"date":"2026-11-27","value":"3.5"}]}`,
		`{"rows":[{"value":"3.6","date":"2026-11-28"},{"date":"2026-11-29","value":"3.7"}]}`, // same shape, other order
		`{"rows":[{"date":"2026-11-30","value":null}]}`,                                      // null: no type
		`{"rows":[]}`, // no rows: the row fields are gone
		`{"rows":[{"date":"2026-11-30","value":3.8,"unit":"%"}]}`, // retyped and added
	} {
		sh, err := FingerprintJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		res := Step(hourly, s, Probe{At: t0.Add(time.Duration(i) * h), Dataset: "ds", Outcome: OK, Shape: sh})
		for _, c := range res.Changes {
			if c.Kind == ChangeShape {
				got = append(got, c)
			}
		}
		s = res.State
	}
	// {"rows":[]} drops rows[].date and rows[].value: a removal. Then they
	// come back retyped and with a new field.
	if len(got) != 2 {
		t.Fatalf("shape changes: %+v", got)
	}
	if d := got[0].Shape; len(d.Removed) != 2 || d.Removed[0].Path != "$.rows.date" || len(d.Added) != 0 || len(d.Retyped) != 0 {
		t.Errorf("first change: %+v", d)
	}
	d := got[1].Shape
	if len(d.Added) != 3 || d.Added[0].Path != "$.rows.date" || d.Added[1].Path != "$.rows.unit" || d.Added[2].Path != "$.rows.value" {
		t.Errorf("second change added %+v", d.Added)
	}
	if got[1].From == "" || got[1].To == "" || got[1].From == got[1].To || !strings.Contains(got[1].Summary, "3 fields added") {
		t.Errorf("second change: %+v", got[1])
	}
}

// TestShapeRetyped: a value that turns from a string into a number is
// retyped; null in between changes nothing.
func TestShapeRetyped(t *testing.T) {
	var s DatasetState
	var changes []Change
	for i, body := range []string{`{"v":"1"}`, `{"v":null}`, `{"v":"2"}`, `{"v":2}`} {
		sh, err := FingerprintJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		res := Step(hourly, s, Probe{At: t0.Add(time.Duration(i) * h), Dataset: "ds", Outcome: OK, Shape: sh})
		for _, c := range res.Changes {
			if c.Kind == ChangeShape {
				changes = append(changes, c)
			}
		}
		s = res.State
	}
	if len(changes) != 1 || len(changes[0].Shape.Retyped) != 1 || changes[0].Shape.Retyped[0] != (Retype{Path: "$.v", From: "string", To: "number"}) {
		t.Fatalf("changes %+v", changes)
	}
	if changes[0].At != t0.Add(3*h) {
		t.Errorf("at %s", changes[0].At)
	}
}

func TestLateData(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	cfg := hourly
	cfg.Freshness = Freshness{Cycle: Daily, Lag: 24 * h, Weekdays: true, Tolerance: 1, Location: seoul}
	// t0 is Monday 2026-11-30 00:00 UTC = 09:00 KST. Due: the latest
	// weekday whose end + 24h is past: Friday 11-27 (ends Sat 00:00 KST,
	// due Sun 00:00 KST). With one period of tolerance, Thursday 11-26 is
	// the oldest newest that is not late.
	run(t, cfg, []step{
		{at: 0, outcome: OK, newest: "20261126", state: Up, changes: []string{"state:unknown→up"}},
		// Tuesday 09:00 KST: Monday's rows are due only from Wednesday
		// 00:00 KST.
		{at: 24 * h, outcome: OK, newest: "20261126", state: Up},
		// Wednesday 09:00 KST: Monday is due, Friday tolerated; Thursday
		// is late.
		{at: 48 * h, outcome: OK, newest: "20261126", state: Up, changes: []string{"late:2026-11-26→2026-11-27"}},
		{at: 49 * h, outcome: NoData, state: Up},
		// An older period in an answer never moves newest back.
		{at: 50 * h, outcome: OK, newest: "2026-11-20", state: Up},
		{at: 51 * h, outcome: OK, newest: "2026-11-30", state: Up, changes: []string{"caught_up:2026-11-27→2026-11-30"}},
	})
	// A failed probe never judges lateness.
	s, _, _ := run(t, cfg, []step{
		{at: 0, outcome: OK, newest: "2026-11-26", state: Up, changes: []string{"state:unknown→up"}},
		{at: 48 * h, outcome: ProviderError, status: 500, state: Degraded, wantConfirm: true, wantAt: 48*h + 10*m},
	})
	if s.Late {
		t.Error("a failed probe judged lateness")
	}
}

// TestLateMonthly: an ECOS monthly series with a 60-day lag.
func TestLateMonthly(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	cfg := hourly
	cfg.Freshness = Freshness{Cycle: Monthly, Lag: 60 * 24 * h, Location: seoul}
	// 2026-11-30 09:00 KST minus 60 days is 2026-10-01 09:00: October is
	// running, so September is due.
	run(t, cfg, []step{
		{at: 0, outcome: OK, newest: "202609", state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: OK, newest: "202608", state: Up}, // newest stays 2026-09
	})
	run(t, cfg, []step{
		{at: 0, outcome: OK, newest: "202608", state: Up, changes: []string{"state:unknown→up", "late:2026-08→2026-09"}},
	})
}

func TestClockBehindNeverRunsBackwards(t *testing.T) {
	var s DatasetState
	s = Step(hourly, s, Probe{At: t0.Add(2 * h), Dataset: "ds", Outcome: OK}).State
	res := Step(hourly, s, Probe{At: t0.Add(1 * h), Dataset: "ds", Outcome: Network})
	if !res.State.LastProbe.Equal(t0.Add(2*h)) || !res.State.Since.Equal(t0.Add(2*h)) {
		t.Errorf("last probe %s since %s, want both at +2h", res.State.LastProbe.Sub(t0), res.State.Since.Sub(t0))
	}
	if !res.Confirm.At.Equal(t0.Add(2*h + 10*m)) {
		t.Errorf("confirm at %s", res.Confirm.At.Sub(t0))
	}
	if res.Probe.At != t0.Add(1*h) {
		t.Error("the record must keep its own time")
	}
}

// TestGapIsUnknown: when probes stop and resume, the time between is
// unknown, not the state before the gap.
func TestGapIsUnknown(t *testing.T) {
	_, _, tl := run(t, hourly, []step{
		{at: 0, outcome: OK, state: Up, changes: []string{"state:unknown→up"}},
		{at: 1 * h, outcome: OK, state: Up},
		{at: 30 * h, outcome: OK, state: Up},
		{at: 31 * h, outcome: OK, state: Up},
	})
	a := tl.Between(t0, t0.Add(32*h))
	// Known: 0..3h10m (the last probe before the gap counts for its
	// StaleAfter), 30h..32h.
	if a.Up != 3*h+10*m+2*h || a.Unknown != 32*h-a.Up {
		t.Errorf("availability %+v", a)
	}
}

func TestStepDoesNotModifyPrev(t *testing.T) {
	var s DatasetState
	s = Step(hourly, s, Probe{At: t0, Dataset: "ds", Outcome: OK}).State
	s = Step(hourly, s, Probe{At: t0.Add(h), Dataset: "ds", Outcome: Network}).State
	before := fmt.Sprintf("%+v", s)
	Step(hourly, s, Probe{At: t0.Add(h + 10*m), Dataset: "ds", Outcome: Network})
	if fmt.Sprintf("%+v", s) != before {
		t.Error("Step modified its input state")
	}
}

func TestDetectRevisions(t *testing.T) {
	at := t0
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     []string
	}{
		{"no overlap", map[string]string{"2026-01": "1"}, map[string]string{"2026-02": "2"}, nil},
		{"same values", map[string]string{"2026-01": "1.50", "2026-02": " 007 "}, map[string]string{"2026-01": "1.5", "2026-02": "7"}, nil},
		{"revised", map[string]string{"2026-01": "3.5", "2026-02": "3.6", "2026-03": "."}, map[string]string{"2026-03": "3.9", "2026-01": "3.5", "2026-02": "3.7"},
			[]string{"2026-02:3.6→3.7", "2026-03:.→3.9"}},
		{"sign and zero", map[string]string{"a": "-0", "b": "-1.0", "c": "1e3"}, map[string]string{"a": "0.000", "b": "1", "c": "1000"},
			[]string{"b:-1.0→1", "c:1e3→1000"}},
		{"text", map[string]string{"a": "N/A"}, map[string]string{"a": ""}, []string{`a:N/A→`}},
		{"nil maps", nil, nil, nil},
	} {
		var got []string
		for _, c := range DetectRevisions(at, "ds", tc.old, tc.new) {
			if c.Kind != ChangeRevision || c.Dataset != "ds" || !c.At.Equal(at) || c.Summary == "" {
				t.Errorf("%s: change %+v", tc.name, c)
			}
			got = append(got, fmt.Sprintf("%s:%s→%s", c.Period, c.From, c.To))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: revisions %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCanonicalDecimal(t *testing.T) {
	for in, want := range map[string]string{"1.50": "1.5", "007": "7", "-0.0": "0", ".5": "0.5", "5.": "5", "+3": "3", "-12.340": "-12.34", "0": "0"} {
		if got, ok := canonicalDecimal(in); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", ".", "-", "1e3", "1,000", "NaN", "1.2.3", "--1", "١"} {
		if got, ok := canonicalDecimal(in); ok {
			t.Errorf("%q: accepted as %q", in, got)
		}
	}
}

func TestNormalizeBoundsText(t *testing.T) {
	long := strings.Repeat("x", 5000)
	c := Change{At: t0, Dataset: "ds", Kind: ChangeRevision, From: long, To: long, Period: long, Summary: long, Evidence: make([]ProbeRef, 500)}.Normalize()
	if len(c.From) > MaxValueBytes || len(c.Summary) > MaxMessageBytes || len(c.Period) > MaxNewestBytes || len(c.Evidence) != MaxEvidence {
		t.Errorf("change not bounded: %d %d %d %d", len(c.From), len(c.Summary), len(c.Period), len(c.Evidence))
	}
	attrs := map[string]string{}
	for i := 0; i < 100; i++ {
		attrs[fmt.Sprintf("k%03d", i)] = long
	}
	e := Event{Kind: "k", At: t0, Message: long + "\xff", Attrs: attrs}.Normalize()
	if len(e.Message) > MaxMessageBytes || len(e.Attrs) != MaxAttrs || len(e.Attrs["k000"]) > MaxValueBytes || e.Attrs["k031"] == "" {
		t.Errorf("event not bounded: %d %d", len(e.Message), len(e.Attrs))
	}
}
