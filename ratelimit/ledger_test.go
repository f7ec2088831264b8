package ratelimit

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func TestReserveSpacesBurstsByWindow(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 10 * time.Millisecond}
	grants, q := l.Reserve(t0, lim, 12, time.Hour, 0, 0)
	if q != nil {
		t.Fatal(q)
	}
	// The first five at once, then each a window (+ tolerance + 1 ms) after
	// the fifth grant before it.
	want := []time.Duration{0, 0, 0, 0, 0, 1011, 1011, 1011, 1011, 1011, 2022, 2022}
	for i, g := range grants {
		if got := g.Sub(t0); got != want[i]*time.Millisecond {
			t.Errorf("grant %d at %v, want %v", i, got, want[i]*time.Millisecond)
		}
	}
}

func TestReserveMinInterval(t *testing.T) {
	var l Ledger
	lim := Limits{MinInterval: 2 * time.Second}
	grants, _ := l.Reserve(t0, lim, 3, time.Hour, 0, 0)
	for i := 1; i < len(grants); i++ {
		if gap := grants[i].Sub(grants[i-1]); gap != 2*time.Second+time.Millisecond {
			t.Errorf("gap %d = %v", i, gap)
		}
	}
}

func TestReserveDailyQuotaResetsAtLocalMidnight(t *testing.T) {
	var l Ledger
	lim := Limits{DailyQuota: 3, Timezone: "Asia/Seoul"}
	// 23:59:55 KST: three calls fit today; the fourth waits for midnight KST.
	now := time.Date(2026, 11, 30, 14, 59, 55, 0, time.UTC)
	midnight := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	grants, q := l.Reserve(now, lim, 4, time.Hour, 0, 0)
	if q != nil || len(grants) != 4 || !grants[2].Equal(now) || !grants[3].Equal(midnight) {
		t.Fatalf("grants %v, quota %v", grants, q)
	}
	// Fill tomorrow, then ask with a maxWait shorter than the wait: the
	// quota is reported exhausted until the next local midnight.
	if g, q := l.Reserve(midnight, lim, 2, time.Hour, 0, 0); len(g) != 2 || q != nil {
		t.Fatalf("grants %v, quota %v", g, q)
	}
	grants, q = l.Reserve(midnight, lim, 2, time.Hour, 0, 0)
	if len(grants) != 0 || q == nil || !q.ResetAt.Equal(midnight.Add(24*time.Hour)) || q.Quota != 3 {
		t.Fatalf("grants %v, quota %+v", grants, q)
	}
	if l.Denied != 2 || l.Granted != 6 {
		t.Errorf("denied = %d, granted = %d", l.Denied, l.Granted)
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
	for batch := 0; batch < 200; batch++ {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		grants, _ := l.Reserve(now, lim, 1+rng.IntN(8), time.Hour, 0, time.Duration(rng.IntN(3))*500*time.Millisecond)
		for _, g := range grants {
			sent = append(sent, g.Add(time.Duration(rng.Int64N(int64(lim.Tolerance)+1))))
		}
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
	checkWindows(t, sent, lim)
	if l.Granted != int64(len(sent)) {
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

func TestPenalizeHalvesAndRecovers(t *testing.T) {
	var l Ledger
	step := 10 * time.Second
	if f := l.Penalize(t0, 3*time.Second, step, 0); f != 0.5 {
		t.Fatalf("factor after one penalty = %v", f)
	}
	if f := l.Penalize(t0, 0, step, 0); f != 0.25 {
		t.Fatalf("factor after two = %v", f)
	}
	if f := l.CurrentFactor(t0.Add(25*time.Second), step); f != 0.25*1.25*1.25 {
		t.Errorf("factor after two steps = %v", f)
	}
	if f := l.CurrentFactor(t0.Add(time.Hour), step); f != 1 {
		t.Errorf("factor after an hour = %v", f)
	}
	// Paused: the first grant waits for the provider's Retry-After, and
	// at half rate a 1/s window spaces grants two seconds apart.
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 1}}}
	var m Ledger
	m.Penalize(t0, 3*time.Second, step, 0)
	grants, _ := m.Reserve(t0, lim, 2, time.Hour, step, 0)
	if !grants[0].Equal(t0.Add(3*time.Second)) || grants[1].Sub(grants[0]) != 2*time.Second+time.Millisecond {
		t.Errorf("grants after penalty: %v", grants)
	}
	for range 10 {
		m.Penalize(t0, 0, step, 0)
	}
	if m.Factor != minFactor {
		t.Errorf("factor floor = %v", m.Factor)
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
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}}
	// Asked for 12 with a horizon of 1.5 s: the burst at once and the next
	// window's burst fit; the third burst waits for another call.
	grants, _ := l.Reserve(t0, lim, 12, time.Hour, 0, 1500*time.Millisecond)
	if len(grants) != 10 {
		t.Fatalf("granted %d, want 10: %v", len(grants), grants)
	}
	// The next call gets at least its first grant, and every grant at
	// that instant, however far ahead.
	grants, _ = l.Reserve(t0, lim, 12, time.Hour, 0, time.Millisecond)
	if len(grants) != 5 || !grants[0].Equal(t0.Add(2002*time.Millisecond)) {
		t.Fatalf("grants %v", grants)
	}
	if l.Granted != 15 || len(l.Log) != 15 {
		t.Errorf("granted %d, log %d", l.Granted, len(l.Log))
	}
	// With a quota, a grant held back by the horizon is not counted.
	var q Ledger
	ql := Limits{MinInterval: time.Second, DailyQuota: 10}
	grants, _ = q.Reserve(t0, ql, 5, time.Hour, 0, 1500*time.Millisecond)
	if len(grants) != 2 || q.DayCount != 2 {
		t.Errorf("grants %v, day count %d", grants, q.DayCount)
	}
}

func TestRelease(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 2}}, DailyQuota: 100}
	l.Reserve(t0, lim, 2, time.Hour, 0, 0)
	late, _ := l.Reserve(t0, lim, 2, time.Hour, 0, 0) // the answer came too late
	l.Release(late, lim)
	again, _ := l.Reserve(t0.Add(10*time.Millisecond), lim, 2, time.Hour, 0, 0)
	// The released slots are given out again, exactly where they were.
	for i := range again {
		if !again[i].Equal(late[i]) {
			t.Errorf("regrant %d at %v, want the released %v", i, again[i], late[i])
		}
	}
	if l.Released != 2 || l.DayCount != 4 || len(l.Log) != 4 {
		t.Errorf("released %d, day count %d, log %d", l.Released, l.DayCount, len(l.Log))
	}
	// Releasing what is not in the log changes nothing.
	l.Release([]time.Time{t0.Add(time.Hour)}, lim)
	if l.Released != 2 || len(l.Log) != 4 {
		t.Errorf("released %d, log %v", l.Released, l.Log)
	}
	// Once older grants were trimmed from the log, a release never leaves
	// it shorter than the window's count.
	var m Ledger
	m.Reserve(t0, lim, 100, time.Hour, 0, 0)
	if !m.Trimmed {
		t.Fatal("log not trimmed after 100 grants")
	}
	m.Release(append([]time.Time(nil), m.Log...), lim)
	if len(m.Log) != 2 {
		t.Errorf("log after releasing everything: %d entries, want 2", len(m.Log))
	}
}

// TestPenaltyBurstHalvesOnce: several rejections of calls already under way
// when the rate was halved do not halve it again within the cooldown.
func TestPenaltyBurstHalvesOnce(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 10 * time.Millisecond}
	step := time.Minute
	for i := range 3 {
		l.Penalize(t0.Add(time.Duration(i)*10*time.Millisecond), 0, step, lim.Cooldown())
	}
	if f := l.CurrentFactor(t0.Add(100*time.Millisecond), step); f != 0.5 || l.Penalties != 3 {
		t.Fatalf("factor %v after a burst of 3 rejections (penalties %d), want 0.5", f, l.Penalties)
	}
	// After the cooldown (stretched by the factor), a new rejection halves.
	if f := l.Penalize(t0.Add(3*time.Second), 0, step, lim.Cooldown()); f != 0.25 {
		t.Errorf("factor after the cooldown = %v, want 0.25", f)
	}
}

// TestBackoffSpacesCallsEvenly: while backing off, a window-only limit
// sends its calls evenly spaced, not in bursts of the window's count.
func TestBackoffSpacesCallsEvenly(t *testing.T) {
	var l Ledger
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}}
	l.Penalize(t0, 0, time.Hour, 0)
	grants, _ := l.Reserve(t0, lim, 6, time.Hour, time.Hour, 0)
	for i := 1; i < len(grants); i++ {
		// Half rate: 5 per 2 s, one every 400 ms (+1 ms slack).
		if gap := grants[i].Sub(grants[i-1]); gap != 401*time.Millisecond {
			t.Errorf("gap %d = %v, want 401ms", i, gap)
		}
	}
}
