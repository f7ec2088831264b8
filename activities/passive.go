package activities

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/watch"
)

// passive is what an ingest saw of its dataset's first answer, recorded in
// the watch store as a passive observation (watch.Probe.Passive): the
// outcome, the latency of the first call (from when it left the gate) and
// the first page's shape.
type passive struct {
	trace probeTrace // the gate marks when each call left
	at    time.Time  // when the ingest started asking
	start time.Time  // the same, on the monotonic clock

	answered    bool
	sent        time.Time // when the first answered call left
	latency     time.Duration
	status      int
	contentType string
	body        bytes.Buffer // the first page's first MaxProbeBytes
	truncated   bool
}

// firstAnswer notes the first answer's status and latency and returns its
// body, teeing its first connector.MaxProbeBytes into the observation.
func (o *passive) firstAnswer(resp *connector.Response, body io.Reader) io.Reader {
	if o == nil || o.answered {
		return body
	}
	o.answered = true
	o.status, o.contentType = resp.Status, resp.ContentType
	if o.sent = o.trace.sentAt(); !o.sent.IsZero() {
		o.latency = time.Since(o.sent)
	}
	return io.TeeReader(body, &capped{buf: &o.body, max: connector.MaxProbeBytes, over: &o.truncated})
}

// capped keeps the first max bytes written to it, never failing a write.
type capped struct {
	buf  *bytes.Buffer
	max  int
	over *bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		*c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// observing returns the passive observation an ingest of ds records, or nil
// when there is no watch store or the dataset is not probed. Only the
// first attempt of an ingest records a failure: a retry's failure is the
// same failure, and the watch's confirmation probes, not the ingest's
// retries, confirm it; any attempt that succeeds records its answer.
func (a *Activities) observing(ds *registry.Dataset) *passive {
	if a.cfg.Watch == nil || ds.Probe == nil || ds.Probe.IntervalMinutes <= 0 {
		return nil
	}
	return &passive{at: a.clock(), start: time.Now()}
}

// observe records an ingest's passive observation: err is the ingest's
// failure (nil: it succeeded), noData that the provider had no rows. An
// outcome of our own making (our limiter, our quota) or the provider's
// rate limit tells nothing about the dataset and is not recorded. A store
// that fails is logged; the ingest never fails for it.
func (a *Activities) observe(ctx context.Context, o *passive, ds *registry.Dataset, attempt int32, err error, noData bool) {
	if o == nil || ctx.Err() != nil {
		return
	}
	sent := o.sent
	if sent.IsZero() {
		sent = o.trace.sentAt()
	}
	if sent.IsZero() {
		return // no call left: nothing was observed
	}
	if _, ok := connector.ClassOf(err); err != nil && !ok {
		return // our side failed (the lake, a key), not the provider
	}
	out, status := watch.ClassifyError(err)
	if err == nil && noData {
		out = watch.NoData
	}
	if out.Operational() || (!out.Good() && attempt > 1) {
		return
	}
	p := watch.Probe{At: o.at.Add(sent.Sub(o.start)), Dataset: ds.ID, Provider: ds.Provider, Outcome: out, HTTPStatus: status, Latency: o.latency, Passive: true}
	if o.answered && status == 0 {
		p.HTTPStatus = o.status
	}
	if err != nil {
		p.Message = connector.Redact(err.Error())
	} else if o.answered && !o.truncated && o.status >= 200 && o.status <= 299 {
		if sh, ferr := watch.FingerprintBody(o.contentType, o.body.Bytes()); ferr == nil {
			p.Shape = sh
		}
	}
	cfg, cerr := watch.ConfigFor(a.cfg.Registry, ds)
	if cerr != nil {
		a.log.Warn("recording an ingest as the watch's observation", "dataset", ds.ID, "err", cerr)
		return
	}
	r, rerr := a.record(ctx, p, cfg.Scaled(a.cfg.RateScale))
	if rerr != nil {
		a.log.Warn("recording an ingest as the watch's observation", "dataset", ds.ID, "err", rerr)
		return
	}
	for _, c := range r.Changes {
		a.log.Info("watch change", "dataset", c.Dataset, "kind", c.Kind, "from", c.From, "to", c.To, "summary", c.Summary)
	}
	// An ingest's answer can be the probe that confirms a change (the
	// second answer of a recovery): it is told like a probe's.
	a.notifyChanges(ctx, a.watchChanges(ds.Provider, r.Changes))
}
