// Package metrics defines the Prometheus metrics Sluice workers serve on
// /metrics. Labels never carry secrets: providers, scope ids, dataset ids
// and outcome classes only.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice/internal/httpserver"
)

// Metrics is one worker's set of collectors. Safe for concurrent use. A nil
// *Metrics records nothing, so callers need no checks.
type Metrics struct {
	Registry *prometheus.Registry

	Calls         *prometheus.CounterVec   // provider, scope, outcome
	LimiterWait   *prometheus.HistogramVec // scope
	AnswerLag     *prometheus.HistogramVec // scope
	SendDelay     *prometheus.HistogramVec // scope
	Bytes         *prometheus.CounterVec   // provider, kind (raw, compressed)
	Duration      *prometheus.HistogramVec // activity, provider, outcome
	BackoffFactor *prometheus.GaugeVec     // scope
	Events        *prometheus.CounterVec   // kind
	Remaining     *prometheus.GaugeVec     // provider, group
	Lineage       *prometheus.CounterVec   // outcome

	groupsMu sync.Mutex
	groups   map[string]map[string]bool // provider → groups seen
}

// MaxGroups bounds the distinct group labels of Remaining per provider,
// "other" included: groups beyond it are reported as "other", whatever a
// provider sends.
const MaxGroups = 16

// New registers Sluice's collectors and the Go runtime's on a new registry.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_provider_calls_total",
			Help: "Calls sent to providers, by provider, scope instance and outcome class (ok, no_data, rate_limited, quota_exhausted, blocked, auth_failed, bad_request, transient).",
		}, []string{"provider", "scope", "outcome"}),
		LimiterWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_limiter_wait_seconds",
			Help:    "Time a call waited for its permit from the scope's limiter, including the round trip.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"scope"}),
		AnswerLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    AnswerLagMetric,
			Help:    "Time from a request's write to the end of its round trip (its answer's headers), by scope instance: what each chained window of the process's calls pays beyond the window (docs/ratelimit.md).",
			Buckets: []float64{0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60},
		}, []string{"scope"}),
		SendDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    SendDelayMetric,
			Help:    "Time from a permit's send time to its request's write, by scope instance: the waits for the process's own earlier answers (chained grants), the caller's wake-up and the connection; 0 for a chained call written before its send time.",
			Buckets: []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2},
		}, []string{"scope"}),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_lake_bytes_total",
			Help: "Bytes written to the lake, raw (as the provider sent them) and compressed.",
		}, []string{"provider", "kind"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_activity_duration_seconds",
			Help:    "Activity durations by activity, provider and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12),
		}, []string{"activity", "provider", "outcome"}),
		BackoffFactor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_ratelimit_backoff_factor",
			Help: "Rate multiplier of a scope instance after its last penalty (1 = declared rate).",
		}, []string{"scope"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_ops_events_total",
			Help: "Operational events recorded, by kind.",
		}, []string{"kind"}),
		Remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_provider_remaining_requests",
			Help: "Requests the provider says are left in its current second (UPBIT Remaining-Req sec), by provider and group, as of the last answer.",
		}, []string{"provider", "group"}),
		Lineage: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_lineage_events_total",
			Help: "OpenLineage events by outcome: sent (to one destination), failed (every attempt failed, or the file could not be written) or dropped (the queue was full, or the worker stopping).",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.Calls, m.LimiterWait, m.AnswerLag, m.SendDelay, m.Bytes, m.Duration, m.BackoffFactor, m.Events, m.Remaining, m.Lineage,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// AnswerLagMetric is the histogram of write-to-answer times of the calls a
// worker's limiter client tracks (Metrics.Answered).
const AnswerLagMetric = "sluice_provider_answer_lag_seconds"

// Answered records the time from one tracked request's write to the end of
// its round trip.
func (m *Metrics) Answered(scope string, d time.Duration) {
	if m != nil {
		m.AnswerLag.WithLabelValues(scope).Observe(d.Seconds())
	}
}

// SendDelayMetric is the histogram of the times from a permit's send time
// to its request's write (Metrics.Sent).
const SendDelayMetric = "sluice_provider_send_delay_seconds"

// Sent records how long after its permit's send time one tracked request
// was written.
func (m *Metrics) Sent(scope string, d time.Duration) {
	if m != nil {
		m.SendDelay.WithLabelValues(scope).Observe(max(d, 0).Seconds())
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ServerLimits bound the /metrics server's connections: a scrape is a
// bodiless GET answered at once.
var ServerLimits = httpserver.Limits{
	ReadHeader:     10 * time.Second,
	Read:           10 * time.Second,
	Write:          30 * time.Second,
	Idle:           2 * time.Minute,
	MaxHeaderBytes: 16 << 10,
}

// Server returns the HTTP server for /metrics, with every timeout and the
// header size bounded (ServerLimits).
func (m *Metrics) Server() *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return httpserver.New(mux, ServerLimits)
}

// Call counts one provider call.
func (m *Metrics) Call(provider, scope, outcome string) {
	if m != nil {
		m.Calls.WithLabelValues(provider, scope, outcome).Inc()
	}
}

// Wait observes a limiter wait.
func (m *Metrics) Wait(scope string, d time.Duration) {
	if m != nil {
		m.LimiterWait.WithLabelValues(scope).Observe(d.Seconds())
	}
}

// Written counts bytes written to the lake.
func (m *Metrics) Written(provider string, raw, compressed int64) {
	if m != nil {
		m.Bytes.WithLabelValues(provider, "raw").Add(float64(raw))
		m.Bytes.WithLabelValues(provider, "compressed").Add(float64(compressed))
	}
}

// Activity observes an activity's duration.
func (m *Metrics) Activity(activity, provider, outcome string, d time.Duration) {
	if m != nil {
		m.Duration.WithLabelValues(activity, provider, outcome).Observe(d.Seconds())
	}
}

// Backoff sets a scope's backoff factor.
func (m *Metrics) Backoff(scope string, factor float64) {
	if m != nil {
		m.BackoffFactor.WithLabelValues(scope).Set(factor)
	}
}

// RemainingRequests records what a provider says is left of its window.
// The connector reports groups from a fixed list; as a second bound, at
// most MaxGroups distinct groups per provider get their own label.
func (m *Metrics) RemainingRequests(provider, group string, n int) {
	if m == nil {
		return
	}
	m.groupsMu.Lock()
	if m.groups == nil {
		m.groups = map[string]map[string]bool{}
	}
	seen := m.groups[provider]
	if seen == nil {
		seen = map[string]bool{}
		m.groups[provider] = seen
	}
	if !seen[group] && group != "other" && len(seen) >= MaxGroups-1 {
		group = "other"
	}
	seen[group] = true
	m.groupsMu.Unlock()
	m.Remaining.WithLabelValues(provider, group).Set(float64(n))
}

// Event counts an operational event.
func (m *Metrics) Event(kind string) {
	if m != nil {
		m.Events.WithLabelValues(kind).Inc()
	}
}

// LineageEvent counts a lineage event's outcome (lineage.Options.Count).
func (m *Metrics) LineageEvent(outcome string) {
	if m == nil {
		return
	}
	m.Lineage.WithLabelValues(outcome).Inc()
}
