package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/watch"
)

// WatchName is the registered name of the watch workflow.
const WatchName = "Watch"

// WatchStateQuery returns a running watch's WatchStatus.
const WatchStateQuery = "state"

// WatchWorkflowID is the workflow id of a dataset's watch: one watch per
// dataset, whoever starts it.
func WatchWorkflowID(dataset string) string { return "watch/" + dataset }

// DefaultProbesPerRun is how many probes one run of a watch sends before
// it continues as new: 10 to 12 history events a probe (a timer, the
// activity, two workflow tasks), so a run stays near 1,000 events, a tenth
// of Temporal's 10,240-event warning (measured by
// workflows/testdata/record: a run of 101 probes, 28 of them
// confirmations, took 982 events; the confirmations of the last scheduled
// probe may carry a run one or two past the bound). An hourly watch continues as
// new every four days, a daily one every hundred.
const DefaultProbesPerRun = 100

// watchFirstSpreadChange is the workflow.GetVersion change id of the
// first probe's spread over the interval (watch.FirstProbeOffset): runs
// recorded before it probed a dataset never probed at once.
const watchFirstSpreadChange = "watch-first-spread"

// maxConfirmationsPerSlot bounds the confirmation probes sent between two
// scheduled ones. A streak of probes disagreeing with the confirmed state
// resolves after 1 + probe_headroom of them, so the state machine asks
// for at most two; this is a guard, not the budget (the store keeps that).
const maxConfirmationsPerSlot = 10

// WatchInput names the watched dataset and carries a watch's state
// across continue-as-new.
type WatchInput struct {
	Dataset string `json:"dataset"`
	// ProbesPerRun bounds one run's history: after this many probes the
	// watch continues as new (0: DefaultProbesPerRun).
	ProbesPerRun int `json:"probes_per_run,omitempty"`

	// Next is the next scheduled probe and Interval the probing interval;
	// zero for a watch just started, which asks the WatchPlan activity.
	Next     time.Time     `json:"next,omitzero"`
	Interval time.Duration `json:"interval,omitempty"`
	// Probes counts the probes earlier runs sent; Runs the runs before.
	Probes int64 `json:"probes,omitempty"`
	Runs   int   `json:"runs,omitempty"`
	// Last is the last probe's result.
	Last *activities.ProbeResult `json:"last,omitempty"`
}

// WatchStatus is what WatchStateQuery returns: the watch's schedule and
// the last probe's result (outcome, state, since when).
type WatchStatus struct {
	Dataset  string        `json:"dataset"`
	Interval time.Duration `json:"interval"`
	// Next is the next scheduled probe.
	Next time.Time `json:"next"`
	// ConfirmAt is when a confirmation probe is due; zero when none is.
	ConfirmAt time.Time `json:"confirm_at,omitzero"`
	// Probes counts every probe the watch sent, over all its runs;
	// RunProbes those of this run; Run numbers the run (1: the first).
	Probes    int64 `json:"probes"`
	RunProbes int   `json:"run_probes"`
	Run       int   `json:"run"`
	// Confirmations counts this run's confirmation probes.
	Confirmations int                     `json:"confirmations"`
	Last          *activities.ProbeResult `json:"last,omitempty"`
	// Failures counts this run's probe activities that failed (a worker
	// lost, the store unreachable), and LastError says why the last did.
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// WatchResult is a watch's outcome when it stops by itself: the workers'
// registry no longer probes the dataset.
type WatchResult struct {
	Dataset string `json:"dataset"`
	Stopped string `json:"stopped"`
	Probes  int64  `json:"probes"`
}

// Watch probes one dataset on its interval, for as long as it runs
// (workflow id WatchWorkflowID; `sluice watch sync` starts and stops
// watches to follow the registry). Scheduled probes keep a fixed grid —
// the first at a point of the first interval fixed by the dataset
// (watch.FirstProbeOffset; an interval after the store's last probe or
// observation of the dataset when there is one), then one every interval; a probe that comes late does not
// bunch the next ones. After a probe the store may ask for confirmation
// (watch.Result.Confirm): the watch sends it at the time asked, marked as
// a confirmation, if that is before the next scheduled probe (which
// confirms as well, at no extra cost). A probe activity that fails is not
// retried: the next scheduled probe follows. The interval comes from the
// workers' registry and rate scale with every probe, so a changed
// interval applies from the next one. The watch continues as new every
// ProbesPerRun probes or when Temporal suggests it; WatchStateQuery
// returns its state.
func Watch(ctx workflow.Context, in WatchInput) (WatchResult, error) {
	res := WatchResult{Dataset: in.Dataset}
	if in.Dataset == "" {
		return res, temporal.NewNonRetryableApplicationError("watch: no dataset given", activities.ErrTypeBadInput, nil)
	}
	per := in.ProbesPerRun
	if per <= 0 {
		per = DefaultProbesPerRun
	}
	st := WatchStatus{Dataset: in.Dataset, Interval: in.Interval, Next: in.Next, Probes: in.Probes, Run: in.Runs + 1, Last: in.Last}
	if err := workflow.SetQueryHandler(ctx, WatchStateQuery, func() (WatchStatus, error) { return st, nil }); err != nil {
		return res, err
	}
	var a *activities.Activities
	if st.Next.IsZero() || st.Interval <= 0 {
		planCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute,
				NonRetryableErrorTypes: []string{activities.ErrTypeNotWatched, activities.ErrTypeBadInput}},
		})
		var plan activities.WatchPlan
		if err := workflow.ExecuteActivity(planCtx, a.WatchPlan, activities.WatchPlanInput{Dataset: in.Dataset}).Get(ctx, &plan); err != nil {
			if stop, why := notWatched(err); stop {
				res.Stopped, res.Probes = why, st.Probes
				return res, nil
			}
			return res, fmt.Errorf("planning the watch of %s: %w", in.Dataset, err)
		}
		// Never sooner than an interval after the last recorded probe, nor
		// later than an interval from now (a worker whose clock ran ahead
		// recorded that probe in the future).
		now := workflow.Now(ctx)
		st.Interval, st.Next = plan.Interval, now
		if plan.LastProbe.IsZero() && workflow.GetVersion(ctx, watchFirstSpreadChange, workflow.DefaultVersion, 1) >= 1 {
			// Never probed: the first probe at a point of the interval
			// fixed by the dataset, so that watches started together
			// (and the daily batch started with them) do not all probe
			// at once.
			st.Next = now.Add(watch.FirstProbeOffset(in.Dataset, plan.Interval))
		}
		if !plan.LastProbe.IsZero() {
			if n := plan.LastProbe.Add(plan.Interval); n.After(now) {
				st.Next = n
				if latest := now.Add(plan.Interval); n.After(latest) {
					st.Next = latest
				}
			}
		}
	}

	// probe runs one probe activity; stop is set when the workers'
	// registry no longer probes the dataset.
	probe := func(confirmation bool) (r activities.ProbeResult, ok bool, stop string, err error) {
		actCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			// A probe no worker picks up within an interval is dropped:
			// the next scheduled one takes its place.
			ScheduleToStartTimeout: max(st.Interval, time.Minute),
			StartToCloseTimeout:    activities.ProbeTimeout(st.Interval),
			HeartbeatTimeout:       30 * time.Second,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		st.Probes++
		st.RunProbes++
		if confirmation {
			st.Confirmations++
		}
		err = workflow.ExecuteActivity(actCtx, a.Probe, activities.ProbeInput{Dataset: in.Dataset, Confirmation: confirmation}).Get(ctx, &r)
		if err == nil {
			st.Last = &r
			if r.Interval > 0 {
				st.Interval = r.Interval
			}
			return r, true, "", nil
		}
		if ctx.Err() != nil {
			return r, false, "", ctx.Err()
		}
		if s, why := notWatched(err); s {
			return r, false, why, nil
		}
		st.Failures++
		st.LastError = rootMessage(err)
		workflow.GetLogger(ctx).Warn("probe failed", "dataset", in.Dataset, "err", err)
		return r, false, "", nil
	}

	for st.RunProbes < per && !deployment.Suggested(ctx) {
		// A new current version wakes the wait: the loop's test ends
		// the run, which goes on as new on that version.
		if err := sleepUntilMoved(ctx, st.Next); err != nil {
			return res, err
		}
		if deployment.TargetChanged(ctx) {
			break
		}
		slot := st.Next
		r, ok, stop, err := probe(false)
		if err != nil {
			return res, err
		}
		if stop != "" {
			res.Stopped, res.Probes = stop, st.Probes
			return res, nil
		}
		st.Next = nextSlot(slot, st.Interval, workflow.Now(ctx))
		for n := 0; ok && r.Confirm.Wanted() && r.Confirm.At.Before(st.Next) && n < maxConfirmationsPerSlot; n++ {
			st.ConfirmAt = r.Confirm.At
			if err := sleepUntil(ctx, r.Confirm.At); err != nil {
				return res, err
			}
			st.ConfirmAt = time.Time{}
			if r, ok, stop, err = probe(true); err != nil {
				return res, err
			}
			if stop != "" {
				res.Stopped, res.Probes = stop, st.Probes
				return res, nil
			}
		}
		st.ConfirmAt = time.Time{}
	}
	return res, deployment.ContinueAsNew(ctx, Watch, WatchInput{
		Dataset: in.Dataset, ProbesPerRun: in.ProbesPerRun,
		Next: st.Next, Interval: st.Interval, Probes: st.Probes, Runs: st.Run, Last: st.Last,
	})
}

// nextSlot returns the first point of the grid slot + k·interval (k ≥ 1)
// after now: probes that ran late skip the slots they missed instead of
// bunching.
func nextSlot(slot time.Time, interval time.Duration, now time.Time) time.Time {
	if interval <= 0 {
		interval = time.Minute
	}
	next := slot.Add(interval)
	if !next.After(now) {
		k := now.Sub(slot)/interval + 1
		next = slot.Add(k * interval)
	}
	return next
}

// sleepUntilMoved is sleepUntil that also returns, early, on the first
// workflow task that tells this pinned run a new current version waits
// (deployment.TargetChanged: a run with nothing to do gets that task from
// worker.Drain). Its timer is the one sleepUntil starts, and on a history
// recorded without a version change the condition never holds, so a
// replay sees the same commands.
func sleepUntilMoved(ctx workflow.Context, t time.Time) error {
	if d := t.Sub(workflow.Now(ctx)); d > 0 {
		_, err := workflow.AwaitWithTimeout(ctx, d, func() bool { return deployment.TargetChanged(ctx) })
		return err
	}
	return nil
}

// sleepUntil sleeps on a durable timer until t (not at all when t has
// passed).
func sleepUntil(ctx workflow.Context, t time.Time) error {
	if d := t.Sub(workflow.Now(ctx)); d > 0 {
		return workflow.Sleep(ctx, d)
	}
	return nil
}

// notWatched reports an activity error saying the workers' registry does
// not probe the dataset, with its message.
func notWatched(err error) (bool, string) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == activities.ErrTypeNotWatched {
		return true, app.Error()
	}
	return false, ""
}
