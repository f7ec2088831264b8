package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/ratelimit"
)

// DailyIngestName is the registered name of the daily ingest workflow.
const DailyIngestName = "DailyIngest"

// ProgressQuery returns a running batch's Progress.
const ProgressQuery = "progress"

// DailyWorkflowID is the workflow id of a date's batch: a second start for
// the same date attaches to the running batch instead of running it twice.
func DailyWorkflowID(date string) string { return "daily-" + date }

// DailyIngestInput selects the logical date and, optionally, a subset.
type DailyIngestInput struct {
	// Date is the logical date of the data, YYYY-MM-DD; empty on a run a
	// schedule starts (Schedule), which finds its own.
	Date      string   `json:"date,omitempty"`
	Providers []string `json:"providers,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
	// Schedule is set by the Temporal Schedules Sluice syncs from the
	// registry (package schedules): the run's logical date is then
	// LogicalDate of its nominal time — the TemporalScheduledStartTime
	// search attribute the schedule gives every run it starts, catch-ups
	// and backfills included — in the schedule's timezone, never the
	// clock when the run happens to start. Date must be empty.
	Schedule *ScheduleRun `json:"schedule,omitempty"`
}

// ScheduleRun names the schedule that starts a run and the calendar of
// its logical dates.
type ScheduleRun struct {
	ID       string `json:"id"`       // the schedule's id, for messages
	Timezone string `json:"timezone"` // IANA name: the provider's timezone
}

// ScheduledStartTime is the search attribute a Temporal Schedule sets on
// every run it starts: the run's nominal time (before jitter).
var ScheduledStartTime = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// LogicalDate is the logical date of a scheduled run with nominal time
// nominal: the day before the nominal time's date in loc, the provider's
// calendar. A run at 09:00 KST on 2026-12-01 ingests 2026-11-30, as `make
// run` ingests yesterday, and a backfill or catch-up of that nominal time
// ingests the same date under the same keys as `sluice ingest --date
// 2026-11-30`.
func LogicalDate(nominal time.Time, loc *time.Location) string {
	y, m, d := nominal.In(loc).Date()
	return time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// Statuses of a dataset in a batch.
const (
	StatusOK     = "ok"
	StatusNoData = "no_data"
	StatusFailed = "failed"
)

// DatasetResult is one dataset's outcome: metadata only.
type DatasetResult struct {
	Dataset         string `json:"dataset"`
	Provider        string `json:"provider"`
	Status          string `json:"status"`
	Key             string `json:"key,omitempty"`
	RawBytes        int64  `json:"raw_bytes,omitempty"`
	CompressedBytes int64  `json:"compressed_bytes,omitempty"`
	SHA256          string `json:"sha256,omitempty"`
	Pages           int    `json:"pages,omitempty"` // provider pages (calls) the object holds
	// WindowFrom and WindowTo are the dates the provider was asked for
	// (the dataset's look-back window), as the object records them.
	WindowFrom string        `json:"window_from,omitempty"`
	WindowTo   string        `json:"window_to,omitempty"`
	Skipped    bool          `json:"skipped,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
	Attempts   int32         `json:"attempts,omitempty"`
	// Revisions counts the revision Changes the object's comparison with
	// the dataset's previous object recorded (activities.Revisions).
	Revisions int       `json:"revisions,omitempty"`
	Finished  time.Time `json:"finished"` // when the workflow saw it complete
	ErrorType string    `json:"error_type,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// record fills r with an Ingest activity's outcome (out, when err is
// nil) and counts it as succeeded, no data or failed; the provider stays
// the one r names.
func (r *DatasetResult) record(out activities.IngestResult, err error, succeeded, noData, failed *int) {
	if err != nil {
		r.Status, r.Error, r.ErrorType = StatusFailed, rootMessage(err), errorType(err)
		*failed++
		return
	}
	r.Key, r.RawBytes, r.CompressedBytes, r.SHA256, r.Skipped = out.Key, out.RawBytes, out.CompressedBytes, out.SHA256, out.Skipped
	r.Pages, r.WindowFrom, r.WindowTo = out.Pages, out.WindowFrom, out.WindowTo
	r.Duration, r.Attempts = out.Duration, out.Attempt
	if out.NoData {
		r.Status = StatusNoData
		*noData++
	} else {
		r.Status = StatusOK
		*succeeded++
	}
}

// DailyIngestResult is a batch's outcome. The workflow completes even
// when datasets fail: a provider that is down or out of quota fails only
// its own datasets, named here.
type DailyIngestResult struct {
	Date      string          `json:"date"`
	Results   []DatasetResult `json:"results"`
	Succeeded int             `json:"succeeded"`
	NoData    int             `json:"no_data"`
	Failed    int             `json:"failed"`
	Started   time.Time       `json:"started"`
	Finished  time.Time       `json:"finished"`
}

// Progress is what ProgressQuery returns.
type Progress struct {
	Total     int `json:"total"`
	Done      int `json:"done"`
	Succeeded int `json:"succeeded"`
	NoData    int `json:"no_data"`
	Failed    int `json:"failed"`
}

// IngestActivityOptions are the options of every Ingest activity: the
// limiter's waits count against StartToClose; heartbeats keep long
// downloads alive; retry decisions come from the activity's error classes
// (NextRetryDelay for rate limits and quotas, jittered exponential backoff
// for transient failures).
var IngestActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    30 * time.Minute,
	ScheduleToCloseTimeout: 6 * time.Hour,
	HeartbeatTimeout:       20 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        2 * time.Minute,
		MaximumAttempts:        8,
		NonRetryableErrorTypes: []string{"auth_failed", "bad_request", "no_data", activities.ErrTypeUnknownDataset, activities.ErrTypeBadInput},
	},
}

// RevisionsActivityOptions are the options of the Revisions activity that
// follows each object a daily run lands.
// The activity heartbeats, so a worker killed mid-comparison holds its
// dataset for the heartbeat timeout, not the whole five minutes.
var RevisionsActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		NonRetryableErrorTypes: []string{activities.ErrTypeUnknownDataset, activities.ErrTypeBadInput},
	},
}

// DailyIngest runs one logical date's batch: it plans the datasets, fans
// out one daily-run Ingest activity per dataset (each asks its dataset's
// look-back window and files it under the date; the scopes' limiters pace
// them) and returns every dataset's outcome. A dataset whose daily quota is
// spent waits for the reset when it comes within the worker's
// --max-quota-wait (ratelimit.QuotaWaiter: a durable timer, then the
// activity again), and fails naming the reset otherwise. Every object it
// lands (not one left unchanged) is compared with the dataset's previous
// object by a Revisions activity, which records revision Changes in the
// watch store; a failed comparison never fails its dataset. No payload
// passes through its history.
func DailyIngest(ctx workflow.Context, in DailyIngestInput) (DailyIngestResult, error) {
	res := DailyIngestResult{Date: in.Date, Started: workflow.Now(ctx)}
	if in.Schedule != nil {
		date, err := scheduledDate(ctx, in)
		if err != nil {
			return res, err
		}
		in.Date, res.Date = date, date
	}
	if _, err := time.Parse(time.DateOnly, in.Date); err != nil {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("daily ingest: date %q is not YYYY-MM-DD", in.Date), activities.ErrTypeBadInput, nil)
	}
	var a *activities.Activities
	var plan []activities.PlanItem
	planCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeUnknownDataset}},
	})
	if err := workflow.ExecuteActivity(planCtx, a.Plan, activities.PlanInput{Providers: in.Providers, Datasets: in.Datasets}).Get(ctx, &plan); err != nil {
		return res, fmt.Errorf("planning the batch: %w", err)
	}
	prog := Progress{Total: len(plan)}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) { return prog, nil }); err != nil {
		return res, err
	}
	actCtx := workflow.WithActivityOptions(ctx, IngestActivityOptions)
	// Runs started before revisions were compared replay without them.
	compare := workflow.GetVersion(ctx, "revisions", workflow.DefaultVersion, 1) >= 1
	revCtx := workflow.WithActivityOptions(ctx, RevisionsActivityOptions)
	res.Results = make([]DatasetResult, len(plan))
	pending := len(plan)
	for i, item := range plan {
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer func() { pending-- }()
			r := DatasetResult{Dataset: item.Dataset, Provider: item.Provider}
			var out activities.IngestResult
			err := ingestWaitingForQuota(ctx, actCtx, activities.IngestInput{Dataset: item.Dataset, From: in.Date, LookBack: true}, &out)
			// The outcome counts in the progress once the dataset is done
			// (its revisions compared), with Done: a query never sees more
			// datasets succeeded than done.
			var succeeded, noData, failed int
			r.record(out, err, &succeeded, &noData, &failed)
			if compare && err == nil && out.Key != "" && !out.Skipped && !out.NoData {
				var rev activities.RevisionsResult
				if rerr := workflow.ExecuteActivity(revCtx, a.Revisions, activities.RevisionsInput{Dataset: item.Dataset, Key: out.Key}).Get(ctx, &rev); rerr != nil {
					workflow.GetLogger(ctx).Warn("comparing revisions", "dataset", item.Dataset, "err", rerr)
				} else {
					r.Revisions = rev.Revisions
				}
			}
			prog.Done++
			prog.Succeeded += succeeded
			prog.NoData += noData
			prog.Failed += failed
			r.Finished = workflow.Now(ctx)
			res.Results[i] = r
		})
	}
	if err := workflow.Await(ctx, func() bool { return pending == 0 }); err != nil {
		return res, err
	}
	res.Succeeded, res.NoData, res.Failed = prog.Succeeded, prog.NoData, prog.Failed
	res.Finished = workflow.Now(ctx)
	return res, nil
}

// ingestWaitingForQuota runs one Ingest activity. When it fails because a
// daily quota is spent and the quota resets within the worker's
// --max-quota-wait (counted from the first such failure), it waits for the
// reset on a durable timer and runs the activity again: the wait is bounded
// by no activity timeout and spends none of the next day's quota.
func ingestWaitingForQuota(ctx, actCtx workflow.Context, in activities.IngestInput, out *activities.IngestResult) error {
	var a *activities.Activities
	var quota ratelimit.QuotaWaiter
	for {
		err := workflow.ExecuteActivity(actCtx, a.Ingest, in).Get(ctx, out)
		if err == nil {
			return nil
		}
		again, werr := quota.Wait(ctx, err)
		if werr != nil {
			return werr
		}
		if !again {
			return err
		}
	}
}

// scheduledDate is a scheduled run's logical date: LogicalDate of its
// nominal time in the schedule's timezone, recorded in the history (a
// side effect) so that a replay never depends on the time zone database.
func scheduledDate(ctx workflow.Context, in DailyIngestInput) (string, error) {
	bad := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), activities.ErrTypeBadInput, nil)
	}
	if in.Date != "" {
		return "", bad("daily ingest: schedule %s: a scheduled run takes its date from its nominal time, but the input names date %q", in.Schedule.ID, in.Date)
	}
	nominal, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(ScheduledStartTime)
	if !ok || nominal.IsZero() {
		return "", bad("daily ingest: schedule %s: the run carries no %s search attribute (was it started by hand? give it a date instead)", in.Schedule.ID, ScheduledStartTime.GetName())
	}
	var date string
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		loc, err := time.LoadLocation(in.Schedule.Timezone)
		if err != nil || in.Schedule.Timezone == "" || in.Schedule.Timezone == "Local" {
			return ""
		}
		return LogicalDate(nominal, loc)
	}).Get(&date)
	if err != nil || date == "" {
		return "", bad("daily ingest: schedule %s: unknown timezone %q", in.Schedule.ID, in.Schedule.Timezone)
	}
	return date, nil
}

// rootMessage is the innermost application error's message: the
// provider's classified reason, without Temporal's wrapping.
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return "timed out: " + to.Error()
	}
	return err.Error()
}

func errorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return "timeout"
	}
	return "error"
}
