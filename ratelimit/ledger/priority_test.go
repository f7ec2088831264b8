package ledger

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit/permit"
)

// kisLike is a 5/s scope with a daily quota of 10 in Seoul, of which 7 are
// reserved for daily runs and probes.
func kisLike() Limits {
	return Limits{Windows: []Window{{Length: time.Second, Count: 5}}, DailyQuota: 10, Reserved: 7,
		Timezone: "Asia/Seoul", Tolerance: 10 * time.Millisecond}
}

func daily(n int, caller string, lim Limits) Ask {
	return Ask{N: n, Horizon: lim.Horizon(), Rules: RulesPriority, Caller: caller}
}

func backfill(n int, caller string, lim Limits) Ask {
	a := daily(n, caller, lim)
	a.Priority = permit.PriorityBackfill
	return a
}

// TestReservePriority is a table of asks by two callers, a daily one and
// a backfill, at increasing times: a backfill gets nothing while the daily
// caller waits (its last answer left calls waiting), and the slots the
// daily caller leaves once it has all it asked for, or once it has not
// asked again for waitLease.
func TestReservePriority(t *testing.T) {
	lim := kisLike()
	lim.DailyQuota, lim.Reserved = 0, 0
	type step struct {
		after   time.Duration // since t0
		ask     Ask
		want    []time.Duration // grant times since t0
		yielded bool
	}
	burst := func(at time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = at
		}
		return out
	}
	second := time.Second + lim.Tolerance + slack // a window and its slack
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"backfill waits while the daily caller waits", []step{
			{0, daily(7, "a", lim), burst(0, 5), false},
			{500 * time.Millisecond, backfill(5, "b", lim), nil, true},
			{990 * time.Millisecond, daily(2, "a", lim), burst(second, 2), false},
			// a has all it asked for: b gets the rest of that window.
			{995 * time.Millisecond, backfill(5, "b", lim), burst(second, 3), false},
		}},
		{"a daily caller that went away holds backfills back for waitLease only", []step{
			{0, daily(7, "a", lim), burst(0, 5), false},
			{waitLease - time.Millisecond, backfill(5, "b", lim), nil, true},
			{waitLease, backfill(5, "b", lim), burst(waitLease, 5), false},
		}},
		{"a daily caller given all it asked for holds nothing back", []step{
			{0, daily(3, "a", lim), burst(0, 3), false},
			{time.Millisecond, backfill(5, "b", lim), burst(time.Millisecond, 2), false},
		}},
		{"the legacy rules ignore priorities", []step{
			{0, Ask{N: 7, Horizon: lim.Horizon()}, burst(0, 5), false},
			{500 * time.Millisecond, Ask{N: 5, Horizon: lim.Horizon(), Priority: permit.PriorityBackfill}, burst(second, 5), false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			for i, s := range tc.steps {
				ans := l.Reserve(t0.Add(s.after), lim, s.ask)
				var got []time.Duration
				for _, g := range ans.Grants {
					got = append(got, g.At.Sub(t0))
				}
				if len(got) != len(s.want) || ans.Yielded != s.yielded || (s.yielded && ans.RetryIn != yieldPoll) {
					t.Fatalf("step %d: grants at %v, yielded %v (retry in %s); want %v, yielded %v", i, got, ans.Yielded, ans.RetryIn, s.want, s.yielded)
				}
				for j := range got {
					if got[j] != s.want[j] {
						t.Fatalf("step %d: grants at %v, want %v", i, got, s.want)
					}
				}
			}
		})
	}
}

// TestReserveBackfillShare: backfills get DailyQuota − Reserved calls a
// provider-local day, then a quota answer with the provider-local
// midnight; daily calls still get the reserved part; a released backfill
// grant gives its share back; the next day the share is whole again.
func TestReserveBackfillShare(t *testing.T) {
	lim := kisLike()
	lim.Windows = nil
	loc := lim.Location()
	noon := time.Date(2026, 11, 30, 12, 0, 0, 0, loc)
	midnight := time.Date(2026, 12, 1, 0, 0, 0, 0, loc).UTC()
	var l Ledger
	ans := l.Reserve(noon, lim, backfill(5, "b", lim))
	if len(ans.Grants) != 3 || ans.Quota == nil || !ans.Quota.ResetAt.Equal(midnight) || !ans.Quota.Backfill || ans.Quota.Quota != 3 {
		t.Fatalf("backfill: %d grants, quota %+v; want 3 and the share of 3 spent until %s", len(ans.Grants), ans.Quota, midnight)
	}
	if got := l.BackfillCount(noon, lim); got != 3 {
		t.Errorf("backfill count %d, want 3", got)
	}
	if ans := l.Reserve(noon.Add(time.Second), lim, daily(7, "a", lim)); len(ans.Grants) != 7 || ans.Quota != nil {
		t.Fatalf("daily after the backfill's share: %d grants, quota %+v; want the reserved 7", len(ans.Grants), ans.Quota)
	}
	if ans := l.Reserve(noon.Add(2*time.Second), lim, daily(1, "a", lim)); len(ans.Grants) != 0 || ans.Quota == nil || ans.Quota.Backfill {
		t.Fatalf("daily past the quota: %+v", ans)
	}
	// Releasing a backfill grant frees a slot of the quota and of the share.
	l.Release([]uint64{1}, lim)
	if ans := l.Reserve(noon.Add(3*time.Second), lim, backfill(2, "b", lim)); len(ans.Grants) != 1 || ans.Quota == nil {
		t.Fatalf("backfill after a release: %d grants, quota %+v; want 1", len(ans.Grants), ans.Quota)
	}
	next := midnight.Add(time.Second)
	if ans := l.Reserve(next, lim, backfill(5, "b", lim)); len(ans.Grants) != 3 || ans.Quota == nil || !ans.Quota.ResetAt.Equal(midnight.AddDate(0, 0, 1)) {
		t.Fatalf("next day: %d grants, quota %+v; want 3 and the next midnight", len(ans.Grants), ans.Quota)
	}
	// The legacy rules know no share: a backfill gets the whole quota.
	var old Ledger
	if ans := old.Reserve(noon, lim, Ask{N: 10, Priority: permit.PriorityBackfill}); len(ans.Grants) != 10 {
		t.Fatalf("legacy: %d grants", len(ans.Grants))
	}
}

// TestReserveSpacesByEachGrantsTolerance (§6): under RulesPriority each
// grant keeps its caller's tolerance, so a caller with 10 ms spaces the
// next window by L + 10 ms + 1 ms even while a caller with 50 ms is live
// (the legacy rules spaced by the effective 50 ms); and a grant of the
// 50 ms caller still spaces the window after it by its own 50 ms.
func TestReserveSpacesByEachGrantsTolerance(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 5}}, Tolerance: 50 * time.Millisecond} // the effective: max of live callers
	ask := func(tol time.Duration, rules int) Ask {
		return Ask{N: 5, Horizon: tol, Rules: rules, Caller: "a", Tolerance: tol}
	}
	for _, tc := range []struct {
		name   string
		rules  int
		tols   []time.Duration
		second []time.Duration // start of each window after the first
	}{
		{"legacy: every window costs the effective tolerance", RulesLegacy, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
			[]time.Duration{1051 * time.Millisecond, 2102 * time.Millisecond}},
		{"each grant's own tolerance", RulesPriority, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
			[]time.Duration{1011 * time.Millisecond, 2022 * time.Millisecond}},
		{"a wider grant before a narrower one", RulesPriority, []time.Duration{50 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
			[]time.Duration{1051 * time.Millisecond, 2062 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			now := t0
			var starts []time.Duration
			for i, tol := range tc.tols {
				ans := l.Reserve(now, lim, ask(tol, tc.rules))
				for ans.RetryIn > 0 {
					now = now.Add(ans.RetryIn)
					ans = l.Reserve(now, lim, ask(tol, tc.rules))
				}
				if len(ans.Grants) != 5 {
					t.Fatalf("window %d: %d grants", i, len(ans.Grants))
				}
				if i > 0 {
					starts = append(starts, ans.Grants[0].At.Sub(t0))
				}
			}
			for i := range starts {
				if starts[i] != tc.second[i] {
					t.Fatalf("windows start at %v, want %v", starts, tc.second)
				}
			}
		})
	}
}

// TestLedgerPriorityProperty is TestLedgerProperty under RulesPriority with
// callers of both classes and of several tolerances: calls sent anywhere
// within their own grant's tolerance keep every window and the minimum
// interval, no day holds more calls than the quota, and no day more
// backfill calls than the share.
func TestLedgerPriorityProperty(t *testing.T) {
	tols := []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		lim := Limits{
			Windows:     []Window{{Length: 200 * time.Millisecond, Count: 3}},
			MinInterval: time.Duration(rng.IntN(2)) * 20 * time.Millisecond,
			DailyQuota:  10 + rng.IntN(20),
			Timezone:    "Asia/Seoul",
			Tolerance:   50 * time.Millisecond,
		}
		lim.Reserved = rng.IntN(lim.DailyQuota + 1)
		loc := lim.Location()
		now := time.Date(2026, 11, 30, 23, 59, 57, 0, loc)
		var l Ledger
		used := map[uint64]time.Time{}
		day := map[uint64]string{}
		isBackfill := map[uint64]bool{}
		var given []uint64
		for step := 0; step < 400; step++ {
			now = now.Add(time.Duration(rng.IntN(60)) * time.Millisecond)
			if rng.IntN(10) < 8 || len(given) == 0 {
				tol := tols[rng.IntN(len(tols))]
				ask := Ask{N: 1 + rng.IntN(4), MaxWait: time.Duration(rng.IntN(2)) * time.Second, Horizon: tol,
					Rules: RulesPriority, Caller: []string{"a", "b", "c"}[rng.IntN(3)], Tolerance: tol}
				if rng.IntN(2) == 0 {
					ask.Priority = permit.PriorityBackfill
				}
				for _, g := range l.Reserve(now, lim, ask).Grants {
					used[g.ID] = g.At.Add(time.Duration(rng.Int64N(int64(tol) + 1)))
					day[g.ID] = g.At.In(loc).Format(time.DateOnly)
					isBackfill[g.ID] = g.Backfill
					if g.Backfill != (ask.Priority == permit.PriorityBackfill) {
						t.Fatalf("seed %d: grant %d backfill %v for a %q ask", seed, g.ID, g.Backfill, ask.Priority)
					}
					given = append(given, g.ID)
				}
			} else {
				id := given[rng.IntN(len(given))]
				before := len(l.Grants)
				l.Release([]uint64{id}, lim)
				if len(l.Grants) < before {
					delete(used, id)
				}
			}
			perDay, backfills := map[string]int{}, map[string]int{}
			var sent []time.Time
			for id, s := range used {
				perDay[day[id]]++
				if isBackfill[id] {
					backfills[day[id]]++
				}
				sent = append(sent, s)
			}
			for d, n := range perDay {
				if n > lim.DailyQuota || backfills[d] > lim.backfillShare() {
					t.Fatalf("seed %d step %d: %s holds %d calls (%d backfill); quota %d, share %d", seed, step, d, n, backfills[d], lim.DailyQuota, lim.backfillShare())
				}
			}
			for _, d := range l.Days {
				if d.Count != perDay[d.Day] || d.Backfill != backfills[d.Day] {
					t.Fatalf("seed %d step %d: day %s counted %d (%d backfill), used %d (%d)", seed, step, d.Day, d.Count, d.Backfill, perDay[d.Day], backfills[d.Day])
				}
			}
			sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
			checkWindows(t, sent, lim)
		}
		if len(given) < 20 {
			t.Errorf("seed %d: only %d grants", seed, len(given))
		}
	}
}

// TestStampLateKeepsLegacySlack: grants of a legacy ledger (no Late) get
// At plus the tolerance then in force, as a running maximum, so a caller
// with a smaller tolerance afterwards is still spaced from their slack.
func TestStampLateKeepsLegacySlack(t *testing.T) {
	lim := Limits{Windows: []Window{{Length: time.Second, Count: 2}}, Tolerance: 50 * time.Millisecond}
	l := Ledger{Grants: []Grant{{ID: 1, At: t0}, {ID: 2, At: t0}}, NextID: 2}
	l.StampLate(lim)
	narrow := Ask{N: 1, Rules: RulesPriority, Caller: "a", Tolerance: 10 * time.Millisecond}
	// The wide caller is gone: the effective tolerance is the narrow one's.
	later := lim
	later.Tolerance = 10 * time.Millisecond
	ans := l.Reserve(t0.Add(100*time.Millisecond), later, narrow)
	if want := t0.Add(time.Second + 50*time.Millisecond + slack); len(ans.Grants) != 1 || !ans.Grants[0].At.Equal(want) {
		t.Fatalf("grant after legacy grants: %+v, want at %s", ans.Grants, want)
	}
}

// TestReserveProbeWaitsBehindDaily: under RulesProbe a probe's ask gets
// nothing while a daily caller waits, and the slots a daily caller leaves
// once it has all it asked for; it spends no backfill share. Under the
// generation before, the same ask is served as a daily one (replays of
// runs recorded then answer as they did).
func TestReserveProbeWaitsBehindDaily(t *testing.T) {
	lim := kisLike()
	lim.DailyQuota, lim.Reserved = 0, 0
	at := func(ans Answer) []time.Duration {
		var got []time.Duration
		for _, g := range ans.Grants {
			got = append(got, g.At.Sub(t0))
		}
		return got
	}
	ask := func(n int, caller string, prio permit.Priority, rules int) Ask {
		return Ask{N: n, Horizon: lim.Horizon(), Rules: rules, Caller: caller, Priority: prio}
	}
	second := time.Second + lim.Tolerance + slack

	var l Ledger
	if got := at(l.Reserve(t0, lim, ask(7, "daily", permit.PriorityDaily, RulesProbe))); len(got) != 5 {
		t.Fatalf("daily: grants %v, want 5 at once", got)
	}
	ans := l.Reserve(t0.Add(500*time.Millisecond), lim, ask(1, "probe", permit.PriorityProbe, RulesProbe))
	if !ans.Yielded || len(ans.Grants) != 0 || ans.RetryIn != yieldPoll {
		t.Fatalf("a probe while a daily caller waits: %+v, want it yielded", ans)
	}
	if got := at(l.Reserve(t0.Add(990*time.Millisecond), lim, ask(2, "daily", permit.PriorityDaily, RulesProbe))); len(got) != 2 || got[0] != second {
		t.Fatalf("daily again: grants %v, want 2 at %s", got, second)
	}
	ans = l.Reserve(t0.Add(995*time.Millisecond), lim, ask(1, "probe", permit.PriorityProbe, RulesProbe))
	if got := at(ans); ans.Yielded || len(got) != 1 || got[0] != second {
		t.Fatalf("a probe once the daily caller has all it asked: %+v, want one grant at %s", ans, second)
	}
	if ans.Grants[0].Backfill {
		t.Error("a probe's grant counts against the backfill share")
	}

	// The generation before serves a probe as a daily call.
	var old Ledger
	old.Reserve(t0, lim, ask(7, "daily", permit.PriorityDaily, RulesWindow))
	ans = old.Reserve(t0.Add(500*time.Millisecond), lim, ask(1, "probe", permit.PriorityProbe, RulesWindow))
	if ans.Yielded || len(ans.Grants) != 1 {
		t.Fatalf("under RulesWindow a probe while a daily caller waits: %+v, want a grant (a daily ask)", ans)
	}
}
