package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

// TestTakeServesDailyFirst: a process's batch for a scope is the first
// daily waiter's class and Delay, ahead of backfill waiters that came
// earlier (before priorities, the first waiter's Delay alone decided, and
// an earlier backfill went first).
func TestTakeServesDailyFirst(t *testing.T) {
	ctx := context.Background()
	w := func(p connector.Priority) *waiter {
		return &waiter{ctx: ctx, opts: AcquireOptions{Priority: p}, res: make(chan result, 1)}
	}
	bf1, d1, bf2, d2 := w(connector.PriorityBackfill), w(connector.PriorityDaily), w(connector.PriorityBackfill), w(connector.PriorityDaily)
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
	b.rules = RulesPriority
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
