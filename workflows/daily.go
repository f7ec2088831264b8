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
	Date      string   `json:"date"` // YYYY-MM-DD, the logical date of the data
	Providers []string `json:"providers,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
}

// Statuses of a dataset in a batch.
const (
	StatusOK     = "ok"
	StatusNoData = "no_data"
	StatusFailed = "failed"
)

// DatasetResult is one dataset's outcome: metadata only.
type DatasetResult struct {
	Dataset         string        `json:"dataset"`
	Provider        string        `json:"provider"`
	Status          string        `json:"status"`
	Key             string        `json:"key,omitempty"`
	RawBytes        int64         `json:"raw_bytes,omitempty"`
	CompressedBytes int64         `json:"compressed_bytes,omitempty"`
	SHA256          string        `json:"sha256,omitempty"`
	Pages           int           `json:"pages,omitempty"` // provider pages (calls) the object holds
	Skipped         bool          `json:"skipped,omitempty"`
	Duration        time.Duration `json:"duration,omitempty"`
	Attempts        int32         `json:"attempts,omitempty"`
	// Revisions counts the revision Changes the object's comparison with
	// the dataset's previous object recorded (activities.Revisions).
	Revisions int       `json:"revisions,omitempty"`
	Finished  time.Time `json:"finished"` // when the workflow saw it complete
	ErrorType string    `json:"error_type,omitempty"`
	Error     string    `json:"error,omitempty"`
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
var RevisionsActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		NonRetryableErrorTypes: []string{activities.ErrTypeUnknownDataset, activities.ErrTypeBadInput},
	},
}

// DailyIngest runs one logical date's batch: it plans the datasets, fans
// out one Ingest activity per dataset (the scopes' limiters pace them) and
// returns every dataset's outcome. A dataset whose daily quota is spent
// waits for the reset when it comes within the worker's --max-quota-wait
// (ratelimit.QuotaWaiter: a durable timer, then the activity again), and
// fails naming the reset otherwise. Every object it lands (not one left
// unchanged) is compared with the dataset's previous object by a Revisions
// activity, which records revision Changes in the watch store; a failed
// comparison never fails its dataset. No payload passes through its
// history.
func DailyIngest(ctx workflow.Context, in DailyIngestInput) (DailyIngestResult, error) {
	res := DailyIngestResult{Date: in.Date, Started: workflow.Now(ctx)}
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
			err := ingestWaitingForQuota(ctx, actCtx, activities.IngestInput{Dataset: item.Dataset, From: in.Date}, &out)
			if err != nil {
				r.Status, r.Error, r.ErrorType = StatusFailed, rootMessage(err), errorType(err)
				prog.Failed++
			} else {
				r.Key, r.RawBytes, r.CompressedBytes, r.SHA256, r.Skipped = out.Key, out.RawBytes, out.CompressedBytes, out.SHA256, out.Skipped
				r.Pages = out.Pages
				r.Duration, r.Attempts = out.Duration, out.Attempt
				if out.NoData {
					r.Status = StatusNoData
					prog.NoData++
				} else {
					r.Status = StatusOK
					prog.Succeeded++
				}
			}
			if compare && err == nil && out.Key != "" && !out.Skipped && !out.NoData {
				var rev activities.RevisionsResult
				if rerr := workflow.ExecuteActivity(revCtx, a.Revisions, activities.RevisionsInput{Dataset: item.Dataset, Key: out.Key}).Get(ctx, &rev); rerr != nil {
					workflow.GetLogger(ctx).Warn("comparing revisions", "dataset", item.Dataset, "err", rerr)
				} else {
					r.Revisions = rev.Revisions
				}
			}
			prog.Done++
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
