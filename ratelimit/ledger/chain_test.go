package ledger

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestReserveChainsOwnWindows: a caller that chains gets its next window
// a window + slack + ChainMargin + ChainLead after its own first grants
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
		if want := t0.Add(gap + ChainLead); !g.At.Equal(want) {
			t.Errorf("second window's grant %d at %s, want %s (chained: %s after the first)", i, g.At.Sub(t0), want.Sub(t0), gap+ChainLead)
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
// push past its deadline, the other anywhere within its tolerance. Half
// the chained grants are sent anywhere from as early as the answer allows
// (Answer.Ahead) to the grant's latest send. Every window and the minimum
// interval hold over all sends.
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
		start := t0
		if seed%3 == 0 {
			// A daily quota the run fills, from shortly before a Seoul
			// midnight: no call sent before its time may count against
			// the day before its grant's.
			lim.DailyQuota, lim.Timezone = 20+rng.IntN(40), "Asia/Seoul"
			start = time.Date(2026, 11, 30, 23, 59, 50, 0, lim.Location())
		}
		callers := []string{"a", "b", "u"}
		type sent struct {
			caller string
			at     time.Time // when written
			anchor time.Time // what the caller measures its links from
		}
		sends := map[uint64]sent{}
		dropped, early := 0, 0
		now := start
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
			ans := l.Reserve(now, lim, Ask{N: 1 + rng.IntN(4), Rules: RulesLatest, Caller: c, Chain: c != "u", Tolerance: tol, Horizon: tol, MaxWait: MaxAhead})
			for i, g := range ans.Grants {
				// The client's clock maps the grant up to a round trip late.
				send := g.At.Add(time.Duration(rng.Int64N(int64(tol)/2 + 1)))
				if c == "u" {
					send = g.At.Add(time.Duration(rng.Int64N(int64(tol) + 1)))
					sends[g.ID] = sent{caller: c, at: send, anchor: send}
					continue
				}
				if ans.Ahead[i] > 0 && rng.IntN(2) == 0 {
					// As early as the grant allows (RulesAhead), up to
					// the grant's own latest send.
					from := g.At.Add(-ans.Ahead[i])
					send = from.Add(time.Duration(rng.Int64N(int64(until(g, lim).Sub(from)) + 1)))
					early++
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
		if lim.DailyQuota > 0 {
			perDay := map[string]int{}
			for _, at := range all {
				perDay[at.In(lim.Location()).Format(time.DateOnly)]++
			}
			for day, n := range perDay {
				if n > lim.DailyQuota {
					t.Errorf("seed %d: %d calls sent on %s, quota %d", seed, n, day, lim.DailyQuota)
				}
			}
			if len(perDay) < 2 {
				t.Errorf("seed %d: the run did not cross midnight", seed)
			}
		}
		if early == 0 {
			t.Errorf("seed %d: no chained grant could be sent before its time", seed)
		}
		want := 100
		if lim.DailyQuota > 0 {
			want = lim.DailyQuota + 10 // a day filled, and the next begun
		}
		if len(all) < want || dropped > len(all)/4 {
			t.Errorf("seed %d: %d sends, %d dropped: the test exercised little, or chains push grants past their deadlines", seed, len(all), dropped)
		}
	}
}

// TestReserveAhead (RulesAhead): a lone chaining caller's chained grant
// may be sent before its time, as early as now (its own grants are kept
// apart by the links, whatever tolerance they were asked with); another
// caller's grant in the window keeps it a window after that grant's latest
// send; under a backoff, or for a limiter of the rules before, no earlier
// than its time; never before now.
func TestReserveAhead(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond}
	ask := Ask{N: 5, Rules: RulesAhead, Caller: "a", Chain: true, Tolerance: 400 * time.Millisecond}
	gap := time.Second + slack
	var l Ledger
	first := l.Reserve(t0, lim, ask)
	for i, a := range first.Ahead {
		if a != 0 {
			t.Errorf("first window's grant %d may leave %s early; nothing is before it but now", i, a)
		}
	}
	second := l.Reserve(t0.Add(10*time.Millisecond), lim, ask)
	third := l.Reserve(t0.Add(1050*time.Millisecond), lim, ask)
	if len(second.Ahead) != 5 || len(third.Ahead) != 5 {
		t.Fatalf("ahead %v and %v, want 5 each", second.Ahead, third.Ahead)
	}
	for i, g := range second.Grants {
		// Only the first window's grants lie before it, all the caller's
		// own: it may leave as soon as its links allow, from now on.
		if want := g.At.Sub(t0.Add(10 * time.Millisecond)); second.Ahead[i] != want {
			t.Errorf("second window's grant %d: ahead %s, want %s (back to now)", i, second.Ahead[i], want)
		}
	}
	for i, g := range third.Grants {
		// Two windows of its own before it, asked with a wide tolerance
		// (a client that widened it): still back to now — the links keep
		// the caller's own sends apart, whatever their tolerance.
		if want := g.At.Sub(t0.Add(1050 * time.Millisecond)); third.Ahead[i] != want {
			t.Errorf("third window's grant %d at %s: ahead %s, want %s (back to now)", i, g.At.Sub(t0), third.Ahead[i], want)
		}
	}

	// Another caller's grant among the five before: the grant a window
	// after it leaves no earlier than a window after its latest send; the
	// four before that one, as their links allow.
	var m Ledger
	m.Reserve(t0, lim, Ask{N: 4, Rules: RulesAhead, Caller: "a", Chain: true})
	m.Reserve(t0.Add(20*time.Millisecond), lim, Ask{N: 1, Rules: RulesAhead, Caller: "u", Tolerance: 30 * time.Millisecond})
	own := m.Reserve(t0.Add(900*time.Millisecond), lim, Ask{N: 5, Rules: RulesAhead, Caller: "a", Chain: true})
	other := t0.Add(20*time.Millisecond + 30*time.Millisecond + gap)
	if len(own.Grants) != 5 {
		t.Fatalf("granted %v, want 5", at(own.Grants))
	}
	for i, g := range own.Grants {
		want := t0.Add(900 * time.Millisecond)
		if i == 4 {
			want = other
		}
		if early := g.At.Add(-own.Ahead[i]); !early.Equal(want) {
			t.Errorf("grant %d may leave at %s, want %s", i, early.Sub(t0), want.Sub(t0))
		}
	}

	// A backoff spaces every grant from the one before, whoever it went
	// to: nothing leaves early.
	var b Ledger
	b.Reserve(t0, lim, ask)
	b.Penalize(t0.Add(100*time.Millisecond), lim, Penalty{})
	slow := b.Reserve(t0.Add(900*time.Millisecond), lim, Ask{N: 1, Rules: RulesAhead, Caller: "a", Chain: true})
	if len(slow.Grants) != 1 || len(slow.Ahead) != 1 || slow.Ahead[0] != 0 {
		t.Errorf("backing off (factor %.2f): grants %v ahead %v, want one grant, not early", b.CurrentFactor(t0.Add(900*time.Millisecond), lim), at(slow.Grants), slow.Ahead)
	}

	// The rules before say nothing of it.
	var p Ledger
	p.Reserve(t0, lim, Ask{N: 5, Rules: RulesProbe, Caller: "a", Chain: true})
	if ans := p.Reserve(t0.Add(900*time.Millisecond), lim, Ask{N: 5, Rules: RulesProbe, Caller: "a", Chain: true}); ans.Ahead != nil {
		t.Errorf("RulesProbe answered ahead %v", ans.Ahead)
	}
}
