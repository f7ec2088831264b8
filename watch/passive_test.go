package watch

import (
	"fmt"
	"testing"
	"time"
)

func TestFirstProbeOffsetSpreadsDeterministically(t *testing.T) {
	const interval = time.Hour
	const n, buckets = 200, 10
	counts := make([]int, buckets)
	for i := range n {
		id := fmt.Sprintf("kis.dataset_%03d", i)
		off := FirstProbeOffset(id, interval)
		if off < 0 || off >= interval {
			t.Fatalf("FirstProbeOffset(%s) = %s, want within [0, %s)", id, off, interval)
		}
		if again := FirstProbeOffset(id, interval); again != off {
			t.Fatalf("FirstProbeOffset(%s) = %s then %s: not deterministic", id, off, again)
		}
		counts[off*buckets/interval]++
	}
	// 20 a bucket on average: a hash that bunches (every offset 0, or all
	// in a few tenths) fails.
	for b, c := range counts {
		if c < 5 || c > 40 {
			t.Errorf("tenth %d of the interval holds %d of %d first probes (all: %v), want 5 to 40", b, c, n, counts)
		}
	}
	if FirstProbeOffset("x", 0) != 0 {
		t.Error("FirstProbeOffset with no interval is not 0")
	}
}

func TestPassiveObservationStandsInForAnInterval(t *testing.T) {
	cfg := Config{Policy: Policy{ConfirmationsPerDay: 10}}
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	s := Step(cfg, DatasetState{}, Probe{At: at, Dataset: "d", Outcome: OK}).State
	if !s.LastPassive.IsZero() || Observed(s, at.Add(time.Minute), time.Hour) {
		t.Fatalf("an active probe set LastPassive %s or counted as observed", s.LastPassive)
	}
	r := Step(cfg, s, Probe{At: at.Add(10 * time.Minute), Dataset: "d", Outcome: ProviderError, HTTPStatus: 500, Passive: true})
	s = r.State
	if !s.LastPassive.Equal(at.Add(10 * time.Minute)) {
		t.Fatalf("LastPassive = %s after a passive observation at %s", s.LastPassive, at.Add(10*time.Minute))
	}
	if s.ConfirmationsUsed != 0 {
		t.Errorf("a passive observation spent %d confirmations", s.ConfirmationsUsed)
	}
	if len(s.Streak) != 1 || !r.Confirm.Wanted() {
		t.Errorf("a failing passive observation: streak %d, confirm %+v; want a streak of 1 and a confirmation asked", len(s.Streak), r.Confirm)
	}
	for _, c := range []struct {
		now  time.Duration
		want bool
	}{{10 * time.Minute, true}, {69 * time.Minute, true}, {70 * time.Minute, false}, {3 * time.Hour, false}} {
		if got := Observed(s, at.Add(c.now), time.Hour); got != c.want {
			t.Errorf("Observed at +%s = %v, want %v", c.now, got, c.want)
		}
	}
}

// TestLateDatasetIsProbedDespiteAnIngest: a passive observation carries
// no newest period, so it never stands in for the probe of a late
// dataset — only a probe sees its data catch up (the toy provider's
// pipeline test found its caught-up Change missing).
func TestLateDatasetIsProbedDespiteAnIngest(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	s := DatasetState{LastPassive: at, Late: true, Newest: "2026-12-04"}
	if Observed(s, at.Add(time.Minute), time.Hour) {
		t.Error("a passive observation stood in for the probe of a late dataset")
	}
	s.Late = false
	if !Observed(s, at.Add(time.Minute), time.Hour) {
		t.Error("a passive observation did not stand in for the probe of a dataset on time")
	}
}
