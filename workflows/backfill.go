package workflows

import (
	"fmt"
	"math"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/internal/deployment"
	"github.com/sluicehq/sluice/internal/kind"
)

// BackfillName is the registered name of the backfill workflow; its
// progress query is ProgressQuery.
const BackfillName = "Backfill"

// Search attributes a backfill keeps current, so that the Web UI's
// workflow list shows its state and share done. They must be registered
// on the namespace (the embedded server does; deploy/ says how for
// compose).
// backfillKindChange is the workflow.GetVersion change id of the kind
// (internal/kind) a backfill gives its per-dataset children.
const backfillKindChange = "backfill-child-kind"

var (
	BackfillStateAttr   = temporal.NewSearchAttributeKeyKeyword("SluiceBackfillState")
	BackfillPercentAttr = temporal.NewSearchAttributeKeyInt64("SluiceBackfillPercent")
)

// backfillMaxChildren bounds the dataset workflows a backfill runs at
// once; the scope limiters pace their calls in any case.
const backfillMaxChildren = 32

// BackfillInput is a backfill's input, plain JSON a user can type:
//
//	{"from":"2016-01-01","to":"2026-08-31","providers":["ecos"],"datasets":[],"reprocess":"missing"}
//
// Providers, Datasets and Reprocess are optional; empty filters select the
// whole registry and Reprocess defaults to missing. Carry is the state a
// run hands its continuation; never set it by hand.
type BackfillInput struct {
	From      string         `json:"from"`
	To        string         `json:"to"`
	Providers []string       `json:"providers,omitempty"`
	Datasets  []string       `json:"datasets,omitempty"`
	Reprocess string         `json:"reprocess,omitempty"`
	Carry     *BackfillCarry `json:"carry,omitempty"`
}

// BackfillCarry is a backfill's state across continue-as-new.
type BackfillCarry struct {
	Plan      activities.PlanBackfillResult `json:"plan"`
	Started   time.Time                     `json:"started"`
	Reprocess string                        `json:"reprocess"`
	Next      int                           `json:"next"`     // datasets started
	Datasets  []DatasetProgress             `json:"datasets"` // as Plan.Datasets
	Paused    bool                          `json:"paused,omitempty"`
	Runs      int                           `json:"runs"`
	// MaxHistory is the longest history a run of the backfill reported;
	// MaxEstimated the most events a run held by the workflows' own
	// upper-bound count.
	MaxHistory   int `json:"max_history,omitempty"`
	MaxEstimated int `json:"max_estimated,omitempty"`
}

// BackfillCounts are a backfill's chunk and call counts.
type BackfillCounts struct {
	Total        int   `json:"total"`
	Done         int   `json:"done"`
	OK           int   `json:"ok"`
	NoData       int   `json:"no_data"`
	Failed       int   `json:"failed"`
	Skipped      int   `json:"skipped"`
	Calls        int   `json:"calls"`
	PlannedCalls int   `json:"planned_calls"`
	Bytes        int64 `json:"bytes"`
}

// ProviderProgress is a provider's part of a backfill.
type ProviderProgress struct {
	Provider string         `json:"provider"`
	State    string         `json:"state"`
	Counts   BackfillCounts `json:"counts"`
}

// BackfillProgress is what the progress query of a Backfill returns, and
// its result.
type BackfillProgress struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Reprocess string `json:"reprocess"`
	// State is running, paused, "waiting for quota until <time>", done or
	// cancelled.
	State     string             `json:"state"`
	Percent   float64            `json:"percent"`
	ETA       time.Time          `json:"eta,omitzero"`
	Message   string             `json:"message,omitempty"`
	Started   time.Time          `json:"started"`
	Counts    BackfillCounts     `json:"counts"`
	Providers []ProviderProgress `json:"providers"`
	// Datasets and DatasetsDone count the dataset workflows.
	Datasets     int `json:"datasets"`
	DatasetsDone int `json:"datasets_done"`
	// Runs counts the backfill's runs (continue-as-new); MaxHistory is the
	// longest history any of its workflows reported.
	Runs         int `json:"runs"`
	MaxHistory   int `json:"max_history,omitempty"`
	MaxEstimated int `json:"max_estimated,omitempty"`
	// PlannedMakespan is the planner's prediction.
	PlannedMakespan time.Duration `json:"planned_makespan"`
}

// BackfillDatasetWorkflowID is the id of a backfill's dataset workflow:
// deterministic, so a second start of the same dataset finds the first.
func BackfillDatasetWorkflowID(backfill, dataset string) string { return backfill + "/" + dataset }

// Backfill fetches the history of the selected datasets from From to To:
// it plans the run on the worker (PlanBackfill; bad dates or filters fail
// it at once), then runs one BackfillDataset child per dataset (at most
// backfillMaxChildren at once, a sliding window), each writing its
// dataset's manifest — one child per dataset makes each manifest a single
// writer's and keeps each history to one dataset's chunks. Children report
// their progress by signal, so a run continued as new (when the server
// suggests it or its history grows long) keeps following the children the
// run before started. Pause and resume are forwarded to the running
// children; cancellation cancels them.
func Backfill(ctx workflow.Context, in BackfillInput) (BackfillProgress, error) {
	var a *activities.Activities
	info := workflow.GetInfo(ctx)
	self := info.WorkflowExecution.ID
	c := in.Carry
	if c == nil {
		mode, err := activities.CheckReprocess(in.Reprocess)
		if err != nil {
			return BackfillProgress{}, err
		}
		planCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 5 * time.Minute,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5,
				NonRetryableErrorTypes: []string{activities.ErrTypeUnknownDataset, activities.ErrTypeBadInput}},
		})
		var plan activities.PlanBackfillResult
		if err := workflow.ExecuteActivity(planCtx, a.PlanBackfill, activities.PlanBackfillInput{
			From: in.From, To: in.To, Providers: in.Providers, Datasets: in.Datasets,
		}).Get(ctx, &plan); err != nil {
			return BackfillProgress{}, fmt.Errorf("planning the backfill: %w", err)
		}
		c = &BackfillCarry{Plan: plan, Started: workflow.Now(ctx), Reprocess: mode}
		for _, d := range plan.Datasets {
			c.Datasets = append(c.Datasets, DatasetProgress{Dataset: d.Dataset, Provider: d.Provider, Total: d.Chunks})
		}
	}
	c.Runs++
	budget := 0
	changed := false
	cancelled := false
	progressed := false // a run continues as new only after doing something

	progress := func() BackfillProgress { return backfillProgress(c, workflow.Now(ctx), cancelled) }
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (BackfillProgress, error) { return progress(), nil }); err != nil {
		return BackfillProgress{}, err
	}

	index := map[string]int{}
	for i, d := range c.Datasets {
		index[d.Dataset] = i
	}
	onProgress := func(p DatasetProgress) {
		budget += eventsReceived
		progressed = true
		i, ok := index[p.Dataset]
		if !ok {
			return
		}
		p.Total = max(p.Total, c.Datasets[i].Total)
		if c.Datasets[i].Finished && !p.Finished {
			return // a late report of a finished dataset
		}
		c.Datasets[i] = p
		c.MaxHistory = max(c.MaxHistory, p.MaxHistory)
		c.MaxEstimated = max(c.MaxEstimated, p.MaxEstimated)
		changed = true
	}
	progressCh := workflow.GetSignalChannel(ctx, datasetProgressSignal)
	pauseCh := workflow.GetSignalChannel(ctx, PauseSignal)
	resumeCh := workflow.GetSignalChannel(ctx, ResumeSignal)
	forward := make([]string, 0) // signals to forward to the children, in order
	onPause := func(pause bool) {
		budget += eventsReceived
		if c.Paused != pause {
			c.Paused = pause
			if pause {
				forward = append(forward, PauseSignal)
			} else {
				forward = append(forward, ResumeSignal)
			}
		}
		changed = true
	}
	// Signals that came before this point (a pause sent with the start,
	// or carried over from the previous run) count before any child
	// starts.
	drain := func() {
		for {
			var p DatasetProgress
			switch {
			case progressCh.ReceiveAsync(&p):
				onProgress(p)
			case pauseCh.ReceiveAsync(nil):
				onPause(true)
			case resumeCh.ReceiveAsync(nil):
				onPause(false)
			default:
				return
			}
		}
	}
	drain()
	forward = forward[:0] // no child runs yet that was not started with the state
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(progressCh, func(ch workflow.ReceiveChannel, _ bool) {
				var p DatasetProgress
				ch.Receive(ctx, &p)
				onProgress(p)
			})
			sel.AddReceive(pauseCh, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, nil); onPause(true) })
			sel.AddReceive(resumeCh, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, nil); onPause(false) })
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})

	running := func() []int {
		var out []int
		for i := 0; i < c.Next; i++ {
			if !c.Datasets[i].Finished {
				out = append(out, i)
			}
		}
		return out
	}
	starting := 0
	start := func(i int) {
		d := c.Datasets[i]
		id := BackfillDatasetWorkflowID(self, d.Dataset)
		copts := workflow.ChildWorkflowOptions{
			WorkflowID:            id,
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON, // continue-as-new must not end them
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		}
		if workflow.GetVersion(ctx, backfillKindChange, workflow.DefaultVersion, 1) >= 1 {
			copts.TypedSearchAttributes = kind.Of(kind.Backfill)
		}
		cctx := workflow.WithChildOptions(ctx, copts)
		budget += eventsChild
		starting++
		f := workflow.ExecuteChildWorkflow(cctx, BackfillDatasetName, BackfillDatasetInput{
			Parent: self, Backfill: self, Dataset: d.Dataset, Provider: d.Provider,
			From: c.Plan.From, To: c.Plan.To, Reprocess: c.Reprocess, Progress: d, Paused: c.Paused,
		})
		workflow.Go(ctx, func(ctx workflow.Context) {
			err := f.GetChildWorkflowExecution().Get(ctx, nil)
			starting--
			changed = true
			if err != nil {
				if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
					return // started by an earlier run: it reports by signal
				}
				c.Datasets[i].Finished, c.Datasets[i].Error, c.Datasets[i].State = true, rootMessage(err), BackfillDone
				return
			}
			var p DatasetProgress
			if err := f.Get(ctx, &p); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.Datasets[i].Finished, c.Datasets[i].Error, c.Datasets[i].State = true, rootMessage(err), BackfillDone
				return
			}
			p.Finished = true
			onProgress(p)
		})
	}

	lastState, lastPercent := "", int64(-1)
	upsert := func() {
		p := progress()
		st := searchState(p.State)
		pct := int64(math.Floor(p.Percent))
		if st == lastState && pct == lastPercent {
			return
		}
		lastState, lastPercent = st, pct
		budget++
		if err := workflow.UpsertTypedSearchAttributes(ctx, BackfillStateAttr.ValueSet(st), BackfillPercentAttr.ValueSet(pct)); err != nil {
			workflow.GetLogger(ctx).Warn("upserting backfill search attributes", "err", err)
		}
	}

	for {
		changed = false
		upsert()
		if ctx.Err() != nil {
			break
		}
		if len(forward) > 0 && starting == 0 { // a child still starting would miss it
			sig := forward[0]
			forward = forward[1:]
			var fs []workflow.Future
			for _, i := range running() {
				budget += eventsSignal
				fs = append(fs, workflow.SignalExternalWorkflow(ctx, BackfillDatasetWorkflowID(self, c.Datasets[i].Dataset), "", sig, nil))
			}
			for _, f := range fs {
				_ = f.Get(ctx, nil) // a child that finished meanwhile needs no signal
			}
			continue
		}
		run := running()
		if c.Next >= len(c.Datasets) && len(run) == 0 && starting == 0 {
			break
		}
		if progressed && (budget >= historyBudget || deployment.Suggested(ctx) ||
			workflow.GetInfo(ctx).GetCurrentHistoryLength() >= historyLimit) {
			if starting == 0 {
				// Handle the signals that came meanwhile, then go on as
				// new with the children still running.
				drain()
				if len(forward) == 0 {
					if h := workflow.GetInfo(ctx).GetCurrentHistoryLength(); h > c.MaxHistory {
						c.MaxHistory = h
					}
					c.MaxEstimated = max(c.MaxEstimated, budget+eventsActivity)
					in.Carry = c
					return progress(), deployment.ContinueAsNew(ctx, BackfillName, in)
				}
				continue
			}
		} else if !c.Paused && c.Next < len(c.Datasets) && len(run)+starting < backfillMaxChildren {
			start(c.Next)
			c.Next++
			progressed = true
			continue
		}
		if err := workflow.Await(ctx, func() bool { return changed }); err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		cancelled = true
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		var fs []workflow.Future
		for _, i := range running() {
			fs = append(fs, workflow.RequestCancelExternalWorkflow(dctx, BackfillDatasetWorkflowID(self, c.Datasets[i].Dataset), ""))
		}
		for _, f := range fs {
			_ = f.Get(dctx, nil)
		}
		_ = workflow.UpsertTypedSearchAttributes(dctx, BackfillStateAttr.ValueSet(BackfillCancelled))
		return progress(), ctx.Err()
	}
	if h := workflow.GetInfo(ctx).GetCurrentHistoryLength(); h > c.MaxHistory {
		c.MaxHistory = h
	}
	upsert()
	c.MaxEstimated = max(c.MaxEstimated, budget+eventsActivity)
	return progress(), nil
}

// searchState is the SluiceBackfillState value of a progress state.
func searchState(s string) string {
	if len(s) > len("waiting") && s[:len("waiting")] == "waiting" {
		return BackfillWaiting
	}
	return s
}

// backfillProgress sums a backfill's state into its progress answer.
func backfillProgress(c *BackfillCarry, now time.Time, cancelled bool) BackfillProgress {
	p := BackfillProgress{From: c.Plan.From, To: c.Plan.To, Reprocess: c.Reprocess, Started: c.Started,
		Datasets: len(c.Datasets), Runs: c.Runs, MaxHistory: c.MaxHistory, MaxEstimated: c.MaxEstimated, PlannedMakespan: c.Plan.Makespan}
	p.Counts.PlannedCalls = c.Plan.Calls
	byProvider := map[string]int{}
	var waitUntil time.Time
	paused := c.Paused
	for i, d := range c.Datasets {
		j, ok := byProvider[d.Provider]
		if !ok {
			j = len(p.Providers)
			byProvider[d.Provider] = j
			p.Providers = append(p.Providers, ProviderProgress{Provider: d.Provider})
		}
		pp := &p.Providers[j]
		add := func(b *BackfillCounts) {
			b.Total += d.Total
			b.Done += d.Done
			b.OK += d.OK
			b.NoData += d.NoData
			b.Failed += d.Failed
			b.Skipped += d.Skipped
			b.Calls += d.Calls
			b.Bytes += d.Bytes
		}
		add(&p.Counts)
		add(&pp.Counts)
		if i < len(c.Plan.Datasets) {
			pp.Counts.PlannedCalls += c.Plan.Datasets[i].Calls
		}
		if d.Finished {
			p.DatasetsDone++
		}
		switch {
		case !d.Finished && d.State == BackfillWaiting && d.WaitUntil.After(now):
			if pp.State != BackfillPaused {
				pp.State = "waiting for quota until " + d.WaitUntil.Format(time.RFC3339)
			}
			if waitUntil.IsZero() || d.WaitUntil.Before(waitUntil) {
				waitUntil = d.WaitUntil
			}
		case pp.State == "" && !d.Finished && i < c.Next:
			pp.State = BackfillRunning
		}
		if pp.State == "" && d.Finished {
			pp.State = BackfillDone
		}
	}
	for i := range p.Providers {
		pp := &p.Providers[i]
		if paused && pp.State != BackfillDone {
			pp.State = BackfillPaused
		}
		if pp.Counts.Done < pp.Counts.Total && pp.State == BackfillDone {
			pp.State = BackfillRunning
		}
		if pp.State == "" {
			pp.State = "queued"
		}
	}
	if p.Counts.Total > 0 {
		p.Percent = math.Round(1000*float64(p.Counts.Done)/float64(p.Counts.Total)) / 10
	} else {
		p.Percent = 100
	}
	switch {
	case cancelled:
		p.State = BackfillCancelled
	case p.DatasetsDone == len(c.Datasets):
		p.State = BackfillDone
		p.Percent = 100
	case paused:
		p.State = BackfillPaused
	case !waitUntil.IsZero() && activeNotWaiting(c, now) == 0:
		p.State = "waiting for quota until " + waitUntil.Format(time.RFC3339)
	default:
		p.State = BackfillRunning
	}
	if p.State != BackfillDone && p.State != BackfillCancelled {
		p.ETA = eta(c, p, now)
	}
	if p.Counts.Failed > 0 {
		p.Message = fmt.Sprintf("%d chunks failed (see the manifests; rerun with reprocess failed)", p.Counts.Failed)
	}
	return p
}

// activeNotWaiting counts the started, unfinished datasets not waiting
// for quota.
func activeNotWaiting(c *BackfillCarry, now time.Time) int {
	n := 0
	for i, d := range c.Datasets {
		if i < c.Next && !d.Finished && !(d.State == BackfillWaiting && d.WaitUntil.After(now)) {
			n++
		}
	}
	return n
}

// eta blends the plan's prediction (start + predicted makespan) with the
// pace so far (the chunks left at the rate of those done), weighing the
// pace by the share done.
func eta(c *BackfillCarry, p BackfillProgress, now time.Time) time.Time {
	planned := c.Started.Add(c.Plan.Makespan)
	if p.Counts.Done == 0 || p.Counts.Total == 0 || !now.After(c.Started) {
		if planned.Before(now) {
			return now
		}
		return planned
	}
	spent := now.Sub(c.Started)
	left := p.Counts.Total - p.Counts.Done
	paced := now.Add(time.Duration(float64(spent) * float64(left) / float64(p.Counts.Done)))
	w := float64(p.Counts.Done) / float64(p.Counts.Total)
	at := planned.Add(time.Duration(w * float64(paced.Sub(planned))))
	if at.Before(now) {
		at = now
	}
	return at.Truncate(time.Second)
}
