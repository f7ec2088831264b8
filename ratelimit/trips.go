package ratelimit

import (
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/metrics"
)

// TripsMetric is the histogram of limiter round trips per call a gate
// exports on its metrics' registry (TripCounts).
const TripsMetric = "sluice_limiter_round_trips_per_call"

// tripBuckets are the histogram's bounds: one per count up to 16, then
// coarser (a call takes one round trip per scope when nothing contends).
var tripBuckets = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 32, 48, 64, 96, 128, 256}

// TripCounts counts, per data call the gate let through or refused, how
// many round trips to the limiters its permits took: the acquire updates
// its asks went out in (Client.Acquire batches a process's callers of a
// scope into one update; a caller left for the next update — the answer
// came later than the tolerance, or held it back for the horizon — goes
// out again). One per scope when nothing contends; more when a scope had
// no slot within the window of the others and the set was held again
// (Gate.hold), or the set expired before use. Safe for concurrent use.
type TripCounts struct {
	mu     sync.Mutex
	counts []int64 // counts[n] = calls that took n round trips
	hist   prometheus.Histogram
}

// newTripCounts returns counts also exported as TripsMetric on m's registry
// (m nil: kept only in the process).
func newTripCounts(m *metrics.Metrics) *TripCounts {
	a := &TripCounts{}
	if m == nil || m.Registry == nil {
		return a
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    TripsMetric,
		Help:    "Round trips to the limiters (acquire updates) a provider call's permits took in the rate-limit gate: one per scope when nothing contends.",
		Buckets: tripBuckets,
	})
	err := m.Registry.Register(h)
	var dup prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		a.hist = h
	case errors.As(err, &dup):
		// Another gate on the same metrics: both count into it.
		a.hist, _ = dup.ExistingCollector.(prometheus.Histogram)
	}
	return a
}

// Trips returns the limiter round trips per call the gate counted.
func (g *Gate) Trips() *TripCounts { return g.trips }

// countTrips counts one more acquire update for each waiter of a batch
// that counts them (AcquireOptions.trips).
func countTrips(batch []*waiter) {
	for _, w := range batch {
		if w.opts.trips != nil {
			w.opts.trips.Add(1)
		}
	}
}

// observe records one call that took n round trips.
func (a *TripCounts) observe(n int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if n >= len(a.counts) {
		a.counts = append(a.counts, make([]int64, n+1-len(a.counts))...)
	}
	a.counts[n]++
	a.mu.Unlock()
	if a.hist != nil {
		a.hist.Observe(float64(n))
	}
}

// Calls is how many calls were counted.
func (a *TripCounts) Calls() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, c := range a.counts {
		n += c
	}
	return n
}

// Quantile is the q-quantile (0 < q ≤ 1) of the round trips per call:
// the fewest that at least q of the calls took no more than (nearest
// rank); 0 with no calls.
func (a *TripCounts) Quantile(q float64) int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	counts := slices.Clone(a.counts)
	a.mu.Unlock()
	return quantileOf(counts, q)
}

// Merge returns the counts of a and others together.
func (a *TripCounts) Merge(others ...*TripCounts) *TripCounts {
	out := &TripCounts{}
	for _, o := range append([]*TripCounts{a}, others...) {
		if o == nil {
			continue
		}
		o.mu.Lock()
		for n, c := range o.counts {
			if n >= len(out.counts) {
				out.counts = append(out.counts, make([]int64, n+1-len(out.counts))...)
			}
			out.counts[n] += c
		}
		o.mu.Unlock()
	}
	return out
}

// quantileOf is the nearest-rank q-quantile of a histogram whose
// counts[n] calls took n round trips.
func quantileOf(counts []int64, q float64) int {
	var total int64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for n, c := range counts {
		if seen += c; seen >= max(rank, 1) {
			return n
		}
	}
	return len(counts) - 1
}
