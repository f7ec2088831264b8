package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/internal/heartbeat"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/wire"
)

// ErrTypeNotWatched is the error type of a probe or watch plan for a
// dataset the worker's registry does not probe (no probe section): the
// watch workflow of that dataset ends.
const ErrTypeNotWatched = "not_watched"

// ErrTypeStore is the error type of a probe the watch store could not
// record.
const ErrTypeStore = "store_failed"

// How long a probe may take: its wait for permits (probeWait) and then
// the provider's answer.
const (
	maxProbeWait       = 10 * time.Minute
	probeAnswerTimeout = 2 * time.Minute
	// maxResultMessage bounds the message a probe result carries into
	// the watch workflow's history (the store keeps watch.MaxMessageBytes).
	maxResultMessage = 300
)

// ProbeWait is how long a probe of a dataset probed every interval may
// wait for its scopes' permits before it counts as held back by our own
// limiter (throttled): half the interval, at most 10 minutes, at least a
// millisecond.
func ProbeWait(interval time.Duration) time.Duration {
	return min(max(interval/2, time.Millisecond), maxProbeWait)
}

// ProbeTimeout bounds one probe activity: the permit wait, the answer and
// the store's write.
func ProbeTimeout(interval time.Duration) time.Duration {
	return ProbeWait(interval) + probeAnswerTimeout + 30*time.Second
}

// ProbeInput names the dataset to probe.
type ProbeInput struct {
	Dataset string `json:"dataset"`
	// Confirmation marks a probe sent to confirm a failure (or a recovery)
	// that an earlier probe showed: it counts against the day's
	// confirmation budget.
	Confirmation bool `json:"confirmation,omitempty"`
}

// ProbeResult is what one probe saw and what it did to its dataset's
// state: small, for the watch workflow's history — never the answer.
type ProbeResult struct {
	Dataset    string        `json:"dataset"`
	Provider   string        `json:"provider"`
	At         time.Time     `json:"at"` // when the probe was sent (or held back)
	Outcome    watch.Outcome `json:"outcome"`
	HTTPStatus int           `json:"http_status,omitempty"`
	Latency    time.Duration `json:"latency"`
	// Newest is the newest period the answer holds, when the connector
	// says its answer holds the newest rows.
	Newest  string `json:"newest,omitempty"`
	Message string `json:"message,omitempty"` // redacted, shortened
	// State and Since are the dataset's state after the probe (empty
	// without a watch store).
	State watch.State `json:"state,omitempty"`
	Since time.Time   `json:"since"`
	// Confirm says whether and when to send a confirmation probe.
	Confirm watch.Confirm `json:"confirm"`
	// Changes counts the Changes the probe recorded.
	Changes int `json:"changes,omitempty"`
	// Interval is how often the dataset is probed under this worker's
	// registry and rate scale.
	Interval time.Duration `json:"interval"`
	// Recorded reports that the watch store recorded the probe (false
	// without a store, or for a probe it had recorded already).
	Recorded bool `json:"recorded"`
	// Passive reports that no probe was sent: an ingest of the dataset
	// answered less than an interval before (watch.Observed), and the
	// result is that observation's, At its time.
	Passive bool `json:"passive,omitempty"`
}

// WatchPlanInput names the dataset a watch workflow starts watching.
type WatchPlanInput struct {
	Dataset string `json:"dataset"`
}

// WatchPlan is what a watch workflow needs to start: the interval, and
// when the store last recorded a probe of the dataset, so that a watch
// restarted (terminated, reset, started again) never probes sooner than
// the interval after the last one.
type WatchPlan struct {
	Dataset   string        `json:"dataset"`
	Provider  string        `json:"provider"`
	Interval  time.Duration `json:"interval"`
	LastProbe time.Time     `json:"last_probe"` // zero: never probed, or no store
}

// watched returns the dataset, or the non-retryable error of a dataset
// the registry does not probe.
func (a *Activities) watched(id string) (*registry.Dataset, error) {
	ds := a.cfg.Registry.Dataset(id)
	if ds == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("dataset %q is not in the registry", id), ErrTypeNotWatched, nil)
	}
	if ds.Probe == nil || ds.Probe.IntervalMinutes <= 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("dataset %s has no probe section in the worker's registry", id), ErrTypeNotWatched, nil)
	}
	return ds, nil
}

// WatchPlan returns a dataset's probe interval and its last recorded
// probe.
func (a *Activities) WatchPlan(ctx context.Context, in WatchPlanInput) (WatchPlan, error) {
	ds, err := a.watched(in.Dataset)
	if err != nil {
		return WatchPlan{}, err
	}
	plan := WatchPlan{Dataset: ds.ID, Provider: ds.Provider, Interval: watch.Interval(ds, a.cfg.RateScale)}
	if a.cfg.Watch != nil {
		states, err := a.cfg.Watch.States(ctx, a.clock(), ds.ID)
		if err != nil {
			return plan, fmt.Errorf("reading the watch state of %s: %w", ds.ID, err)
		}
		if len(states) == 1 {
			plan.LastProbe = states[0].LastProbe
		}
	}
	return plan, nil
}

// Probe sends the cheapest request that proves the dataset answers (the
// connector's Probe), through the scopes' limiters like every other call
// but marked as a probe, and records it in the watch store: the outcome
// class (watch.ClassifyError; a probe our limiter or quota held back, or
// one that waited longer than ProbeWait for its permits, is throttled),
// the HTTP status, the latency (from when the request left, not counting
// the permit wait), the answer's shape and its newest period. The store
// steps the dataset's state and says whether to confirm; the result
// carries that back, never the answer. A probe is never retried by
// Temporal: the watch workflow decides what comes next.
func (a *Activities) Probe(ctx context.Context, in ProbeInput) (ProbeResult, error) {
	ds, err := a.watched(in.Dataset)
	if err != nil {
		return ProbeResult{Dataset: in.Dataset}, err
	}
	interval := watch.Interval(ds, a.cfg.RateScale)
	res := ProbeResult{Dataset: ds.ID, Provider: ds.Provider, Interval: interval}
	conn := a.connectors[ds.Provider]
	if conn == nil {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("no connector for provider %q", ds.Provider), ErrTypeUnknownDataset, nil)
	}
	cfg, err := watch.ConfigFor(a.cfg.Registry, ds)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotWatched, nil)
	}
	cfg = cfg.Scaled(a.cfg.RateScale)
	if !in.Confirmation && a.cfg.Watch != nil {
		if r, ok, err := a.observedAlready(ctx, res, cfg); err != nil || ok {
			return r, err
		}
	}
	// A worker that dies mid-probe is noticed within the heartbeat timeout.
	defer heartbeat.Every(ctx, 5*time.Second)()

	p := a.probe(ctx, conn, ds, ProbeWait(interval))
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	p.Confirmation = in.Confirmation
	res.At, res.Outcome, res.HTTPStatus, res.Latency, res.Newest = p.At, p.Outcome, p.HTTPStatus, p.Latency, p.Newest
	res.Message = clipMessage(p.Message)
	a.cfg.Metrics.Activity("probe", ds.Provider, string(p.Outcome), p.Latency)
	if a.cfg.Watch == nil {
		return res, nil
	}
	r, err := a.record(ctx, p, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		a.log.Error("recording a probe", "dataset", ds.ID, "err", err)
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("recording the probe of %s: %v", ds.ID, err), ErrTypeStore, nil)
	}
	res.State, res.Since, res.Confirm, res.Changes, res.Recorded = r.State.State, r.State.Since, r.Confirm, len(r.Changes), !r.Duplicate
	for _, c := range r.Changes {
		a.log.Info("watch change", "dataset", c.Dataset, "kind", c.Kind, "from", c.From, "to", c.To, "summary", c.Summary)
	}
	a.notifyChanges(ctx, a.watchChanges(ds.Provider, r.Changes))
	return res, nil
}

// observedAlready returns the result of a scheduled probe that an ingest's
// passive observation stands in for (watch.Observed): nothing is sent nor
// recorded — the store stepped that observation once, when the ingest
// recorded it — and the result carries the dataset's state and whether
// to confirm it (watch.NextConfirm), so that a failing ingest gets its
// confirmation probes as a failing probe would.
func (a *Activities) observedAlready(ctx context.Context, res ProbeResult, cfg watch.Config) (ProbeResult, bool, error) {
	now := a.clock()
	states, err := a.cfg.Watch.States(ctx, now, res.Dataset)
	if err != nil {
		if ctx.Err() != nil {
			return res, false, ctx.Err()
		}
		a.log.Warn("reading the watch state before a probe", "dataset", res.Dataset, "err", err)
		return res, false, nil // probe as if no ingest had answered
	}
	if len(states) != 1 || !watch.Observed(states[0], now, res.Interval) {
		return res, false, nil
	}
	st := states[0]
	res.At, res.Outcome, res.Passive = st.LastPassive, st.LastOutcome, true
	res.State, res.Since, res.Confirm = st.State, st.Since, watch.NextConfirm(cfg, st)
	a.cfg.Metrics.Activity("probe", res.Provider, "passive", 0)
	return res, true, nil
}

// probe sends one probe and builds its record (without Confirmation).
func (a *Activities) probe(ctx context.Context, conn connector.Connector, ds *registry.Dataset, wait time.Duration) watch.Probe {
	tr := &probeTrace{wait: wait}
	pctx, cancel := context.WithTimeout(context.WithValue(ratelimit.Track(ctx), probeTraceKey{}, tr), wait+probeAnswerTimeout)
	defer cancel()
	at, start := a.clock(), time.Now()
	ans, err := conn.Probe(pctx, ds)
	end := time.Now()
	p := watch.Probe{At: at, Dataset: ds.ID, Provider: ds.Provider}
	p.Outcome, p.HTTPStatus = watch.ClassifyError(err)
	if sent := tr.sentAt(); !sent.IsZero() && p.Outcome != watch.Throttled {
		p.At, p.Latency = at.Add(sent.Sub(start)), end.Sub(sent)
	}
	if err != nil {
		p.Message = err.Error()
		return p
	}
	p.HTTPStatus = ans.Status
	// Only an answer its connector classified a success is fingerprinted
	// (an error came back above): its status a 2xx, whole, and not an
	// HTML page (watch.FingerprintBody refuses one) — an error body's
	// shape must never stand for the dataset's.
	if !ans.Truncated && ans.Status >= 200 && ans.Status <= 299 {
		if sh, ferr := watch.FingerprintBody(ans.ContentType, ans.Body); ferr == nil {
			p.Shape = sh
		} else {
			a.log.Warn("fingerprinting a probe's answer", "dataset", ds.ID, "err", ferr)
		}
	}
	if ans.Newest && ds.Wire != nil {
		rows, xerr := wire.Extract(ans.Body, ds.Wire.Rows)
		if xerr != nil {
			a.log.Warn("reading a probe's rows", "dataset", ds.ID, "err", xerr)
		} else if r, ok := wire.Newest(rows); ok {
			p.Newest = r.Period
		}
	}
	return p
}

// record records a probe, trying a busy or unreachable store three times.
func (a *Activities) record(ctx context.Context, p watch.Probe, cfg watch.Config) (watch.Result, error) {
	var err error
	for attempt := range 3 {
		var r watch.Result
		if r, err = a.cfg.Watch.Observe(ctx, p, cfg); err == nil {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return watch.Result{}, errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(500<<attempt) * time.Millisecond):
		}
	}
	return watch.Result{}, err
}

// clock is the watch's clock: when probes are sent.
func (a *Activities) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func clipMessage(s string) string {
	if len(s) <= maxResultMessage {
		return s
	}
	cut := maxResultMessage
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// probeTrace is what the gate tells a probe: when its call left.
type probeTrace struct {
	wait time.Duration // how long the gate may wait for permits

	mu   sync.Mutex
	sent time.Time
}

type probeTraceKey struct{}

// passiveKey carries an ingest's *passive: the gate marks when its data
// calls leave.
type passiveKey struct{}

func (t *probeTrace) markSent(at time.Time) {
	t.mu.Lock()
	t.sent = at
	t.mu.Unlock()
}

func (t *probeTrace) sentAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent
}

// probeLimiter wraps the rate-limit gate for probes (permit.Call.Probe):
// a probe's call is of permit.PriorityProbe (it waits behind daily calls
// at the scope limiter) and waits for its permits at most the ProbeWait
// its activity set, and any failure of the gate — our limiter, our daily
// quota, a wait too long — is marked watch.NotSent, so that the probe is
// recorded as throttled and never as the provider's outage. Every other
// call passes through unchanged (an ingest's data call marks when it left,
// for its passive observation), and every outcome goes to the gate's
// Observe. A nil gate lets every call through.
type probeLimiter struct{ gate permit.Limiter }

// Wait is the gate's Wait, bounded and marked for probes.
func (l probeLimiter) Wait(ctx context.Context, call permit.Call) (permit.Permit, error) {
	if !call.Probe || call.Kind != permit.CallData {
		var p permit.Permit
		var err error
		if l.gate != nil {
			p, err = l.gate.Wait(ctx, call)
		}
		if o, _ := ctx.Value(passiveKey{}).(*passive); err == nil && o != nil && call.Kind == permit.CallData {
			o.trace.markSent(time.Now())
		}
		return p, err
	}
	// A probe waits behind daily calls at the scope limiter.
	call.Priority = permit.PriorityProbe
	tr, _ := ctx.Value(probeTraceKey{}).(*probeTrace)
	var p permit.Permit
	if l.gate != nil {
		gctx := ctx
		if tr != nil && tr.wait > 0 {
			var cancel context.CancelFunc
			gctx, cancel = context.WithTimeout(ctx, tr.wait)
			defer cancel()
		}
		var err error
		if p, err = l.gate.Wait(gctx, call); err != nil {
			if ctx.Err() != nil {
				return p, err // the probe itself was cancelled
			}
			return p, watch.NotSent(err)
		}
	}
	if tr != nil {
		tr.markSent(time.Now())
	}
	return p, nil
}

// Observe is the gate's Observe.
func (l probeLimiter) Observe(ctx context.Context, o permit.Observation) {
	if l.gate != nil {
		l.gate.Observe(ctx, o)
	}
}
