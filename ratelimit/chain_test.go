package ratelimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestReserveChainsOwnWindows: a caller that chains gets its next window
// a window + slack + ChainMargin + chainLead after its own first grants
// (1.014 s for 5/s), not a window + slack after their latest send moment
// (1.051 s at a 50 ms tolerance), each grant linked to its own grant a
// window before; an unchained caller's grant in between still counts at
// its latest send moment, and a ledger of the priority rules ignores the
// chain.
func TestReserveChainsOwnWindows(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond}
	ask := Ask{N: 5, Rules: RulesLatest, Caller: "a", Chain: true}
	var l Ledger
	first := l.Reserve(t0, lim, ask)
	second := l.Reserve(t0.Add(900*time.Millisecond), lim, ask)
	gap := time.Second + slack + ChainMargin
	if len(first.Grants) != 5 || len(second.Grants) != 5 {
		t.Fatalf("granted %d and %d, want 5 and 5", len(first.Grants), len(second.Grants))
	}
	for i, g := range second.Grants {
		if want := t0.Add(gap + chainLead); !g.At.Equal(want) {
			t.Errorf("second window's grant %d at %s, want %s (chained: %s after the first)", i, g.At.Sub(t0), want.Sub(t0), gap+chainLead)
		}
		if g.Chain != 1 || !until(g, lim).Equal(g.At.Add(lim.Tolerance)) {
			t.Errorf("grant %d: chain %d, until %s", i, g.Chain, until(g, lim).Sub(g.At))
		}
		if want := []Link{{ID: first.Grants[i].ID, Gap: gap}}; len(second.Links[i]) != 1 || second.Links[i][0] != want[0] {
			t.Errorf("grant %d links %+v, want %+v", i, second.Links[i], want)
		}
	}
	if len(first.Links) != 5 || len(first.Links[0]) != 0 {
		t.Errorf("first window's links %+v, want none", first.Links)
	}

	// Another caller, unchained, takes a slot: the chaining caller's next
	// grant keeps a window after that grant's latest send moment.
	var m Ledger
	m.Reserve(t0, lim, Ask{N: 4, Rules: RulesLatest, Caller: "a", Chain: true})
	m.Reserve(t0.Add(20*time.Millisecond), lim, Ask{N: 1, Rules: RulesLatest, Caller: "u"})
	own := m.Reserve(t0.Add(900*time.Millisecond), lim, Ask{N: 5, Rules: RulesLatest, Caller: "a", Chain: true})
	if want := t0.Add(20*time.Millisecond + lim.Tolerance + time.Second + slack); len(own.Grants) < 5 || own.Grants[4].At.Before(want) {
		t.Errorf("the grant a window after the unchained caller's came at %v, want ≥ %s", at(own.Grants), want.Sub(t0))
	}
	if len(own.Links) < 5 || len(own.Links[4]) != 0 || len(own.Links[3]) != 1 || own.Links[3][0].ID != 4 {
		t.Errorf("links %+v: the fourth grant keeps its distance from a's own grant 4; the fifth, spaced from the unchained grant sent after a's four, needs no link", own.Links)
	}

	// A caller whose tolerance is below a link's cost gains nothing from
	// a link: its grants are spaced as unchained ones.
	narrow := lim
	narrow.Tolerance = 4 * time.Millisecond
	var w Ledger
	w.Reserve(t0, narrow, Ask{N: 5, Rules: RulesLatest, Caller: "a", Chain: true})
	wide := w.Reserve(t0.Add(900*time.Millisecond), narrow, Ask{N: 1, Rules: RulesLatest, Caller: "a", Chain: true})
	if want := t0.Add(narrow.Tolerance + time.Second + slack); len(wide.Grants) != 1 || !wide.Grants[0].At.Equal(want) || len(wide.Links[0]) != 0 {
		t.Errorf("a 4 ms tolerance: %+v, links %+v; want an unlinked grant at %s", wide.Grants, wide.Links, want.Sub(t0))
	}

	// A limiter of the priority rules ignores Chain.
	var p Ledger
	p.Reserve(t0, lim, Ask{N: 5, Rules: RulesPriority, Caller: "a", Chain: true})
	ans := p.Reserve(t0.Add(900*time.Millisecond), lim, Ask{N: 1, Rules: RulesPriority, Caller: "a", Chain: true})
	if want := t0.Add(lim.Tolerance + time.Second + slack); len(ans.Grants) != 1 || !ans.Grants[0].At.Equal(want) || ans.Links != nil || ans.Grants[0].Chain != 0 {
		t.Errorf("priority rules: %+v, links %+v; want one unchained grant at %s", ans.Grants, ans.Links, want.Sub(t0))
	}
}

// TestChainProperty drives a ledger with two chaining callers and one that
// does not, releases and trims, each caller sending as a client does: a
// chaining one no earlier than its links allow after its own sends (or
// the deadline of a grant it did not report), dropping a grant its links
// push past its deadline, the other anywhere within its tolerance. Every
// window and the minimum interval hold over all sends.
func TestChainProperty(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		lim := Limits{
			Windows:     []Window{{Length: time.Duration(100+rng.IntN(400)) * time.Millisecond, Count: 1 + rng.IntN(5)}},
			MinInterval: time.Duration(rng.IntN(2)) * 15 * time.Millisecond,
			Tolerance:   time.Duration(5+rng.IntN(50)) * time.Millisecond,
		}
		if rng.IntN(2) == 0 {
			lim.Windows = append(lim.Windows, Window{Length: 2 * time.Second, Count: 4 + rng.IntN(8)})
		}
		callers := []string{"a", "b", "u"}
		type sent struct {
			caller string
			at     time.Time // when written
			anchor time.Time // what the caller measures its links from
		}
		sends := map[uint64]sent{}
		dropped := 0
		now := t0
		var l Ledger
		for step := 0; step < 1500; step++ {
			now = now.Add(time.Duration(rng.IntN(80)) * time.Millisecond)
			c := callers[rng.IntN(len(callers))]
			if rng.IntN(8) == 0 && len(l.Grants) > 0 {
				// Release a grant not sent (the caller gave it back).
				g := l.Grants[rng.IntN(len(l.Grants))]
				if _, ok := sends[g.ID]; !ok && l.Release([]uint64{g.ID}, lim) != 1 {
					t.Fatalf("seed %d: could not release unsent grant %d", seed, g.ID)
				}
				continue
			}
			tol := time.Duration(1+rng.IntN(int(lim.Tolerance/time.Millisecond))) * time.Millisecond
			ans := l.Reserve(now, lim, Ask{N: 1 + rng.IntN(4), Rules: RulesLatest, Caller: c, Chain: c != "u", Tolerance: tol, Horizon: tol})
			for i, g := range ans.Grants {
				// The client's clock maps the grant up to a round trip late.
				send := g.At.Add(time.Duration(rng.Int64N(int64(tol)/2 + 1)))
				if c == "u" {
					send = g.At.Add(time.Duration(rng.Int64N(int64(tol) + 1)))
					sends[g.ID] = sent{caller: c, at: send, anchor: send}
					continue
				}
				for _, ln := range ans.Links[i] {
					for id, s := range sends {
						if s.caller == c && id <= ln.ID && s.anchor.Add(ln.Gap).After(send) {
							send = s.anchor.Add(ln.Gap)
						}
					}
				}
				if send.After(until(g, lim)) {
					dropped++ // late: never sent, the caller asks again
					continue
				}
				anchor := send
				if rng.IntN(10) == 0 {
					anchor = until(g, lim) // a send it could not report: counted at its deadline
				}
				sends[g.ID] = sent{caller: c, at: send, anchor: anchor}
			}
		}
		var all []time.Time
		for _, s := range sends {
			all = append(all, s.at)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
		checkWindows(t, all, lim)
		if len(all) < 100 || dropped > len(all)/4 {
			t.Errorf("seed %d: %d sends, %d dropped: the test exercised little, or chains push grants past their deadlines", seed, len(all), dropped)
		}
	}
}

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
		return c.Ready(context.Background(), []Permit{{Scope: "s", GrantID: 9, SendAt: now, Deadline: long, Links: []Link{{ID: link, Gap: gap}}, client: c}})
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
	late := Permit{Scope: "s", GrantID: 9, SendAt: start, Deadline: start.Add(time.Millisecond), Links: []Link{{ID: 3, Gap: time.Hour}}, client: c}
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
// than chainMaxWindow.
func TestChainWorth(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}, {Length: 24 * time.Hour, Count: 1000}}}
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
	if slow := (Limits{Windows: lim.Windows, MinInterval: 30 * time.Millisecond}); b.chainWorth(slow, 50*time.Millisecond) {
		t.Error("20 ms answers to a 30 ms interval: chained")
	}
	if daily := (Limits{Windows: lim.Windows[1:]}); b.chainWorth(daily, 50*time.Millisecond) {
		t.Error("a daily window only: chained")
	}
	if b.chainWorth(lim, 20*time.Millisecond) {
		t.Error("20 ms answers at a 20 ms tolerance: chained, although a chained window would cost more")
	}
}
