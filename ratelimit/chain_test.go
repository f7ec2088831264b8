package ratelimit

import (
	"context"
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/ratelimit/ledger"
)

// TestReadyFollowsOwnSends: a permit linked to an earlier grant of the
// process waits for that grant's request to be written and answered,
// then a gap after the latest moment the provider can have counted it:
// its answer. An earlier grant
// handed out and never reported counts at its deadline; a released one
// not at all; and a link that pushes the call past its deadline makes it
// late.
func TestReadyFollowsOwnSends(t *testing.T) {
	c := NewClient(nil, ClientOptions{})
	b := c.batcher("s")
	now := time.Now()
	long := now.Add(time.Minute)
	short := now.Add(30 * time.Millisecond)
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 1, SendAt: now, Deadline: short},
		{Scope: "s", GrantID: 2, SendAt: now, Deadline: short},
		{Scope: "s", GrantID: 3, SendAt: now, Deadline: long},
		{Scope: "s", GrantID: 4, SendAt: now, Deadline: short}}, chainedAll(4), now)
	gap := 40 * time.Millisecond
	ready := func(link uint64) error {
		return c.Ready(context.Background(), []Permit{{Scope: "s", GrantID: 9, SendAt: now, Deadline: long, Links: []ledger.Link{{ID: link, Gap: gap}}, client: c}})
	}
	tr := c.Track([]Permit{{Scope: "s", GrantID: 1, Deadline: short}})
	if !tr.Leave(time.Now()) {
		t.Fatal("grant 1 could not leave")
	}
	done := make(chan error, 1)
	go func() { done <- ready(1) }()
	select {
	case err := <-done:
		t.Fatalf("Ready returned (%v) before grant 1's request was written", err)
	case <-time.After(50 * time.Millisecond):
	}
	wrote := time.Now()
	tr.Wrote(wrote)
	select {
	case err := <-done:
		t.Fatalf("Ready returned (%v) before grant 1's request was answered", err)
	case <-time.After(50 * time.Millisecond):
	}
	tr.Done(wrote.Add(2 * time.Millisecond)) // the quickest round trip: 2 ms
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := time.Since(wrote); got < gap {
		t.Errorf("Ready returned %s after the write, want ≥ %s", got, gap)
	}

	// Grant 3, released, counts for nothing.
	c.Release(Permit{Scope: "s", GrantID: 3})
	// Grant 4 is answered 30 ms after its write: counted up to then.
	tr4 := c.Track([]Permit{{Scope: "s", GrantID: 4, Deadline: short}})
	if !tr4.Leave(now) {
		t.Fatal("grant 4 could not leave")
	}
	tr4.Wrote(now)
	tr4.Done(now.Add(30 * time.Millisecond))
	if err := ready(4); err != nil {
		t.Fatal(err)
	}
	if want := now.Add(30*time.Millisecond + gap); time.Now().Before(want) {
		t.Errorf("Ready returned %s after grant 4's write, want ≥ %s", time.Since(now), want.Sub(now))
	}

	// Grant 2 was never reported: it counts at its deadline.
	if err := ready(2); err != nil {
		t.Fatal(err)
	}
	if d := short.Add(gap); time.Now().Before(d) {
		t.Errorf("Ready returned before grant 2's deadline + gap")
	}
	// A link past the deadline is late.
	start := time.Now()
	late := Permit{Scope: "s", GrantID: 9, SendAt: start, Deadline: start.Add(time.Millisecond), Links: []ledger.Link{{ID: 3, Gap: time.Hour}}, client: c}
	if err := late.Wait(context.Background(), nil); !errors.Is(err, ErrLate) {
		t.Errorf("a link an hour after grants 1 and 2: %v, want ErrLate", err)
	}
	if c.Track([]Permit{{Scope: "s", GrantID: 3, Deadline: long}}).Leave(time.Now()) {
		t.Error("a released grant could leave")
	}
	if c.Track([]Permit{{Scope: "s", GrantID: 2, Deadline: short}}).Leave(time.Now()) {
		t.Error("a grant past its deadline could leave")
	}
}

// TestReadyLeavesEarlyWhenLinksAllow: a chained permit of a limiter of
// RulesAhead (Permit.Early) leaves once its links allow it, before its send
// time when they allow that — the send time carries its acquire's return
// leg, which the links do not need — and no earlier than Early; a permit
// without Early waits for its send time as before.
func TestReadyLeavesEarlyWhenLinksAllow(t *testing.T) {
	c := NewClient(nil, ClientOptions{})
	b := c.batcher("s")
	now := time.Now()
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 1, SendAt: now, Deadline: now.Add(time.Minute)}}, chainedAll(1), now)
	tr := c.Track([]Permit{{Scope: "s", GrantID: 1, SendAt: now, Deadline: now.Add(time.Minute)}})
	if !tr.Leave(now) {
		t.Fatal("grant 1 could not leave")
	}
	tr.Wrote(now)
	tr.Done(now.Add(time.Millisecond))
	gap := 20 * time.Millisecond
	sendAt := now.Add(300 * time.Millisecond) // its acquire's answer came back late
	p := Permit{Scope: "s", GrantID: 2, SendAt: sendAt, Deadline: sendAt.Add(50 * time.Millisecond),
		Early: now.Add(10 * time.Millisecond), Links: []ledger.Link{{ID: 1, Gap: gap}}, client: c}
	if err := c.Ready(context.Background(), []Permit{p}); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	if want := now.Add(time.Millisecond + gap); left.Before(want) {
		t.Errorf("left %s after grant 1's write, before its link allowed (%s)", left.Sub(now), want.Sub(now))
	}
	if !left.Before(sendAt) {
		t.Errorf("left %s after grant 1's write, not before its send time %s: the links allowed it at %s", left.Sub(now), sendAt.Sub(now), gap+time.Millisecond)
	}
	// Early binds where it is later than the links.
	q := p
	q.GrantID, q.Early = 3, time.Now().Add(60*time.Millisecond)
	if err := q.Wait(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(q.Early) {
		t.Errorf("left before Early")
	}
	// Without Early, the send time.
	r := p
	r.GrantID, r.Early = 4, time.Time{}
	r.SendAt = time.Now().Add(40 * time.Millisecond)
	r.Deadline = r.SendAt.Add(50 * time.Millisecond)
	if err := c.Ready(context.Background(), []Permit{r}); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(r.SendAt) {
		t.Errorf("a permit without Early left before its send time")
	}
}

// TestRecordSendsStartsOverWithAFreshLedger: grant ids that go back (a
// limiter started afresh) replace the process's records, so that a new
// grant is never missing from them.
func TestRecordSendsStartsOverWithAFreshLedger(t *testing.T) {
	c := NewClient(nil, ClientOptions{})
	b := c.batcher("s")
	now := time.Now()
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 7, Deadline: now}, {Scope: "s", GrantID: 8, Deadline: now}}, chainedAll(2), now)
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 1, Deadline: now}}, chainedAll(1), now)
	if len(b.sends) != 1 || b.sends[0].id != 1 {
		t.Fatalf("records %+v, want grant 1's alone", b.sends)
	}
}

// TestChainWorth: a process chains a scope's grants once it knows eight
// round trips of it and their median is under half the shortest window
// or interval chained over, and short enough that a chained window costs
// less than the tolerance; never for a scope whose only window is longer
// than ChainMaxWindow.
func TestChainWorth(t *testing.T) {
	lim := ledger.Limits{Windows: []ledger.Window{{Length: time.Second, Count: 5}, {Length: 24 * time.Hour, Count: 1000}}}
	var b batcher
	for i := range chainMinSamples {
		if b.chainWorth(lim, 50*time.Millisecond) {
			t.Fatalf("chained after %d round trips", i)
		}
		b.roundTrips.add(20 * time.Millisecond)
	}
	if !b.chainWorth(lim, 50*time.Millisecond) {
		t.Error("20 ms answers to a 1 s window: not chained")
	}
	if slow := (ledger.Limits{Windows: lim.Windows, MinInterval: 30 * time.Millisecond}); b.chainWorth(slow, 50*time.Millisecond) {
		t.Error("20 ms answers to a 30 ms interval: chained")
	}
	if daily := (ledger.Limits{Windows: lim.Windows[1:]}); b.chainWorth(daily, 50*time.Millisecond) {
		t.Error("a daily window only: chained")
	}
	if b.chainWorth(lim, 20*time.Millisecond) {
		t.Error("20 ms answers at a 20 ms tolerance: chained, although a chained window would cost more")
	}
}

// TestAnsweredCallsAreMeasured: each tracked request's time from its write
// to its answer goes to the client's metrics, by scope (the lag a chained
// window pays, sluice_provider_answer_lag_seconds), and so does the time
// from its permit's send time to its write (sluice_provider_send_delay_seconds);
// a request that was never reported written is measured by neither.
func TestAnsweredCallsAreMeasured(t *testing.T) {
	m := metrics.New()
	c := NewClient(nil, ClientOptions{Metrics: m})
	b := c.batcher("kis/key")
	now := time.Now()
	long := now.Add(time.Minute)
	c.recordSends(b, []Permit{{Scope: "kis/key", GrantID: 1, SendAt: now, Deadline: long},
		{Scope: "kis/key", GrantID: 2, SendAt: now, Deadline: long}}, chainedAll(2), now)
	tr := c.Track([]Permit{{Scope: "kis/key", GrantID: 1, SendAt: now.Add(-4 * time.Millisecond), Deadline: long}})
	if !tr.Leave(now) {
		t.Fatal("grant 1 could not leave")
	}
	tr.Wrote(now)
	tr.Done(now.Add(17 * time.Millisecond))
	tr2 := c.Track([]Permit{{Scope: "kis/key", GrantID: 2, Deadline: long}})
	if !tr2.Leave(now) {
		t.Fatal("grant 2 could not leave")
	}
	tr2.Done(now.Add(40 * time.Millisecond)) // no write reported
	h := m.AnswerLag.WithLabelValues("kis/key").(prometheus.Histogram)
	var out dto.Metric
	if err := h.Write(&out); err != nil {
		t.Fatal(err)
	}
	if n, sum := out.GetHistogram().GetSampleCount(), out.GetHistogram().GetSampleSum(); n != 1 || sum < 0.0169 || sum > 0.0171 {
		t.Errorf("answer lag of kis/key: %d samples summing to %.4f s, want 1 of 0.017 s", n, sum)
	}
	// The write came 4 ms after the permit's send time.
	out.Reset()
	if err := m.SendDelay.WithLabelValues("kis/key").(prometheus.Histogram).Write(&out); err != nil {
		t.Fatal(err)
	}
	if n, sum := out.GetHistogram().GetSampleCount(), out.GetHistogram().GetSampleSum(); n != 1 || sum < 0.0039 || sum > 0.0041 {
		t.Errorf("send delay of kis/key: %d samples summing to %.4f s, want 1 of 0.004 s", n, sum)
	}
}

// chainedAll says n grants were all chained by the ledger.
func chainedAll(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// TestReadyIgnoresGrantsTheLedgerDidNotChain: a grant of a chained answer
// that the ledger did not chain (one that took over a given-back slot,
// RulesRefill: Grant.Chain 0) is counted by the limiter at its latest
// send, so no link waits for it: a linked permit leaves once the chained
// grant before it was answered, though the unchained one, handed out
// earlier, is not sent yet. (Waiting for it, as for a chained one, made
// the linked permit late.)
func TestReadyIgnoresGrantsTheLedgerDidNotChain(t *testing.T) {
	c := NewClient(nil, ClientOptions{})
	b := c.batcher("s")
	now := time.Now()
	long := now.Add(time.Minute)
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 1, SendAt: now, Deadline: long},
		{Scope: "s", GrantID: 2, SendAt: now, Deadline: long}}, []bool{true, false}, now)
	tr := c.Track([]Permit{{Scope: "s", GrantID: 1, SendAt: now, Deadline: long}})
	if !tr.Leave(now) {
		t.Fatal("grant 1 could not leave")
	}
	tr.Wrote(now)
	tr.Done(now.Add(time.Millisecond))
	p := Permit{Scope: "s", GrantID: 3, SendAt: now, Deadline: now.Add(5 * time.Second),
		Links: []ledger.Link{{ID: 2, Gap: 20 * time.Millisecond}}, client: c}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ready(ctx, []Permit{p}); err != nil {
		t.Fatalf("a permit linked past an unchained grant not sent yet: %v", err)
	}
}

// TestLinkAtMatchesAScanOfEveryRecord: what linkAt tells of a link, with
// the settled records taken in one step, is what a scan of every record
// (scanSends over them all, as Ready read them before settled records)
// tells, through grants handed out, sent, answered, given back, forgotten
// and a ledger started afresh. It fails if a record whose state can still
// change is settled (a handed-out grant past its deadline, say: "pending"
// or "at" differ), if settling skips the record at the link's id, or if
// forgetting records keeps a settled latest that counted them.
func TestLinkAtMatchesAScanOfEveryRecord(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		c := &Client{scopes: map[string]*batcher{}}
		b := c.batcher("s")
		t0 := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
		now := t0
		id := uint64(0)
		settledSeen := 0
		for step := 0; step < 600; step++ {
			// Up to a second a step: records are forgotten (keepSends)
			// from the third hundred steps on.
			now = now.Add(time.Duration(rng.Intn(1000)) * time.Millisecond)
			switch op := rng.Intn(10); {
			case op < 3: // an answer: a few permits handed out
				if rng.Intn(40) == 0 {
					id = uint64(rng.Intn(3)) // a ledger started afresh
				}
				var ps []Permit
				var chained []bool
				for n := 1 + rng.Intn(4); n > 0; n-- {
					id += 1 + uint64(rng.Intn(2))
					ps = append(ps, Permit{Scope: "s", GrantID: id, Deadline: now.Add(time.Duration(rng.Intn(2000)) * time.Millisecond)})
					chained = append(chained, rng.Intn(5) > 0)
				}
				c.recordSends(b, ps, chained, now)
			case op == 3 && len(b.sends) > 0: // given back
				r := &b.sends[rng.Intn(len(b.sends))]
				if r.state == sendHanded {
					r.state = sendDropped
				}
			case len(b.sends) > 0: // a send moves on
				r := &b.sends[rng.Intn(len(b.sends))]
				switch r.state {
				case sendHanded:
					if now.After(r.deadline) {
						r.state = sendDropped
					} else {
						r.state, r.at = sendLeaving, now
					}
				case sendLeaving:
					r.state, r.at = []sendState{sendWrote, sendDone}[rng.Intn(2)], now
				case sendWrote:
					r.state, r.done = sendAnswered, now
				}
			}
			if len(b.sends) == 0 {
				continue
			}
			for k := 0; k < 3; k++ {
				l := ledger.Link{ID: b.sends[rng.Intn(len(b.sends))].id + uint64(rng.Intn(3)) - 1, Gap: time.Duration(rng.Intn(200)) * time.Millisecond}
				at := now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
				wantAt, wantPending, wantNext := scanSends(b.sends, l, at)
				gotAt, gotPending, gotNext := b.linkAt(l, at)
				if !gotAt.Equal(wantAt) || gotPending != wantPending || !gotNext.Equal(wantNext) {
					t.Fatalf("seed %d step %d: link %+v at %s over %d records (%d settled): linkAt (%s, %v, %s), scan (%s, %v, %s)",
						seed, step, l, at.Sub(t0), len(b.sends), b.settled, gotAt.Sub(t0), gotPending, gotNext.Sub(t0), wantAt.Sub(t0), wantPending, wantNext.Sub(t0))
				}
				settledSeen += b.settled
			}
		}
		if settledSeen == 0 {
			t.Fatalf("seed %d: no record was ever settled: the fast path went untested", seed)
		}
	}
}
