package simulator

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

func testScope(windows []registry.Window, minInterval time.Duration, scale float64) *scopeState {
	p := &registry.Provider{ID: "p", Location: time.UTC}
	inst := &registry.ScopeInstance{ID: "p/key", Provider: p, Scope: registry.ScopeKey,
		Limit: &registry.RateLimit{Scope: registry.ScopeKey, Windows: windows, MinInterval: minInterval}}
	return newScopeState(inst, scale)
}

func (st *scopeState) try(now time.Time) bool {
	t := st.observe(now)
	if v, _ := st.check(t, 1); v != admitted {
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

func TestRateScaleOverHTTP(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateScale = 10 })
	tok := h.kisToken()
	hdr := h.kisHeaders(tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	for i := 0; i < 5; i++ {
		if r := h.get(q, hdr); r.status != 200 {
			t.Fatalf("call %d: %d", i, r.status)
		}
	}
	if r := h.get(q, hdr); r.status != http.StatusInternalServerError {
		t.Fatalf("6th call: %d", r.status)
	}
	h.clock.Advance(100 * time.Millisecond) // 1 s ÷ 10
	if r := h.get(q, hdr); r.status != 200 {
		t.Fatalf("after 100 ms at scale 10: %d", r.status)
	}
	// The token interval scales too: 60 s ÷ 10.
	h.clock.Advance(6 * time.Second)
	h.kisToken()
	st := h.stats()
	if st.RateScale != 10 || st.Scopes["kis/key"].WindowMS["requests_per_second"] != 100 || st.Scopes["kis/key"].WindowMS["requests_per_day"] != 86400000 {
		t.Errorf("stats scale %v windows %v", st.RateScale, st.Scopes["kis/key"].WindowMS)
	}
}

func TestStatsAndReset(t *testing.T) {
	h := newHarness(t, nil)
	h.fred("")
	h.clock.Advance(250 * time.Millisecond)
	h.fred("")
	h.fred("") // rejected: a third call within a second
	st := h.stats()
	f := st.Scopes["fred/key"]
	if f.Calls != 3 || f.Accepted != 2 || f.Rejected != 1 || f.Violations != 1 || *f.MinGapMS != 250 || *f.MinGapAllMS != 0 ||
		f.Limits["requests_per_minute"] != 120 || f.MaxInWindow["requests_per_second"] != 3 {
		t.Errorf("fred stats %+v", f)
	}
	if len(st.Scopes) != 8 || st.Providers["fred"].Requests != 3 {
		t.Errorf("%d scopes, fred requests %d", len(st.Scopes), st.Providers["fred"].Requests)
	}
	if sim := h.sim.Stats(); sim.Scopes["fred/key"].Calls != 3 {
		t.Error("Stats() differs from /_sim/stats")
	}
	if r := h.post("/_sim/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d", r.status)
	}
	st = h.stats()
	if f := st.Scopes["fred/key"]; f.Calls != 0 || f.MinGapMS != nil || f.MaxInWindow["requests_per_second"] != 0 || st.Providers["fred"].Requests != 0 {
		t.Errorf("after reset %+v", f)
	}
	if r := h.fred(""); r.status != 200 {
		t.Errorf("call after reset: %d", r.status)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a registry succeeded")
	}
	reg := loadFixture(t)
	if _, err := New(Options{Registry: reg, RateScale: -1}); err == nil {
		t.Error("negative rate scale accepted")
	}
	if _, err := New(Options{Registry: reg, Faults: []Fault{{Provider: "kis", ErrorRate: 2}}}); err == nil {
		t.Error("error rate 2 accepted")
	}
	sim, err := New(Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.SetFaults([]Fault{{Provider: "nope"}}); err == nil {
		t.Error("fault for an unknown provider accepted")
	}
	if sim.RateScale() != 1 {
		t.Errorf("default rate scale %v", sim.RateScale())
	}
}

func TestNewRejectsInfiniteRateScale(t *testing.T) {
	reg := loadFixture(t)
	for _, scale := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		_, err := New(Options{Registry: reg, RateScale: scale})
		if err == nil || !strings.Contains(err.Error(), "rate scale") || !strings.Contains(err.Error(), "finite") {
			t.Errorf("rate scale %v: %v", scale, err)
		}
	}
}

// TestFaultTargetsChecked: New and SetFaults reject the same faults that
// could never match — an unknown provider, an unknown dataset, a dataset
// of another provider — and name the value and what is known.
func TestFaultTargetsChecked(t *testing.T) {
	reg := loadFixture(t)
	for _, tc := range []struct {
		name  string
		fault Fault
		want  []string
	}{
		{"unknown provider", Fault{Provider: "nope", Down: true},
			[]string{`provider "nope"`, "known providers: kis, ecos, fred, upbit, datago"}},
		{"unknown dataset", Fault{Provider: "fred", Dataset: "fred-nope", Down: true},
			[]string{`dataset "fred-nope"`, "fred-cpiaucsl", "fred-dgs10"}},
		{"dataset of another provider", Fault{Provider: "kis", Dataset: "fred-dgs10", Down: true},
			[]string{`dataset "fred-dgs10"`, `provider "kis"`, `belongs to "fred"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Registry: reg, Faults: []Fault{tc.fault}})
			checkErr(t, "New", err, tc.want)
			sim, err := New(Options{Registry: reg, Faults: []Fault{{Provider: "ecos", Down: true}}})
			if err != nil {
				t.Fatal(err)
			}
			checkErr(t, "SetFaults", sim.SetFaults([]Fault{tc.fault}), tc.want)
			if got := sim.Faults(); len(got) != 1 || got[0].Provider != "ecos" {
				t.Errorf("a rejected SetFaults changed the faults: %+v", got)
			}
		})
	}
	if _, err := New(Options{Registry: reg, Faults: []Fault{{Provider: "fred", Dataset: "fred-dgs10", Down: true}, {Down: true}}}); err != nil {
		t.Errorf("valid faults rejected: %v", err)
	}
}

func checkErr(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s accepted the fault", what)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}
