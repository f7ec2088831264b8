package simulator

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

func testScope(windows []registry.Window, minInterval time.Duration, scale float64) *Scope {
	p := &registry.Provider{ID: "p", Location: time.UTC}
	inst := &registry.ScopeInstance{ID: "p/key", Provider: p, Scope: registry.ScopeKey,
		Limit: &registry.RateLimit{Scope: registry.ScopeKey, Windows: windows, MinInterval: minInterval}}
	return newScopeState(inst, scale)
}

func (st *Scope) try(now time.Time) bool {
	t := st.observe(now)
	if v, _ := st.check(t, 1); v != Admitted {
		st.rejected++
		return false
	}
	st.accept(t)
	return true
}

func TestSlidingWindowsExact(t *testing.T) {
	st := testScope([]registry.Window{
		{Field: "requests_per_second", Length: time.Second, Count: 3},
		{Field: "requests_per_minute", Length: time.Minute, Count: 5},
	}, 0, 1)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {0, true}, {500 * time.Millisecond, false}, // 4th in the same second
		{time.Second, true}, {time.Second, true}, // the second window slid; minute now at 5
		{2 * time.Second, false},                                                      // minute full
		{60 * time.Second, true},                                                      // (0, 60s]: the three calls at 0 fell out
		{60 * time.Second, true}, {60 * time.Second, true}, {60 * time.Second, false}, // 3 a second again
		{61 * time.Second, true},                 // (1s, 61s] excludes the calls at 1 s: minute at 4
		{61*time.Second + time.Nanosecond, true}, // minute at 5
		{62 * time.Second, false},                // (2s, 62s] holds 5 accepted calls
	}
	for i, s := range steps {
		if got := st.try(at(s.at)); got != s.want {
			t.Fatalf("step %d at %v: accepted=%v, want %v", i, s.at, got, s.want)
		}
	}
	snap := st.snapshot(at(62 * time.Second))
	if snap.MaxAcceptedInWindow["requests_per_second"] != 3 || snap.MaxAcceptedInWindow["requests_per_minute"] != 5 {
		t.Errorf("max accepted %v", snap.MaxAcceptedInWindow)
	}
	// Calls of any outcome: 4 in (−1s, 0.5s]; in (1s, 61s] there were 8.
	if snap.MaxInWindow["requests_per_second"] != 4 || snap.MaxInWindow["requests_per_minute"] != 8 {
		t.Errorf("max in window %v", snap.MaxInWindow)
	}
	if snap.Calls != int64(len(steps)) || snap.Accepted+snap.Rejected != snap.Calls {
		t.Errorf("calls %d accepted %d rejected %d", snap.Calls, snap.Accepted, snap.Rejected)
	}
}

func TestMinIntervalAndScale(t *testing.T) {
	st := testScope(nil, 2*time.Second, 4) // 2 s ÷ 4 = 500 ms
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if !st.try(t0) || st.try(t0.Add(499*time.Millisecond)) || !st.try(t0.Add(500*time.Millisecond)) {
		t.Fatal("min interval 2 s at scale 4 is not 500 ms")
	}
	snap := st.snapshot(t0)
	if snap.MinIntervalMS != 500 || *snap.MinGapMS != 500 || *snap.MinGapAllMS != 1 {
		t.Errorf("min interval %v gap %v all %v", snap.MinIntervalMS, *snap.MinGapMS, *snap.MinGapAllMS)
	}
}
