package ledger

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func at(gs []Grant) []time.Time {
	out := make([]time.Time, len(gs))
	for i, g := range gs {
		out[i] = g.At
	}
	return out
}

func ids(gs []Grant) []uint64 {
	out := make([]uint64, len(gs))
	for i, g := range gs {
		out[i] = g.ID
	}
	return out
}

// reserveAll asks again, as a client does, until n grants were given (or
// the quota ran out), moving now to each RetryIn.
func reserveAll(l *Ledger, now time.Time, lim Limits, n int) ([]Grant, *QuotaExhausted) {
	var out []Grant
	for len(out) < n {
		ans := l.Reserve(now, lim, Ask{N: n - len(out)})
		out = append(out, ans.Grants...)
		if ans.Quota != nil {
			return out, ans.Quota
		}
		now = now.Add(ans.RetryIn)
	}
	return out, nil
}

func TestReserveSpacesBurstsByWindow(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: 500 * time.Millisecond, Count: 5}}, Tolerance: 10 * time.Millisecond}
	grants, q := reserveAll(&l, t0, lim, 12)
	if q != nil {
		t.Fatal(q)
	}
	// The first five at once, then each a window (+ tolerance + 1 ms) after
	// the fifth grant before it.
	want := []time.Duration{0, 0, 0, 0, 0, 511, 511, 511, 511, 511, 1022, 1022}
	for i, g := range grants {
		if got := g.At.Sub(t0); got != want[i]*time.Millisecond {
			t.Errorf("grant %d at %v, want %v", i, got, want[i]*time.Millisecond)
		}
		if g.ID != uint64(i+1) {
			t.Errorf("grant %d has id %d", i, g.ID)
		}
	}
}

func TestReserveMinInterval(t *testing.T) {
	var l Ledger
	lim := Limits{MinInterval: 400 * time.Millisecond}
	grants, _ := reserveAll(&l, t0, lim, 3)
	for i := 1; i < len(grants); i++ {
		if gap := grants[i].At.Sub(grants[i-1].At); gap != 401*time.Millisecond {
			t.Errorf("gap %d = %v", i, gap)
		}
	}
}

// TestReserveNeverGrantsBeyondMaxAhead: a slot further than MaxAhead is not
// handed out; the answer says when to ask again, and asking then gets it.
func TestReserveNeverGrantsBeyondMaxAhead(t *testing.T) {
	var l Ledger
	lim := Limits{MinInterval: 10 * time.Second}
	first := l.Reserve(t0, lim, Ask{N: 2})
	if len(first.Grants) != 1 || !first.Grants[0].At.Equal(t0) {
		t.Fatalf("first answer %+v", first)
	}
	again := l.Reserve(t0, lim, Ask{N: 1})
	slot := t0.Add(10*time.Second + time.Millisecond)
	if len(again.Grants) != 0 || again.RetryIn != slot.Sub(t0.Add(MaxAhead)) {
		t.Fatalf("second answer %+v, want no grant and RetryIn %v", again, slot.Sub(t0.Add(MaxAhead)))
	}
	later := l.Reserve(t0.Add(again.RetryIn), lim, Ask{N: 1})
	if len(later.Grants) != 1 || !later.Grants[0].At.Equal(slot) {
		t.Fatalf("asked again: %+v, want the slot at %v", later, slot)
	}
}

func TestReserveDailyQuotaResetsAtLocalMidnight(t *testing.T) {
	var l Ledger
	lim := Limits{DailyQuota: 3, Timezone: "Asia/Seoul"}
	// 23:59:59.5 KST: three calls fit today; the fourth waits for midnight
	// KST when the caller accepts half a second's wait.
	now := time.Date(2026, 11, 30, 14, 59, 59, 500e6, time.UTC)
	midnight := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	ans := l.Reserve(now, lim, Ask{N: 4, MaxWait: time.Second})
	if ans.Quota != nil || len(ans.Grants) != 4 || !ans.Grants[2].At.Equal(now) || !ans.Grants[3].At.Equal(midnight) {
		t.Fatalf("answer %+v", ans)
	}
	// Fill tomorrow, then ask: the quota is reported exhausted until the
	// next local midnight.
	if a := l.Reserve(midnight, lim, Ask{N: 2}); len(a.Grants) != 2 || a.Quota != nil {
		t.Fatalf("answer %+v", a)
	}
	a := l.Reserve(midnight, lim, Ask{N: 2, MaxWait: time.Hour})
	if len(a.Grants) != 0 || a.Quota == nil || !a.Quota.ResetAt.Equal(midnight.Add(24*time.Hour)) || a.Quota.Quota != 3 {
		t.Fatalf("answer %+v", a)
	}
	if l.Denied != 2 || l.Granted != 6 {
		t.Errorf("denied = %d, granted = %d", l.Denied, l.Granted)
	}
	// A quota wait longer than MaxAhead is the workflow's, never a grant's.
	var m Ledger
	m.Reserve(now.Add(-time.Hour), lim, Ask{N: 3})
	if a := m.Reserve(now.Add(-time.Hour), lim, Ask{N: 1, MaxWait: 2 * time.Hour}); a.Quota == nil || len(a.Grants) != 0 {
		t.Errorf("a grant an hour ahead for tomorrow's quota: %+v", a)
	}
}

// TestReserveHoldsUnderLateSends checks the guarantee itself: whatever
// moment within [grant, grant+tolerance] each call is actually sent, no
// sliding window ever holds more than its count, and no two calls are
// closer than the minimum interval.
func TestReserveHoldsUnderLateSends(t *testing.T) {
	lim := Limits{
		Windows:     []Window{{Length: time.Second, Count: 5}, {Length: time.Minute, Count: 120}},
		MinInterval: 100 * time.Millisecond,
		Tolerance:   30 * time.Millisecond,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var l Ledger
	var sent []time.Time
	now := t0
	for batch := 0; batch < 400; batch++ {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		ans := l.Reserve(now, lim, Ask{N: 1 + rng.IntN(8), Horizon: time.Duration(rng.IntN(3)) * 500 * time.Millisecond})
		for _, g := range ans.Grants {
			sent = append(sent, g.At.Add(time.Duration(rng.Int64N(int64(lim.Tolerance)+1))))
		}
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
	checkWindows(t, sent, lim)
	if l.Granted != int64(len(sent)) || len(sent) < 100 {
		t.Errorf("granted %d, sent %d", l.Granted, len(sent))
	}
}

func checkWindows(t *testing.T, sent []time.Time, lim Limits) {
	t.Helper()
	for _, w := range lim.Windows {
		for i := range sent {
			// Calls in (sent[i]-L, sent[i]].
			n := 0
			for j := i; j >= 0 && sent[i].Sub(sent[j]) < w.Length; j-- {
				n++
			}
			if n > w.Count {
				t.Fatalf("%d calls within %v ending at call %d (limit %d)", n, w.Length, i, w.Count)
			}
		}
	}
	for i := 1; i < len(sent); i++ {
		if gap := sent[i].Sub(sent[i-1]); gap < lim.MinInterval {
			t.Fatalf("calls %d and %d only %v apart (min %v)", i-1, i, gap, lim.MinInterval)
		}
	}
}

func TestStricter(t *testing.T) {
	a := Limits{Windows: []Window{{time.Second, 5}}, DailyQuota: 1000, Tolerance: time.Millisecond}
	b := Limits{Windows: []Window{{time.Second, 10}, {time.Minute, 100}}, MinInterval: time.Second, DailyQuota: 500}
	got := Stricter(a, b)
	if len(got.Windows) != 2 || got.Windows[0].Count != 5 || got.Windows[1].Count != 100 ||
		got.MinInterval != time.Second || got.DailyQuota != 500 || got.Tolerance != time.Millisecond {
		t.Errorf("Stricter = %+v", got)
	}
}

func TestReserveHorizon(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: 300 * time.Millisecond, Count: 5}}}
	// Asked for 12 with a horizon of 400 ms: the burst at once and the
	// next window's burst fit; the third burst waits for another call.
	ans := l.Reserve(t0, lim, Ask{N: 12, Horizon: 400 * time.Millisecond})
	if len(ans.Grants) != 10 {
		t.Fatalf("granted %d, want 10: %v", len(ans.Grants), at(ans.Grants))
	}
	// The next call gets at least its first grant, and every grant at
	// that same instant.
	ans = l.Reserve(t0, lim, Ask{N: 12, Horizon: time.Millisecond})
	if len(ans.Grants) != 5 || !ans.Grants[0].At.Equal(t0.Add(602*time.Millisecond)) {
		t.Fatalf("grants %v", at(ans.Grants))
	}
	if l.Granted != 15 || len(l.Grants) != 15 {
		t.Errorf("granted %d, log %d", l.Granted, len(l.Grants))
	}
	// With a quota, a grant held back by the horizon is not counted.
	var q Ledger
	ql := Limits{MinInterval: 100 * time.Millisecond, DailyQuota: 10}
	ans = q.Reserve(t0, ql, Ask{N: 5, Horizon: 150 * time.Millisecond})
	if len(ans.Grants) != 2 || q.DayCount(t0, ql) != 2 {
		t.Errorf("grants %v, day count %d", at(ans.Grants), q.DayCount(t0, ql))
	}
}

func TestRelease(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: 300 * time.Millisecond, Count: 2}}, DailyQuota: 100}
	l.Reserve(t0, lim, Ask{N: 2})
	late := l.Reserve(t0, lim, Ask{N: 2}).Grants // the answer came too late
	if n := l.Release(ids(late), lim); n != 2 {
		t.Fatalf("released %d", n)
	}
	again := l.Reserve(t0.Add(10*time.Millisecond), lim, Ask{N: 2}).Grants
	// The released slots are given out again, exactly where they were, with
	// new ids.
	for i := range again {
		if !again[i].At.Equal(late[i].At) || again[i].ID == late[i].ID {
			t.Errorf("regrant %d = %+v, want the released slot %v under a new id", i, again[i], late[i].At)
		}
	}
	if l.Released != 2 || l.DayCount(t0, lim) != 4 || len(l.Grants) != 4 {
		t.Errorf("released %d, day count %d, log %d", l.Released, l.DayCount(t0, lim), len(l.Grants))
	}
	// Releasing an id twice, or one never given, changes nothing.
	if n := l.Release(append(ids(late), 999), lim); n != 0 || l.Released != 2 || len(l.Grants) != 4 {
		t.Errorf("released %d again; counter %d, log %d", n, l.Released, len(l.Grants))
	}
	// Once older grants were trimmed from the log, a release never leaves
	// it shorter than the window's count.
	var m Ledger
	reserveAll(&m, t0, lim, 100)
	if !m.Trimmed {
		t.Fatal("log not trimmed after 100 grants")
	}
	m.Release(ids(m.Grants), lim)
	if len(m.Grants) != 2 {
		t.Errorf("log after releasing everything: %d entries, want 2", len(m.Grants))
	}
}

// TestReleaseOfNextDayGrantKeepsToday is the second reproduction:
// a grant for the next day, released late, must not reset today's count —
// the old ledger kept one day count and gave 4 grants on a quota of 2.
func TestReleaseOfNextDayGrantKeepsToday(t *testing.T) {
	var l Ledger
	lim := Limits{DailyQuota: 2}
	eve := t0.Add(24*time.Hour - 500*time.Millisecond) // 23:59:59.5
	today := l.Reserve(eve, lim, Ask{N: 3, MaxWait: time.Second})
	if len(today.Grants) != 3 || !today.Grants[2].At.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("grants %v", at(today.Grants))
	}
	// The next-day grant came too late to be used: released.
	l.Release([]uint64{today.Grants[2].ID}, lim)
	// Still before midnight: today's two are spent.
	if ans := l.Reserve(eve.Add(100*time.Millisecond), lim, Ask{N: 2}); len(ans.Grants) != 0 || ans.Quota == nil {
		t.Fatalf("after releasing tomorrow's grant, today gave %v (quota %+v): today's count was reset", at(ans.Grants), ans.Quota)
	}
	if c := l.DayCount(eve, lim); c != 2 {
		t.Errorf("today's count %d, want 2", c)
	}
	if c := l.DayCount(t0.Add(24*time.Hour), lim); c != 0 {
		t.Errorf("tomorrow's count %d after the release, want 0", c)
	}
}

// TestReleaseResentNeverCancelsAnotherGrant is the third
// reproduction: a burst shares one instant; a release re-sent (its update
// was applied but reported failed) must not take another caller's grant
// at that instant.
func TestReleaseResentNeverCancelsAnotherGrant(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 4}}}
	mine := l.Reserve(t0, lim, Ask{N: 2}).Grants
	theirs := l.Reserve(t0, lim, Ask{N: 2}).Grants
	if !mine[0].At.Equal(theirs[0].At) {
		t.Fatalf("not one burst: %v %v", at(mine), at(theirs))
	}
	l.Release(ids(mine), lim)
	l.Release(ids(mine), lim) // the retry of an update that was applied
	for _, g := range theirs {
		if !slices.Contains(ids(l.Grants), g.ID) {
			t.Errorf("the other caller's grant %d was released", g.ID)
		}
	}
	if l.Released != 2 {
		t.Errorf("released %d, want 2", l.Released)
	}
}

// TestLedgerProperty interleaves grants, releases (late, repeated, of ids
// never given), penalties and provider-local day boundaries at random and
// checks after every step: the calls actually used (granted and not
// released), each sent at a random point of its slack, keep every window
// and the minimum interval; no day holds more used calls than the quota;
// and each day's count is exactly its used calls.
func TestLedgerProperty(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		lim := Limits{
			Windows:     []Window{{Length: 200 * time.Millisecond, Count: 3}},
			MinInterval: time.Duration(rng.IntN(2)) * 20 * time.Millisecond,
			DailyQuota:  5 + rng.IntN(20),
			Timezone:    "Asia/Seoul",
			Tolerance:   10 * time.Millisecond,
		}
		loc := lim.Location()
		// Start shortly before a Seoul midnight, so the run crosses it.
		now := time.Date(2026, 11, 30, 23, 59, 58, 0, loc)
		var l Ledger
		used := map[uint64]time.Time{}    // id → send time
		granted := map[uint64]time.Time{} // id → grant time
		var given []uint64
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.IntN(60)) * time.Millisecond)
			switch r := rng.IntN(10); {
			case r < 6:
				ans := l.Reserve(now, lim, Ask{N: 1 + rng.IntN(4), MaxWait: time.Duration(rng.IntN(2)) * time.Second, Horizon: lim.Tolerance})
				for _, g := range ans.Grants {
					if _, dup := granted[g.ID]; dup {
						t.Fatalf("seed %d: id %d granted twice", seed, g.ID)
					}
					granted[g.ID] = g.At
					used[g.ID] = g.At.Add(time.Duration(rng.Int64N(int64(lim.Tolerance) + 1)))
					given = append(given, g.ID)
				}
			case r < 9 && len(given) > 0:
				// Release some grants, perhaps again, perhaps unknown ids.
				var rel []uint64
				for range 1 + rng.IntN(3) {
					switch rng.IntN(4) {
					case 0:
						rel = append(rel, uint64(1e6+rng.IntN(1000)))
					default:
						rel = append(rel, given[rng.IntN(len(given))])
					}
				}
				before := map[uint64]bool{}
				for _, g := range l.Grants {
					before[g.ID] = true
				}
				l.Release(rel, lim)
				after := map[uint64]bool{}
				for _, g := range l.Grants {
					after[g.ID] = true
				}
				for id := range before {
					if !after[id] {
						delete(used, id) // released: never sent
					}
				}
			case len(given) > 0:
				l.Penalize(now, lim, Penalty{GrantID: given[len(given)-1], RetryAfter: time.Duration(rng.IntN(3)) * 100 * time.Millisecond})
			}
			// Every used grant still known to the ledger is in its log or was
			// trimmed; every id in the log is a used one.
			for _, g := range l.Grants {
				if _, ok := used[g.ID]; !ok {
					t.Fatalf("seed %d step %d: grant %d in the log but released", seed, step, g.ID)
				}
			}
			perDay := map[string]int{}
			var sent []time.Time
			for id, s := range used {
				perDay[granted[id].In(loc).Format(time.DateOnly)]++
				sent = append(sent, s)
			}
			for day, n := range perDay {
				if n > lim.DailyQuota {
					t.Fatalf("seed %d step %d: %d calls used on %s, quota %d", seed, step, n, day, lim.DailyQuota)
				}
			}
			for _, d := range l.Days {
				if d.Count != perDay[d.Day] {
					t.Fatalf("seed %d step %d: day %s counted %d, used %d", seed, step, d.Day, d.Count, perDay[d.Day])
				}
			}
			sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
			checkWindows(t, sent, lim)
		}
		if len(given) < 20 {
			t.Errorf("seed %d: only %d grants: the test exercised little", seed, len(given))
		}
	}
}

// TestQuarantine: a ledger that lost its state grants nothing until any
// grant of the run before it has left every window, and counts today's
// quota as spent.
func TestQuarantine(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: 2 * time.Second, Count: 3}}, DailyQuota: 4, Tolerance: 50 * time.Millisecond}
	var l Ledger
	noon := t0.Add(12 * time.Hour)
	l.Quarantine(noon, lim)
	if want := noon.Add(MaxAhead + MaxTolerance + 2*time.Second + slack); !l.PausedUntil.Equal(want) {
		t.Errorf("paused until %v, want %v", l.PausedUntil, want)
	}
	if ans := l.Reserve(noon.Add(time.Hour), lim, Ask{N: 1}); ans.Quota == nil || !ans.Quota.ResetAt.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("quarantined day granted %+v", ans)
	}
	if ans := l.Reserve(t0.Add(24*time.Hour), lim, Ask{N: 1}); len(ans.Grants) != 1 {
		t.Errorf("the next day: %+v", ans)
	}
	if l.NextID < uint64(noon.UnixNano()) {
		t.Errorf("ids restart at %d, below the quarantine's base", l.NextID)
	}
}

// TestUpgradeLegacyLedger: a ledger carried by an older limiter (grant
// times, one day count) keeps its history and count.
func TestUpgradeLegacyLedger(t *testing.T) {
	l := Ledger{LegacyLog: []time.Time{t0, t0.Add(time.Second)}, LegacyDay: "2026-11-30", LegacyDayCount: 7}
	l.Upgrade()
	lim := Limits{Windows: []Window{{Length: 10 * time.Second, Count: 2}}, DailyQuota: 8}
	if len(l.Grants) != 2 || l.Grants[1].ID != 2 || l.DayCount(t0, lim) != 7 || l.LegacyLog != nil {
		t.Fatalf("upgraded %+v", l)
	}
	ans := l.Reserve(t0.Add(2*time.Second), lim, Ask{N: 2})
	if len(ans.Grants) != 0 {
		t.Errorf("an upgraded full window granted %v", at(ans.Grants))
	}
}
