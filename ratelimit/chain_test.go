package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

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
		{Scope: "s", GrantID: 4, SendAt: now, Deadline: short}}, true, now)
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

// TestRecordSendsStartsOverWithAFreshLedger: grant ids that go back (a
// limiter started afresh) replace the process's records, so that a new
// grant is never missing from them.
func TestRecordSendsStartsOverWithAFreshLedger(t *testing.T) {
	c := NewClient(nil, ClientOptions{})
	b := c.batcher("s")
	now := time.Now()
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 7, Deadline: now}, {Scope: "s", GrantID: 8, Deadline: now}}, true, now)
	c.recordSends(b, []Permit{{Scope: "s", GrantID: 1, Deadline: now}}, true, now)
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
		b.lags.add(20 * time.Millisecond)
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

// TestChainCostsTheLagFromSendTime: what a chained window costs is the
// lag from the moment its calls may leave to their answers — the wake-up
// and the way to the wire as well as the provider's round trip — and that
// is what decides whether to chain, and the lead asked for. Here each call
// reaches the wire 60 ms after its send time (a loaded machine) and is
// answered 5 ms after its write: the process no longer chains at a 50 ms
// tolerance (a chained window would cost 65 ms + ChainMargin, an
// unchained one 50 ms), and at a 100 ms tolerance it chains with a lead of
// the 65 ms lag. Before, only the write-to-answer round trip was measured:
// it chained with a 6 ms lead, and each window's calls were held for the
// rest of the lag by their links, past their deadlines (in a 5,000-call
// KIS run under a load average of 10–17: 714 late permits, 0.940 of the
// declared rate).
func TestChainCostsTheLagFromSendTime(t *testing.T) {
	ms := time.Millisecond
	c := NewClient(nil, ClientOptions{})
	c.mu.Lock()
	b := c.batcher("s")
	c.mu.Unlock()
	t0 := time.Now().Add(-time.Hour)
	for i := range chainMinSamples {
		sendAt := t0.Add(time.Duration(i) * time.Second)
		p := Permit{Scope: "s", GrantID: uint64(i + 1), SendAt: sendAt, Deadline: sendAt.Add(time.Second), client: c}
		c.recordSends(b, []Permit{p}, true, sendAt.Add(-500*ms))
		tr := c.Track([]Permit{p})
		if !tr.Leave(sendAt.Add(59 * ms)) {
			t.Fatalf("grant %d refused at Leave", p.GrantID)
		}
		tr.Wrote(sendAt.Add(60 * ms))
		tr.Done(sendAt.Add(65 * ms))
	}
	lim := ledger.Limits{Windows: []ledger.Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * ms}
	batch := []*waiter{{ctx: context.Background(), opts: AcquireOptions{Chain: true}, limits: lim}}
	if req, _ := c.request(b, batch); req.Chain {
		t.Errorf("calls answered 65 ms after their send time, tolerance 50 ms: chained with a lead of %v, want unchained (a chained window costs more than the tolerance)", req.Lead)
	}
	lim.Tolerance = 100 * ms
	batch[0].limits = lim
	req, _ := c.request(b, batch)
	if !req.Chain || req.Lead != 66*ms {
		t.Errorf("tolerance 100 ms: chain %v with a lead of %v, want chained with a lead of the 65 ms lag + 1 ms", req.Chain, req.Lead)
	}
}

// TestReadyRecordsWhenLinksLetGo: a call its links held past its send time
// is measured from when they let it go, not from its send time, so that a
// hold is not counted twice (in the lag, and again in the next hold).
func TestReadyRecordsWhenLinksLetGo(t *testing.T) {
	ms := time.Millisecond
	c := NewClient(nil, ClientOptions{})
	c.mu.Lock()
	b := c.batcher("s")
	c.mu.Unlock()
	now := time.Now()
	first := Permit{Scope: "s", GrantID: 1, SendAt: now.Add(-time.Second), Deadline: now.Add(time.Second), client: c}
	c.recordSends(b, []Permit{first}, true, now.Add(-2*time.Second))
	tr := c.Track([]Permit{first})
	tr.Leave(now.Add(-time.Second))
	tr.Wrote(now.Add(-time.Second))
	tr.Done(now.Add(-40 * ms))
	// Linked to the first with a 60 ms gap: let go 20 ms from now.
	second := Permit{Scope: "s", GrantID: 2, SendAt: now.Add(-30 * ms), Deadline: now.Add(time.Second), client: c,
		Links: []ledger.Link{{ID: 1, Gap: 60 * ms}}}
	c.recordSends(b, []Permit{second}, true, now.Add(-time.Second))
	if err := c.Ready(context.Background(), []Permit{second}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	got := b.send(2).ready
	c.mu.Unlock()
	if want := now.Add(20 * ms); !got.Equal(want) {
		t.Errorf("let go at %v after now, want %v (the first's answer + the link's gap)", got.Sub(now), want.Sub(now))
	}
}
