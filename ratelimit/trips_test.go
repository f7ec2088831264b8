package ratelimit

import "testing"

// TestTripQuantiles: nearest-rank quantiles of the round trips per call,
// over merged counts; none counted is 0.
func TestTripQuantiles(t *testing.T) {
	a, b := &TripCounts{}, &TripCounts{}
	for range 97 {
		a.observe(1)
	}
	b.observe(2)
	b.observe(5)
	b.observe(40)
	all := a.Merge(b, nil)
	if all.Calls() != 100 {
		t.Fatalf("%d calls, want 100", all.Calls())
	}
	for _, c := range []struct {
		q    float64
		want int
	}{{0.5, 1}, {0.97, 1}, {0.98, 2}, {0.99, 5}, {1, 40}} {
		if got := all.Quantile(c.q); got != c.want {
			t.Errorf("q %g: %d, want %d", c.q, got, c.want)
		}
	}
	if got := (&TripCounts{}).Quantile(0.5); got != 0 {
		t.Errorf("no calls: %d, want 0", got)
	}
	if got := (*TripCounts)(nil).Quantile(0.99); got != 0 {
		t.Errorf("nil: %d, want 0", got)
	}
}
