package watch

import (
	"hash/fnv"
	"time"
)

// Observed reports whether a passive observation (an ingest's own answer,
// Probe.Passive) stands in for the probe due at now: one was stepped less
// than an interval before now. A probe right after a successful (or
// failed) fetch of the same dataset would tell nothing new, so the
// scheduled probe is not sent; confirmation probes are never replaced.
// A late dataset is always probed: a passive observation carries no
// newest period, so only a probe sees the data catch up.
func Observed(s DatasetState, now time.Time, interval time.Duration) bool {
	if s.LastPassive.IsZero() || interval <= 0 || s.Late {
		return false
	}
	return now.Sub(s.LastPassive) < interval
}

// FirstProbeOffset is how long after its watch starts a dataset never
// probed is probed first: a point of [0, interval) fixed by the dataset's
// id (FNV-1a), so that the first probes of many datasets started together
// spread over the interval instead of all landing at the start (with the
// daily batch), and a dataset's watch started again waits the same.
func FirstProbeOffset(dataset string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(dataset))
	return time.Duration(h.Sum64() % uint64(interval))
}
