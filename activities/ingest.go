package activities

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/lineage"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// IngestInput names one dataset and the logical dates to fetch.
type IngestInput struct {
	Dataset string `json:"dataset"`
	From    string `json:"from"` // YYYY-MM-DD, the logical date
	To      string `json:"to"`   // YYYY-MM-DD; empty or equal to From for one day
	// MaxPages lowers the registry's defaults.max_pages_per_call for this
	// ingest (a planner that knows how many pages a range needs); 0 or
	// more than the registry's bound means the registry's bound.
	MaxPages int `json:"max_pages,omitempty"`
	// LookBack makes this a daily run for the logical date From (To empty
	// or From): the object is From's daily object, under the key of From
	// alone, and the provider is asked for the dataset's look-back window
	// ending on From (registry.Dataset.DailyWindow) — the newest published
	// period and the revisions of those before it. Without it the provider
	// is asked for exactly From..To.
	LookBack bool `json:"look_back,omitempty"`
	// Priority is the class this ingest's calls wait in at the scope
	// limiter: empty for a daily run, "backfill" for a backfill's chunk.
	Priority permit.Priority `json:"priority,omitempty"`
}

// IngestResult is the metadata of one ingested object. No payload.
type IngestResult struct {
	Dataset         string `json:"dataset"`
	Provider        string `json:"provider"`
	Key             string `json:"key,omitempty"`
	RawBytes        int64  `json:"raw_bytes"`
	CompressedBytes int64  `json:"compressed_bytes"`
	SHA256          string `json:"sha256,omitempty"` // of the raw bytes of every page back to back
	// Pages is how many provider pages (calls) the object holds; 0 with
	// NoData.
	Pages int `json:"pages"`
	// Rows is how many records the pages held, counted as they streamed
	// into the lake (wire.Counter); absent when they could not be counted
	// for sure, 0 with NoData.
	Rows *int64 `json:"rows,omitempty"`
	// MorePages reports that the provider announced further pages the
	// dataset declines (request.paging: first_page).
	MorePages bool `json:"more_pages,omitempty"`
	// WindowFrom and WindowTo (YYYY-MM-DD) are the dates the provider was
	// asked for, as the object's metadata record them: a daily run's
	// look-back window, or the range asked; empty for a request that names
	// no dates.
	WindowFrom string        `json:"window_from,omitempty"`
	WindowTo   string        `json:"window_to,omitempty"`
	Skipped    bool          `json:"skipped,omitempty"` // unchanged: the stored object already held these bytes
	NoData     bool          `json:"no_data,omitempty"` // the provider answered with no rows: nothing stored
	Duration   time.Duration `json:"duration"`          // this attempt
	Attempt    int32         `json:"attempt"`           // 1 on the first try
	SourceURL  string        `json:"source_url,omitempty"`
}

// Error types of the application errors the activities return: the
// connector class names (auth_failed, bad_request, …) and these.
const (
	ErrTypeUnknownDataset = "unknown_dataset"
	ErrTypeBadInput       = "bad_input"
)

func parseDates(in IngestInput) (time.Time, time.Time, error) {
	from, err := time.Parse(time.DateOnly, in.From)
	if err != nil {
		return time.Time{}, time.Time{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("ingest input: from %q is not a date (want YYYY-MM-DD)", in.From), ErrTypeBadInput, nil)
	}
	to := from
	if in.To != "" {
		if to, err = time.Parse(time.DateOnly, in.To); err != nil || to.Before(from) {
			return time.Time{}, time.Time{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("ingest input: to %q is not a date on or after from %s", in.To, in.From), ErrTypeBadInput, nil)
		}
	}
	return from, to, nil
}

// Ingest fetches one dataset for a logical date (or range), following
// every page the provider announces (each page its own call through the
// limiter), and streams the provider's raw bytes through zstd into one
// lake object under the deterministic key (see fetchPages), returning
// metadata only. Failures are classified for Temporal's
// retry policy: auth_failed and bad_request are non-retryable;
// rate_limited, blocked and quota_exhausted ask for the provider's wait
// (NextRetryDelay); transient failures back off exponentially with jitter.
func (a *Activities) Ingest(ctx context.Context, in IngestInput) (IngestResult, error) {
	start := time.Now()
	ds := a.cfg.Registry.Dataset(in.Dataset)
	if ds == nil {
		return IngestResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("dataset %q is not in the registry", in.Dataset), ErrTypeUnknownDataset, nil)
	}
	res := IngestResult{Dataset: ds.ID, Provider: ds.Provider, Attempt: attempt(ctx)}
	from, to, err := parseDates(in)
	if err != nil {
		return res, err
	}
	conn := a.connectors[ds.Provider]
	if conn == nil {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no connector for provider %q of dataset %s", ds.Provider, ds.ID), ErrTypeUnknownDataset, nil)
	}
	outcome := "ok"
	defer func() { a.cfg.Metrics.Activity("ingest", ds.Provider, outcome, time.Since(start)) }()

	maxPages := a.cfg.Registry.Defaults.MaxPagesPerCall
	if maxPages <= 0 {
		maxPages = registry.DefaultMaxPagesPerCall
	}
	if in.MaxPages > 0 && in.MaxPages < maxPages {
		maxPages = in.MaxPages
	}
	plan, err := planFetch(a.cfg.Registry, ds, in, from, to)
	if err != nil {
		return res, err
	}
	if !plan.window.IsZero() {
		res.WindowFrom, res.WindowTo = plan.window.From.Format(time.DateOnly), plan.window.To.Format(time.DateOnly)
	}
	run := a.lineageRun(ctx, ds, in, plan, conn)
	a.cfg.Lineage.Emit(run.StartEvent(time.Now()))
	// The ingest's own answer is the watch's observation of the dataset
	// (a passive probe): the watch probes it no sooner than an interval
	// after (watch.Observed).
	plan.observe = a.observing(ds)
	fctx := ratelimit.Track(ctx)
	if plan.observe != nil {
		fctx = context.WithValue(fctx, passiveKey{}, plan.observe)
	}
	got, err := a.fetchPages(fctx, conn, ds, plan, maxPages)
	a.observe(ctx, plan.observe, ds, res.Attempt, err, got.noData)
	res.Pages, res.MorePages, res.SourceURL, res.Rows = got.put.Pages, got.more, got.sourceURL, got.rows
	if err != nil {
		var ke keyError
		if errors.As(err, &ke) {
			outcome = "bad_request"
			err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("building lake key: %v", ke.err), ErrTypeBadInput, nil)
		} else {
			outcome = outcomeOf(err)
			err = a.temporalError(ctx, err)
		}
		if ctx.Err() != nil {
			a.cfg.Lineage.Emit(run.AbortEvent(time.Now(), err.Error()))
		} else {
			a.cfg.Lineage.Emit(run.FailEvent(time.Now(), err.Error()))
		}
		return res, err
	}
	if got.noData {
		outcome = "no_data"
		res.NoData, res.Duration = true, time.Since(start)
		a.cfg.Lineage.Emit(run.CompleteEvent(time.Now(), lineage.Result{Pages: res.Pages, NoData: true, Rows: res.Rows}))
		return res, nil
	}
	put := got.put
	a.cfg.Lineage.Emit(run.CompleteEvent(time.Now(), lineage.Result{Object: put.Key, RawBytes: put.RawSize, CompressedBytes: put.CompressedSize,
		Pages: put.Pages, SHA256: put.RawSHA256, Skipped: put.Skipped, Rows: res.Rows}))
	a.cfg.Metrics.Written(ds.Provider, put.RawSize, put.CompressedSize)
	res.Key, res.RawBytes, res.CompressedBytes, res.SHA256, res.Skipped = put.Key, put.RawSize, put.CompressedSize, put.RawSHA256, put.Skipped
	res.Duration = time.Since(start)
	a.log.Debug("ingested", "dataset", ds.ID, "key", put.Key, "pages", put.Pages, "raw", put.RawSize, "compressed", put.CompressedSize, "skipped", put.Skipped)
	if ds.Ingest != nil && in.LookBack && put.Pages > ds.Ingest.CallsPerRun {
		a.log.Warn("a daily run took more calls than the budget gate counts for it (ingest.calls_per_run, or what its look-back needs)",
			"dataset", ds.ID, "pages", put.Pages, "calls_per_run", ds.Ingest.CallsPerRun, "window", plan.window.String())
	}
	return res, nil
}

// planFetch settles what an Ingest asks for: a daily run (LookBack) asks
// the dataset's look-back window ending on its date and files it under
// that date; any other ingest asks exactly from..to. A dataset that asks
// one period a call makes one request per period.
func planFetch(reg *registry.Registry, ds *registry.Dataset, in IngestInput, from, to time.Time) (fetchPlan, error) {
	plan := fetchPlan{keyFrom: from, keyTo: to, window: registry.Dates{From: from, To: to}, priority: in.Priority}
	if in.LookBack {
		if !from.Equal(to) {
			return plan, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("ingest input: a daily run (look_back) is for one logical date, not %s..%s", in.From, in.To), ErrTypeBadInput, nil)
		}
		plan.window = reg.DailyWindow(ds, from)
	} else if ds.Wire != nil && ds.Wire.Span == wire.SpanNone {
		plan.window = registry.Dates{} // the request names no dates
	}
	plan.requests = ds.Requests(plan.window)
	return plan, nil
}

func outcomeOf(err error) string {
	if c, ok := connector.ClassOf(err); ok {
		return c.String()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "cancelled"
	}
	return "error"
}

func attempt(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}

// temporalError maps a classified failure onto Temporal's retry policy.
// The application error carries the failure's text, redacted once more of
// anything shaped like a credential (connector.Redact), and no Cause:
// Temporal's failure converter records every error a cause unwraps to in
// the workflow history, so only text Sluice has redacted goes there. The
// retry decision rests on the type, NonRetryable and NextRetryDelay alone.
func (a *Activities) temporalError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	class, ok := connector.ClassOf(err)
	if !ok {
		class = connector.Transient
	}
	var ce *connector.Error
	errors.As(err, &ce)
	now := time.Now()
	msg := connector.Redact(err.Error())
	switch class {
	case connector.AuthFailed, connector.BadRequest:
		return temporal.NewNonRetryableApplicationError(msg, class.String(), nil)
	case connector.RateLimited, connector.Blocked:
		delay := backoff(attempt(ctx), time.Second, time.Minute)
		if ce != nil {
			if w := ce.Wait(now); w > 0 {
				delay = w
			}
		}
		return temporal.NewApplicationErrorWithOptions(msg, class.String(), temporal.ApplicationErrorOptions{NextRetryDelay: delay})
	case connector.QuotaExhausted:
		// Fail at once, naming the reset: the workflow decides whether to
		// wait for it (ratelimit.QuotaWaiter, a durable timer), so no
		// activity sleeps through a timeout and retries into tomorrow's
		// quota.
		if ce == nil || ce.ResetAt.IsZero() {
			return temporal.NewNonRetryableApplicationError(msg, class.String(), nil)
		}
		maxWait := a.cfg.Gate.MaxQuotaWait()
		msg = fmt.Sprintf("%s (daily quota resets at %s; a dataset waits for it up to --max-quota-wait %s)", msg, ce.ResetAt.Format(time.RFC3339), maxWait)
		return temporal.NewNonRetryableApplicationError(msg, class.String(), nil, ratelimit.QuotaWait{ResetAt: ce.ResetAt, MaxWait: maxWait})
	}
	// Transient: exponential backoff with equal jitter, and never sooner
	// than the error asks (an unconfirmed ambiguous answer waits at least
	// connector.ConfirmWait).
	delay := backoff(attempt(ctx), time.Second, 2*time.Minute)
	if ce != nil {
		delay = max(delay, ce.Wait(now))
	}
	return temporal.NewApplicationErrorWithOptions(msg, class.String(), temporal.ApplicationErrorOptions{NextRetryDelay: delay})
}

// backoff is base·2^(attempt-1), capped, with equal jitter: half fixed, half
// random, so retries of many activities never fire together.
func backoff(attempt int32, base, limit time.Duration) time.Duration {
	d := base
	for i := int32(1); i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}
