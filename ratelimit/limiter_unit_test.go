package ratelimit_test

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// limiterEnv runs ScopeLimiter in the SDK's test environment (a mock
// clock: time moves only with the script), for the workflow's own rules
// without a server. A script is a list of steps at increasing offsets from
// the start: updates, whose results land in the variables given, and
// checks. The test environment delivers an update between steps.
type limiterEnv struct {
	t    *testing.T
	env  *testsuite.TestWorkflowEnvironment
	next time.Duration
}

func newLimiterEnv(t *testing.T) *limiterEnv {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(ratelimit.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
	env.SetStartTime(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
	return &limiterEnv{t: t, env: env, next: time.Second}
}

// wait moves the script's clock on.
func (e *limiterEnv) wait(d time.Duration) { e.next += d }

// then runs f at the script's next step.
func (e *limiterEnv) then(f func()) {
	e.env.RegisterDelayedCallback(f, e.next)
	e.next += time.Millisecond
}

// update sends an update at the next step; its result is decoded into out
// (its error into *errp when errp is not nil, else it fails the test).
func (e *limiterEnv) update(name string, arg func() any, out any, errp *error) {
	e.then(func() {
		cb := &testsuite.TestUpdateCallback{
			OnReject: func(r error) { e.fail(errp, r) },
			OnComplete: func(v any, r error) {
				if r != nil {
					e.fail(errp, r)
					return
				}
				ev, ok := v.(converter.EncodedValue)
				if !ok {
					p, err := converter.GetDefaultDataConverter().ToPayload(v)
					if err != nil {
						e.fail(errp, err)
						return
					}
					if err := converter.GetDefaultDataConverter().FromPayload(p, out); err != nil {
						e.fail(errp, err)
					}
					return
				}
				if err := ev.Get(out); err != nil {
					e.fail(errp, err)
				}
			},
		}
		if a := arg(); a == nil {
			e.env.UpdateWorkflow(name, "", cb)
		} else {
			e.env.UpdateWorkflow(name, "", cb, a)
		}
	})
}

func (e *limiterEnv) fail(errp *error, err error) {
	if errp != nil {
		*errp = err
		return
	}
	e.t.Errorf("update: %v", err)
}

func (e *limiterEnv) state() ratelimit.State {
	v, err := e.env.QueryWorkflow(ratelimit.StateQuery)
	if err != nil {
		e.t.Fatal(err)
	}
	var s ratelimit.State
	if err := v.Get(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *limiterEnv) acquire(caller string, lim ledger.Limits, n int, out *ratelimit.AcquireResponse) {
	e.update(ratelimit.AcquireUpdate, func() any { return ratelimit.AcquireRequest{N: n, Limits: lim, Caller: caller} }, out, nil)
}

// recoverFirst answers the fresh run's first question: no run before.
func (e *limiterEnv) recoverFirst(lim ledger.Limits) {
	var r ratelimit.AcquireResponse
	e.acquire("setup", lim, 1, &r)
	e.update(ratelimit.RecoverUpdate, func() any { return ratelimit.RecoverRequest{ForRunID: r.RunID} }, &ratelimit.State{}, nil)
}

func perSecond(n int) ledger.Limits {
	return ledger.Limits{Windows: []ledger.Window{{Length: time.Second, Count: n}}, Tolerance: 10 * time.Millisecond}
}

// TestLimiterRecoversBeforeGranting: a run that does not continue its
// scope's state grants nothing until it is handed the last run's state,
// and then keeps that state's windows and day counts; a recover meant for
// another run is ignored.
func TestLimiterRecoversBeforeGranting(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(2)
	lim.DailyQuota = 3
	var first, after, last ratelimit.AcquireResponse
	var other, recovered ratelimit.State
	e.acquire("a", lim, 1, &first)
	e.update(ratelimit.RecoverUpdate, func() any {
		return ratelimit.RecoverRequest{ForRunID: "another-run", State: &ratelimit.State{}}
	}, &other, nil)
	e.update(ratelimit.RecoverUpdate, func() any {
		// The last run's state: two grants a moment ago, two of today's
		// three calls used.
		now := e.state().Now
		prev := ratelimit.State{ScopeID: "x", Limits: lim, Ledger: ledger.Ledger{
			Grants: []ledger.Grant{{ID: 7, At: now.Add(-100 * time.Millisecond)}, {ID: 8, At: now.Add(-50 * time.Millisecond)}},
			NextID: 8, Days: []ledger.DayCount{{Day: now.Format(time.DateOnly), Count: 2}},
		}}
		return ratelimit.RecoverRequest{ForRunID: first.RunID, From: "prev", State: &prev}
	}, &recovered, nil)
	e.acquire("a", lim, 3, &after)
	e.acquire("a", lim, 1, &last)
	e.then(func() {
		if !first.Recover || len(first.Grants) != 0 || first.RunID == "" {
			t.Errorf("first acquire of a fresh run: %+v", first)
		}
		if !other.Recovering {
			t.Errorf("a recover for another run was applied: %+v", other)
		}
		if recovered.Recovering || recovered.RecoveredFrom != "prev" {
			t.Errorf("recover: %+v", recovered)
		}
		// The window is full until the recovered grants leave it; one call
		// is left of the day's quota.
		if len(after.Grants) != 1 || after.Grants[0].ID != 9 || after.Waits[0] < 900*time.Millisecond {
			t.Errorf("after recovering: %+v (the recovered window or ids were forgotten)", after)
		}
		if last.Quota == nil {
			t.Errorf("the recovered day count was forgotten: %+v", last)
		}
	})
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: lim})
}

// TestLimiterQuarantine: when the last run's state cannot be read, the run
// grants nothing until any grant of that run has left every window, and
// counts the day's quota as spent.
func TestLimiterQuarantine(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(2)
	lim.DailyQuota = 100
	var first, after ratelimit.AcquireResponse
	var st ratelimit.State
	e.acquire("a", lim, 1, &first)
	e.update(ratelimit.RecoverUpdate, func() any {
		return ratelimit.RecoverRequest{ForRunID: first.RunID, Quarantine: true, Reason: "test"}
	}, &st, nil)
	e.acquire("a", lim, 1, &after)
	e.then(func() {
		if st.Ledger.Quarantines != 1 || st.Recovering {
			t.Errorf("state after the quarantine: %+v", st)
		}
		if after.Quota == nil || len(after.Grants) != 0 {
			t.Errorf("a quarantined day granted %+v", after)
		}
	})
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: lim})
}

// TestLimiterRelaxesWhenStricterCallerGoes: the stricter of the live
// callers' limits holds; once the stricter caller has not asked for
// CallerTTL, the scope relaxes to what the live callers ask. An operator's
// limits (reconfigure) hold until cleared, and callers' limits from before
// the change stop counting.
func TestLimiterRelaxesWhenStricterCallerGoes(t *testing.T) {
	e := newLimiterEnv(t)
	strict, loose := perSecond(1), perSecond(5)
	strict.Tolerance = 200 * time.Millisecond // a client that widened its tolerance
	e.recoverFirst(loose)
	var r ratelimit.AcquireResponse
	check := func(what string, count int, tol time.Duration) {
		e.then(func() {
			if got := e.state().Limits; got.Windows[0].Count != count || got.Tolerance != tol {
				t.Errorf("%s: %d per %v, tolerance %v; want %d, %v", what, got.Windows[0].Count, got.Windows[0].Length, got.Tolerance, count, tol)
			}
		})
	}
	e.acquire("strict", strict, 1, &r)
	e.acquire("loose", loose, 1, &r)
	check("a strict caller live", 1, 200*time.Millisecond)
	e.wait(ratelimit.CallerTTL / 2)
	e.acquire("loose", loose, 1, &r)
	check("the strict caller seen half a TTL ago", 1, 200*time.Millisecond)
	e.wait(ratelimit.CallerTTL)
	e.acquire("loose", loose, 1, &r)
	check("the strict caller gone", 5, loose.Tolerance)
	// An operator lowers the limit: it holds at once, over the live
	// caller's; cleared, the live caller's holds again.
	two := perSecond(2)
	e.update(ratelimit.ReconfigureUpdate, func() any { return ratelimit.ReconfigureRequest{Limits: &two, Reason: "test"} }, &ratelimit.State{}, nil)
	check("reconfigured", 2, two.Tolerance)
	e.acquire("loose", loose, 1, &r)
	check("reconfigured, then a looser caller asked", 2, loose.Tolerance)
	e.update(ratelimit.ReconfigureUpdate, func() any { return ratelimit.ReconfigureRequest{Reason: "clear"} }, &ratelimit.State{}, nil)
	e.acquire("loose", loose, 1, &r)
	check("the operator's limits cleared", 5, loose.Tolerance)
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: loose})
}

// TestLimiterCancelContinuesWithState: a cancel request ends the run, not
// the state: the run continues as new, carrying its ledger, callers and
// operator limits, marked recovered.
func TestLimiterCancelContinuesWithState(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(3)
	e.recoverFirst(lim)
	var r ratelimit.AcquireResponse
	e.acquire("a", lim, 3, &r)
	e.then(func() { e.env.CancelWorkflow() })
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: lim})
	var can *workflow.ContinueAsNewError
	if err := e.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want a continue-as-new", err)
	}
	var in ratelimit.LimiterInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if !in.Recovered || len(in.Ledger.Grants) != 3 || len(in.Callers) != 2 || in.ScopeID != "x" {
		t.Errorf("continued with %+v", in)
	}
}

// TestLimiterOfTheOldProtocolKeepsItsGrants: a limiter run started by a
// client of the previous protocol (no Protocol in its input) keeps that
// version's rules when a new worker picks it up: it grants at once from
// the ledger it carries instead of waiting for a recovery that would
// replace its own grants with an older run's.
func TestLimiterOfTheOldProtocolKeepsItsGrants(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(3)
	var r ratelimit.AcquireResponse
	e.acquire("a", lim, 2, &r)
	e.then(func() {
		if r.Recover || len(r.Grants) != 2 {
			t.Errorf("a protocol-1 run answered %+v", r)
		}
	})
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Limits: lim})
}

func (e *limiterEnv) ask(req ratelimit.AcquireRequest, out *ratelimit.AcquireResponse) {
	e.update(ratelimit.AcquireUpdate, func() any { return req }, out, nil)
}

// TestLimiterServesDailyBeforeBackfill: two callers (two worker
// processes) wait for one scope, a daily one and a backfill. While the
// daily caller's last answer left calls waiting, the limiter gives the
// backfill nothing and tells it to ask again shortly; the waiting caller
// is part of the ledger, so a continued or recovered run knows it. Once the
// daily caller has all it asked for, the backfill gets the rest of the
// window. (Before priorities the backfill took the next window, 1.011 s
// away, and the daily caller's last three calls came a window later.)
func TestLimiterServesDailyBeforeBackfill(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(5)
	e.recoverFirst(lim)
	hz := 10 * time.Millisecond
	var d1, b1, d2, b2 ratelimit.AcquireResponse
	var mid ratelimit.State
	e.ask(ratelimit.AcquireRequest{N: 8, Limits: lim, Horizon: hz, Caller: "daily"}, &d1)
	e.wait(500 * time.Millisecond)
	e.ask(ratelimit.AcquireRequest{N: 5, Limits: lim, Horizon: hz, Caller: "backfill", Priority: permit.PriorityBackfill}, &b1)
	e.then(func() { mid = e.state() })
	e.wait(490 * time.Millisecond)
	e.ask(ratelimit.AcquireRequest{N: 3, Limits: lim, Horizon: hz, Caller: "daily"}, &d2)
	e.ask(ratelimit.AcquireRequest{N: 5, Limits: lim, Horizon: hz, Caller: "backfill", Priority: permit.PriorityBackfill}, &b2)
	e.then(func() {
		if len(d1.Grants) != 5 || d1.Rules < ledger.RulesPriority {
			t.Fatalf("first daily answer: %+v", d1)
		}
		if len(b1.Grants) != 0 || !b1.Yielded || b1.RetryIn <= 0 {
			t.Errorf("a backfill was served while a daily caller waited: %+v", b1)
		}
		if len(mid.Ledger.Waiting) != 1 || mid.Ledger.Waiting[0].Caller != "daily" {
			t.Errorf("the waiting daily caller is not in the ledger's state: %+v", mid.Ledger.Waiting)
		}
		if len(d2.Grants) != 3 || len(b2.Grants) != 2 || !b2.Grants[0].At.Equal(d2.Grants[0].At) {
			t.Errorf("second window: daily %+v, backfill %+v; want the daily caller's 3 first, the backfill the 2 left", d2.Grants, b2.Grants)
		}
		if !d2.Grants[0].At.After(d1.Grants[0].At.Add(time.Second)) {
			t.Errorf("second window at %s, first at %s", d2.Grants[0].At, d1.Grants[0].At)
		}
	})
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: lim})
}

// TestLimiterBackfillShareEndsAtProviderMidnight: a quota of 10 a day in
// Seoul with 7 reserved for the day's ingests and probes gives a backfill 3
// calls, then a quota answer whose reset is Seoul's midnight (the error the
// Backfill workflow waits on); daily callers still get their 7.
func TestLimiterBackfillShareEndsAtProviderMidnight(t *testing.T) {
	e := newLimiterEnv(t)
	lim := perSecond(50)
	lim.DailyQuota, lim.Reserved, lim.Timezone = 10, 7, "Asia/Seoul"
	e.recoverFirst(lim)
	var b, d, after ratelimit.AcquireResponse
	e.ask(ratelimit.AcquireRequest{N: 5, Limits: lim, Caller: "backfill", Priority: permit.PriorityBackfill}, &b)
	e.ask(ratelimit.AcquireRequest{N: 7, Limits: lim, Caller: "daily"}, &d)
	e.ask(ratelimit.AcquireRequest{N: 1, Limits: lim, Caller: "backfill", Priority: permit.PriorityBackfill}, &after)
	e.then(func() {
		// The test starts at 2026-11-30 03:00 UTC, noon in Seoul.
		midnight := time.Date(2026, 12, 1, 0, 0, 0, 0, time.FixedZone("KST", 9*3600))
		if len(b.Grants) != 3 || b.Quota == nil || !b.Quota.Backfill || !b.Quota.ResetAt.Equal(midnight) {
			t.Errorf("backfill: %d grants, quota %+v; want 3 and the share spent until %s", len(b.Grants), b.Quota, midnight)
		}
		if len(d.Grants) != 7 || d.Quota != nil {
			t.Errorf("daily after the backfill: %d grants, quota %+v; want the 7 reserved", len(d.Grants), d.Quota)
		}
		if after.Quota == nil || len(after.Grants) != 0 {
			t.Errorf("backfill after its share: %+v", after)
		}
	})
	e.env.ExecuteWorkflow(ratelimit.WorkflowName, ratelimit.LimiterInput{ScopeID: "x", Protocol: ratelimit.LimiterProtocol, Limits: lim})
}
