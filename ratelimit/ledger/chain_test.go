package ledger

import (
	"math/rand/v2"
	"slices"
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
	refills := 0
	for seed := uint64(1); seed <= 60; seed++ {
		refills += chainProperty(t, seed, false)
	}
	t.Logf("%d grants took over a free entry", refills)
}

// TestRefillProperty is TestChainProperty where given-back slots are
// taken over (RulesRefill): no minimum interval, and a caller gives back
// mostly one of the latest grants, as a late answer or a late permit
// does, so that grants already follow it. Every window holds over all
// sends, and free entries are taken over.
func TestRefillProperty(t *testing.T) {
	refills := 0
	for seed := uint64(1); seed <= 60; seed++ {
		refills += chainProperty(t, seed, true)
	}
	t.Logf("%d grants took over a free entry", refills)
	if refills < 200 {
		t.Errorf("only %d grants took over a free entry: the test does not exercise RulesRefill", refills)
	}
}

// chainProperty runs one seed of the chained-grant property test and
// returns how many grants took over a free entry; refill makes given-back
// slots likely to be taken over.
func chainProperty(t *testing.T, seed uint64, refill bool) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	lim := Limits{
		Windows:     []Window{{Length: time.Duration(100+rng.IntN(400)) * time.Millisecond, Count: 1 + rng.IntN(5)}},
		MinInterval: time.Duration(rng.IntN(2)) * 15 * time.Millisecond,
		Tolerance:   time.Duration(5+rng.IntN(50)) * time.Millisecond,
	}
	if refill {
		lim.MinInterval = 0
		lim.Windows[0].Count = 2 + rng.IntN(8)
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
	refills := 0
	var unsent []uint64 // grants to give back, not sent
	now := start
	var l Ledger
	for step := 0; step < 1500; step++ {
		now = now.Add(time.Duration(rng.IntN(80)) * time.Millisecond)
		c := callers[rng.IntN(len(callers))]
		if len(unsent) > 0 && rng.IntN(2) == 0 {
			// Give back a grant the caller will not send (a late
			// answer, a late permit), while later grants may have
			// followed it.
			l.ReleaseRules(unsent[:1], lim, RulesLatest)
			unsent = unsent[1:]
			continue
		}
		if rng.IntN(8) == 0 && len(l.Grants) > 0 {
			// Release a grant not sent (the caller gave it back).
			g := l.Grants[rng.IntN(len(l.Grants))]
			if _, ok := sends[g.ID]; !ok && !g.Free && l.ReleaseRules([]uint64{g.ID}, lim, RulesLatest) != 1 {
				t.Fatalf("seed %d: could not release unsent grant %d", seed, g.ID)
			}
			continue
		}
		tol := time.Duration(1+rng.IntN(int(lim.Tolerance/time.Millisecond))) * time.Millisecond
		ans := l.Reserve(now, lim, Ask{N: 1 + rng.IntN(4), Rules: RulesLatest, Caller: c, Chain: c != "u", Tolerance: tol, Horizon: tol, MaxWait: MaxAhead})
		refills += tookOver(&l, ans.Grants)
		for i, g := range ans.Grants {
			if refill && rng.IntN(4) == 0 {
				unsent = append(unsent, g.ID)
				continue
			}
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
	if early == 0 && !refill {
		t.Errorf("seed %d: no chained grant could be sent before its time", seed)
	}
	want := 100
	if lim.DailyQuota > 0 {
		want = lim.DailyQuota + 10 // a day filled, and the next begun
	}
	if len(all) < want || dropped > len(all)/4 {
		t.Errorf("seed %d: %d sends, %d dropped: the test exercised little, or chains push grants past their deadlines", seed, len(all), dropped)
	}
	return refills
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

// tookOver counts the grants of an answer that took over a free entry of
// the log (RulesRefill): a grant the log holds before one of a smaller id.
func tookOver(l *Ledger, grants []Grant) int {
	n := 0
	for _, g := range grants {
		i := slices.IndexFunc(l.Grants, func(x Grant) bool { return x.ID == g.ID })
		if i >= 0 && slices.ContainsFunc(l.Grants[i+1:], func(x Grant) bool { return x.ID < g.ID }) {
			n++
		}
	}
	return n
}

// TestRefill (RulesRefill): a slot given back after a later grant was
// given is taken over by the next ask, at its own time, instead of being
// lost. The case of the daily batch with three workers: four of KIS's five
// slots of a second go, the fifth goes to b, a gets a slot of the next
// second, then b's answer comes back late and b gives its slot back with
// its next ask. Under RulesAhead that ask got a slot of the next second
// too, and the batch a second more at its end; now it gets the free slot.
func TestRefill(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond, DailyQuota: 100, Timezone: "Asia/Seoul"}
	next := time.Second + 50*time.Millisecond + slack // a window after c's grants' latest sends
	for _, tc := range []struct {
		rules int
		want  time.Duration // b's grant after giving back its slot, from t0
	}{
		{RulesAhead, next},
		{RulesRefill, 920 * time.Millisecond},
	} {
		var l Ledger
		ask := func(at time.Duration, caller string, n int, tol time.Duration) Answer {
			return l.Reserve(t0.Add(at), lim, Ask{N: n, Rules: tc.rules, Caller: caller, Tolerance: tol, MaxWait: MaxAhead})
		}
		ask(0, "c", 4, 0)
		b := ask(10*time.Millisecond, "b", 1, 0)
		a := ask(900*time.Millisecond, "a", 1, 0)
		if len(a.Grants) != 1 || !a.Grants[0].At.Equal(t0.Add(next)) {
			t.Fatalf("rules %d: a's grant %+v, want one at t0+%v", tc.rules, a, next)
		}
		if n := l.ReleaseRules([]uint64{b.Grants[0].ID}, lim, tc.rules); n != 1 {
			t.Fatalf("rules %d: released %d of b's grant", tc.rules, n)
		}
		if n := l.ReleaseRules([]uint64{b.Grants[0].ID}, lim, tc.rules); n != 0 {
			t.Errorf("rules %d: b's grant released again: %d", tc.rules, n)
		}
		if got := l.DayCount(t0, lim); got != 5 {
			t.Errorf("rules %d: %d grants counted against the day, want 5 (b's given back)", tc.rules, got)
		}
		again := ask(920*time.Millisecond, "b", 1, 200*time.Millisecond)
		if len(again.Grants) != 1 || !again.Grants[0].At.Equal(t0.Add(tc.want)) {
			t.Fatalf("rules %d: b asked again and got %+v, want a grant at t0+%v", tc.rules, again, tc.want)
		}
		if got := l.DayCount(t0, lim); got != 6 {
			t.Errorf("rules %d: %d grants counted against the day, want 6", tc.rules, got)
		}
		if tc.rules != RulesRefill {
			continue
		}
		// b's new grant may be sent until 1.12 s, after a's own latest
		// send (1.101 s): a's grant's running latest send is raised to it,
		// and the next grant a window count after keeps a window from it.
		if got := l.Grants[len(l.Grants)-1].Late; !got.Equal(t0.Add(1120 * time.Millisecond)) {
			t.Errorf("a's grant's running latest send %v after t0, want 1.12s", got.Sub(t0))
		}
		c := ask(1900*time.Millisecond, "c", 5, 0)
		for _, g := range c.Grants {
			if g.At.Before(t0.Add(next)) {
				t.Errorf("c's grant at %v after t0: within a window of c's grants at t0", g.At.Sub(t0))
			}
		}
		if last := c.Grants[len(c.Grants)-1]; last.At.Before(t0.Add(2120*time.Millisecond + slack)) {
			t.Errorf("c's fifth grant at %v after t0: within a window of b's latest send (1.12 s)", last.At.Sub(t0))
		}
	}
}

// TestRefillDropsWhatCannotBeTaken (RulesRefill): a given-back grant with
// a window count of grants after it, or once that many follow it, is
// dropped from the log as before; so is one under a minimum interval.
func TestRefillDropsWhatCannotBeTaken(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 2}}, Tolerance: 50 * time.Millisecond}
	var l Ledger
	ask := func(at time.Duration) Grant {
		ans := l.Reserve(t0.Add(at), lim, Ask{N: 1, Rules: RulesRefill, Caller: "x", MaxWait: MaxAhead})
		if len(ans.Grants) != 1 {
			t.Fatalf("ask at %v: %+v", at, ans)
		}
		return ans.Grants[0]
	}
	g0 := ask(0)
	g1 := ask(0)
	ask(900 * time.Millisecond)
	l.ReleaseRules([]uint64{g1.ID}, lim, RulesRefill)
	if !l.Grants[1].Free {
		t.Fatalf("grant 1 not kept as a free entry: %+v", l.Grants)
	}
	// Too late for the free entry (the grant after it is at 1.051 s): a
	// new grant, and then two follow the entry.
	ask(1900 * time.Millisecond)
	l.ReleaseRules([]uint64{g0.ID}, lim, RulesRefill)
	ask(1950 * time.Millisecond)
	for _, g := range l.Grants {
		if g.ID == g0.ID || g.Free {
			t.Errorf("a given-back grant with two grants after it kept: %+v", l.Grants)
		}
	}
	// A free entry whose next grant's time has passed: no grant can take
	// it over (it would come after now); dropped, its slot is the next
	// ask's. The first window keeps five calls.
	five := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond}
	var f Ledger
	first5 := f.Reserve(t0, five, Ask{N: 1, Rules: RulesRefill, Caller: "x", MaxWait: MaxAhead})
	f.Reserve(t0.Add(10*time.Millisecond), five, Ask{N: 3, Rules: RulesRefill, Caller: "y", MaxWait: MaxAhead})
	f.ReleaseRules([]uint64{first5.Grants[0].ID}, five, RulesRefill)
	for _, at := range []time.Duration{40 * time.Millisecond, 50 * time.Millisecond} {
		ans := f.Reserve(t0.Add(at), five, Ask{N: 1, Rules: RulesRefill, Caller: "z", MaxWait: MaxAhead})
		if len(ans.Grants) != 1 || !ans.Grants[0].At.Equal(t0.Add(at)) {
			t.Errorf("ask at %v after the first grant was given back: %+v, want a grant then", at, ans)
		}
	}
	mi := Limits{MinInterval: 100 * time.Millisecond, Tolerance: 50 * time.Millisecond}
	var m Ledger
	first := m.Reserve(t0, mi, Ask{N: 2, Rules: RulesRefill, Caller: "x", MaxWait: MaxAhead})
	m.ReleaseRules([]uint64{first.Grants[0].ID}, mi, RulesRefill)
	if len(m.Grants) != 1 || m.Grants[0].Free {
		t.Errorf("under a minimum interval the given-back grant stays: %+v", m.Grants)
	}
}

// TestRefillTakesAdjacentFreeEntries (RulesRefill): two slots given back
// together (a late answer's two grants), with a grant of the next window
// after them, are both taken over by the next ask, at its time — the
// first window keeps its five calls.
func TestRefillTakesAdjacentFreeEntries(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond, DailyQuota: 10000, Timezone: "Asia/Seoul"}
	var l Ledger
	ask := func(at time.Duration, c string, n int) Answer {
		return l.Reserve(t0.Add(at), lim, Ask{N: n, Rules: RulesRefill, Caller: c, MaxWait: MaxAhead, Horizon: lim.Tolerance})
	}
	ask(0, "w1", 1)
	ask(5*time.Millisecond, "w0", 1)
	ask(8*time.Millisecond, "w2", 1)
	late := ask(40*time.Millisecond, "w0", 4)
	if next := ask(70*time.Millisecond, "w2", 6); len(late.Grants) != 2 || len(next.Grants) == 0 {
		t.Fatalf("the first window's last two slots %+v, the next window's %+v", late.Grants, next.Grants)
	}
	l.ReleaseRules([]uint64{late.Grants[0].ID, late.Grants[1].ID}, lim, RulesRefill)
	again := ask(100*time.Millisecond, "w0", 10)
	if len(again.Grants) != 2 {
		t.Fatalf("asked again after giving two slots back: %+v", again)
	}
	for _, g := range again.Grants {
		if !g.At.Equal(t0.Add(100 * time.Millisecond)) {
			t.Errorf("grant at %v after t0, want 100ms", g.At.Sub(t0))
		}
	}
}
