package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// TestTakeServesDailyFirst: a process's batch for a scope is the first
// daily waiter's class and Delay, ahead of backfill waiters that came
// earlier (before priorities, the first waiter's Delay alone decided, and
// an earlier backfill went first).
func TestTakeServesDailyFirst(t *testing.T) {
	ctx := context.Background()
	w := func(p permit.Priority) *waiter {
		return &waiter{ctx: ctx, opts: AcquireOptions{Priority: p}, res: make(chan result, 1)}
	}
	bf1, d1, bf2, d2 := w(permit.PriorityBackfill), w(permit.PriorityDaily), w(permit.PriorityBackfill), w(permit.PriorityDaily)
	c := &Client{scopes: map[string]*batcher{}}
	b := &batcher{scope: "x", pending: []*waiter{bf1, d1, bf2, d2}}
	if got := c.take(b); len(got) != 2 || got[0] != d1 || got[1] != d2 {
		t.Fatalf("first batch %v, want the two daily waiters", got)
	}
	if got := c.take(b); len(got) != 2 || got[0] != bf1 || got[1] != bf2 {
		t.Fatalf("second batch %v, want the two backfill waiters", got)
	}
}

// TestFittedTolerance: without FitTolerance, or before the limiter says it
// follows RulesPriority, the configured tolerance (widened, if it was);
// with both, 1.5 × the 75th percentile of the round trips + wakeMargin,
// within MinTolerance and the configured one, above it while round trips
// are slower, and back down when they recover.
func TestFittedTolerance(t *testing.T) {
	ms := time.Millisecond
	fill := func(b *batcher, rtt time.Duration) {
		for range rttSamples {
			b.observe(rtt)
		}
	}
	b := &batcher{}
	fill(b, 4*ms)
	if got := b.tolerance(50 * ms); got != 50*ms {
		t.Errorf("not fitting: %s, want the configured 50ms", got)
	}
	b.fit = true
	if got := b.tolerance(50 * ms); got != 50*ms {
		t.Errorf("legacy limiter: %s, want the configured 50ms", got)
	}
	b.rules = ledger.RulesPriority
	fill(b, 10*ms)
	if got := b.tolerance(50 * ms); got != 18*ms {
		t.Errorf("10ms round trips: %s, want 18ms", got)
	}
	fill(b, 2*ms)
	if got := b.tolerance(50 * ms); got != MinTolerance {
		t.Errorf("2ms round trips: %s, want MinTolerance", got)
	}
	fill(b, 100*ms)
	if got := b.tolerance(50 * ms); got != 153*ms {
		t.Errorf("100ms round trips: %s, want 153ms (above the configured)", got)
	}
	fill(b, 10*ms)
	if got := b.tolerance(50 * ms); got != 18*ms {
		t.Errorf("round trips recovered: %s, want 18ms again", got)
	}
}

// TestWidenedToleranceNarrows: three answers slower than the configured
// tolerance widen it to twice their round trip; once round trips recover,
// the next narrowSamples timely answers narrow it again — to twice the
// slowest of them, or back to the configured one when that covers them.
// A legacy limiter's widening stays (it spaces every grant by the widest
// tolerance asked). The old client kept a widened tolerance for the
// worker's life.
func TestWidenedToleranceNarrows(t *testing.T) {
	ms := time.Millisecond
	const configured = 50 * time.Millisecond
	for _, tc := range []struct {
		rules     int
		recovered time.Duration // the round trips after the slow ones
		want      time.Duration
	}{
		{ledger.RulesLatest, 10 * ms, configured},
		{ledger.RulesPriority, 40 * ms, 80 * ms},
		{ledger.RulesLegacy, 10 * ms, 200 * ms},
	} {
		c := NewClient(nil, ClientOptions{})
		c.mu.Lock()
		b := c.batcher("x")
		c.mu.Unlock()
		ask := func(rtt time.Duration, grants []ledger.Grant) {
			tol := b.tolerance(configured)
			batch := []*waiter{{ctx: context.Background(), res: make(chan result, 1)}}
			req := AcquireRequest{N: 1, Limits: ledger.Limits{MinInterval: 150 * ms, Tolerance: tol}}
			c.answer(b, batch, req, configured, AcquireResponse{Grants: grants, Rules: tc.rules}, time.Now(), rtt)
			b.pending = nil
		}
		for i := range 3 {
			ask(100*ms, []ledger.Grant{{ID: uint64(i + 1)}})
		}
		if got := b.tolerance(configured); got != 200*ms {
			t.Fatalf("rules %d: after three answers of 100ms, tolerance %v, want widened to 200ms", tc.rules, got)
		}
		for range narrowSamples {
			ask(tc.recovered, nil)
		}
		if got := b.tolerance(configured); got != tc.want {
			t.Errorf("rules %d: after %d answers of %v, tolerance %v, want %v", tc.rules, narrowSamples, tc.recovered, got, tc.want)
		}
	}
}
