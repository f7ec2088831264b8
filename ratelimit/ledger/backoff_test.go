package ledger

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPenalizeDecreasesAndIncreasesAdditively(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}}
	var l Ledger
	res := l.Penalize(t0, lim, Penalty{RetryAfter: 3 * time.Second}) // longer than the window: a pause
	if !res.Confirmed || res.Factor != DecreaseFactor || res.Pause != 3*time.Second || !l.PausedUntil.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("first penalty: %+v, paused until %v", res, l.PausedUntil)
	}
	// One window later the rate is up by one step; never above the
	// declaration.
	if f := l.CurrentFactor(t0.Add(time.Second), lim); math.Abs(f-(DecreaseFactor+IncreaseStep)) > 1e-9 {
		t.Errorf("factor after a window = %v", f)
	}
	if f := l.CurrentFactor(t0.Add(time.Hour), lim); f != 1 {
		t.Errorf("factor after an hour = %v", f)
	}
	// A grant made after the decrease, rejected: confirmed, the rate comes
	// down again from where it had climbed to.
	g := l.Reserve(t0.Add(3*time.Second), lim, Ask{N: 1}).Grants[0]
	now := t0.Add(4 * time.Second)
	climbed := l.CurrentFactor(now, lim)
	res = l.Penalize(now, lim, Penalty{GrantID: g.ID})
	if !res.Confirmed || math.Abs(res.Factor-climbed*DecreaseFactor) > 1e-9 || res.Previous != climbed {
		t.Errorf("confirmed penalty: %+v (climbed to %v)", res, climbed)
	}
	for range 100 {
		l.Penalize(now, lim, Penalty{GrantID: l.NextID + 1})
	}
	if l.Factor != minFactor {
		t.Errorf("factor floor = %v", l.Factor)
	}
}

// TestInFlightRejectionsDoNotCompound: rejections of calls granted before
// the rate came down answer the old rate, not the new one: counted, never
// decreasing again (nor pausing again), however late they arrive.
func TestInFlightRejectionsDoNotCompound(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 10 * time.Millisecond}
	var l Ledger
	burst := l.Reserve(t0, lim, Ask{N: 5}).Grants
	first := l.Penalize(t0.Add(20*time.Millisecond), lim, Penalty{GrantID: burst[0].ID, RetryAfter: 2 * time.Second})
	if !first.Confirmed {
		t.Fatal("first rejection not confirmed")
	}
	paused := l.PausedUntil
	for i, g := range burst[1:] {
		// Even long after the decrease (a slow provider answer).
		res := l.Penalize(t0.Add(time.Duration(i+1)*3*time.Second), lim, Penalty{GrantID: g.ID, RetryAfter: 2 * time.Second})
		if res.Confirmed || res.Pause != 0 {
			t.Errorf("rejection %d of a call granted before the decrease: %+v", i+1, res)
		}
	}
	if l.Decreases != 1 || l.Penalties != 5 || !l.PausedUntil.Equal(paused) {
		t.Errorf("decreases %d, penalties %d, paused until %v (was %v)", l.Decreases, l.Penalties, l.PausedUntil, paused)
	}
	// A block pauses whatever it answers.
	if res := l.Penalize(t0.Add(20*time.Second), lim, Penalty{GrantID: burst[0].ID, RetryAfter: time.Minute, Block: true}); res.Pause != time.Minute {
		t.Errorf("block: %+v", res)
	}
}

// TestPauseIsCapped: a provider's wait of a century holds the scope back
// for at most MaxPause, and the result says the capped value.
func TestPauseIsCapped(t *testing.T) {
	var l Ledger
	res := l.Penalize(t0, Limits{}, Penalty{RetryAfter: 100 * 365 * 24 * time.Hour, Block: true})
	if res.Pause != MaxPause || !l.PausedUntil.Equal(t0.Add(MaxPause)) {
		t.Errorf("pause %v, paused until %v; want %v", res.Pause, l.PausedUntil, MaxPause)
	}
}

// aimdRun simulates one scope against a provider whose true limit is
// trueCount calls per sliding window of lim's window, with the ledger
// deciding every grant (injected time, no wall clock): a client keeps
// asking for its pending calls, sends each at its grant (plus a little
// jitter), and the provider accepts or rejects it; a rejection reaches the
// limiter 10 ms later with the grant's id and a one-second Retry-After (KIS
// EGW00201), and the call is retried a second later. It returns when the
// calls are done, the rejections, and the ledger.
func aimdRun(t *testing.T, seed uint64, lim Limits, trueCount, calls int) (time.Duration, int, Ledger) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var l Ledger
	var q eventQueue
	push := func(e event) { heap.Push(&q, e) }
	pending := calls
	asking := true
	push(event{at: t0, kind: evAsk})
	var accepted []time.Time
	done, rejected := 0, 0
	const rtt, answer = 3 * time.Millisecond, 10 * time.Millisecond
	for q.Len() > 0 && done < calls {
		e := heap.Pop(&q).(event)
		switch e.kind {
		case evAsk:
			if pending == 0 {
				asking = false
				continue
			}
			ans := l.Reserve(e.at, lim, Ask{N: pending, Horizon: lim.Tolerance})
			pending -= len(ans.Grants)
			for _, g := range ans.Grants {
				push(event{at: g.At.Add(rtt + time.Duration(rng.IntN(2000))*time.Microsecond), kind: evSend, grant: g.ID})
			}
			next := e.at.Add(rtt)
			if len(ans.Grants) == 0 {
				next = e.at.Add(ans.RetryIn + rtt)
			}
			push(event{at: next, kind: evAsk})
		case evSend:
			// The provider: a sliding window over accepted calls, (t−L, t].
			n := 0
			for i := len(accepted) - 1; i >= 0 && e.at.Sub(accepted[i]) < lim.Windows[0].Length; i-- {
				n++
			}
			if n < trueCount {
				accepted = append(accepted, e.at)
				done++
				continue
			}
			rejected++
			push(event{at: e.at.Add(answer), kind: evReject, grant: e.grant})
			push(event{at: e.at.Add(answer + time.Second), kind: evRetry})
		case evReject:
			l.Penalize(e.at, lim, Penalty{GrantID: e.grant, RetryAfter: time.Second})
		case evRetry:
			pending++
			if !asking {
				asking = true
				push(event{at: e.at, kind: evAsk})
			}
		}
	}
	if done < calls {
		t.Fatalf("seed %d: only %d of %d calls done", seed, done, calls)
	}
	return accepted[len(accepted)-1].Sub(t0), rejected, l
}

// TestAIMDFindsTheProvidersRate: against a provider that accepts only 2 of
// the 5 calls a second the scope declares (the KIS with
// reject-at=0.5), the backoff settles just under 2/s: 100 calls finish
// within 1.3× of the time at the true limit, with few rejections, and the
// factor ends near 2/5. Deterministic: the clock is simulated.
func TestAIMDFindsTheProvidersRate(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond}
	const trueCount, calls = 2, 100
	ideal := time.Duration(calls/trueCount-1) * time.Second // pairs, one a second: 49 s
	for seed := uint64(1); seed <= 10; seed++ {
		took, rejected, l := aimdRun(t, seed, lim, trueCount, calls)
		ratio := float64(took) / float64(ideal)
		f := l.Factor
		t.Logf("seed %d: %d calls in %v (%.2f× the true limit's %v), %d rejections, %d decreases, factor %.3f", seed, calls, took.Round(time.Millisecond), ratio, ideal, rejected, l.Decreases, f)
		if ratio > 1.3 {
			t.Errorf("seed %d: %.2f× the time at the true limit, want at most 1.3×", seed, ratio)
		}
		if rejected > 25 {
			t.Errorf("seed %d: %d rejections for %d calls", seed, rejected, calls)
		}
		if f < 0.25 || f > 0.45 {
			t.Errorf("seed %d: factor %.3f, want near %.2f", seed, f, float64(trueCount)/5)
		}
	}
	// With a true limit at the declaration, nothing is rejected and the
	// rate never comes down.
	_, rejected, l := aimdRun(t, 1, lim, 5, calls)
	if rejected != 0 || l.Decreases != 0 {
		t.Errorf("at the declared limit: %d rejections, %d decreases", rejected, l.Decreases)
	}
}

type evKind int

const (
	evAsk evKind = iota
	evSend
	evReject
	evRetry
)

type event struct {
	at    time.Time
	kind  evKind
	grant uint64
	seq   int
}

type eventQueue []event

var evSeq int

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any) {
	e := x.(event)
	evSeq++
	e.seq = evSeq
	*q = append(*q, e)
}
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
