package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// BackfillDatasetName is the registered name of the workflow that
// backfills one dataset for a Backfill.
const BackfillDatasetName = "BackfillDataset"

// Signals a backfill takes. PauseSignal and ResumeSignal are sent to the
// Backfill workflow (which forwards them to its datasets' workflows);
// datasetProgressSignal is what a dataset's workflow tells its parent.
const (
	PauseSignal           = "pause"
	ResumeSignal          = "resume"
	datasetProgressSignal = "backfill-dataset-progress"
)

// Backfill states, as the SluiceBackfillState search attribute holds them
// (the progress query's State says "waiting for quota until <time>").
const (
	BackfillRunning   = "running"
	BackfillPaused    = "paused"
	BackfillWaiting   = "waiting_for_quota"
	BackfillDone      = "done"
	BackfillCancelled = "cancelled"
)

// Bounds of a backfill's workflows: at most backfillWindow Ingest
// activities of a dataset in flight (far below Temporal's advice of 500
// pending activities a workflow), a manifest batch every
// manifestBatch chunks, at most maxChunksPerRun chunks checked per run
// and a run continued as new once its estimated history passes
// historyBudget events (or the server suggests it, or its real history
// passes historyLimit), well below the server's 10,240-event warning.
const (
	backfillWindow = 4
	manifestBatch  = 50
	historyLimit   = 8000
)

// Variables so that tests can lower them.
var (
	maxChunksPerRun      = 800
	historyBudget        = 7000
	datasetHistoryBudget = 7000
	// flushInterval is the longest a finished chunk waits unrecorded while
	// others are in flight; 0: no timed flush.
	flushInterval = 30 * time.Second
)

// Events a step adds to a history, at most, counting the workflow task
// that handles it (scheduled, started, completed).
const (
	eventsActivity = 6 // scheduled, started, completed + a workflow task
	eventsTimer    = 5 // started, fired + a workflow task
	eventsSignal   = 5 // initiated, signaled + a workflow task
	eventsReceived = 4 // signaled + a workflow task
	eventsChild    = 9 // initiated, started, completed + two workflow tasks
)

// DatasetProgress is one dataset's part of a backfill, as its workflow
// reports it to the parent (absolute counts: a repeated report changes
// nothing).
type DatasetProgress struct {
	Dataset  string `json:"dataset"`
	Provider string `json:"provider"`
	Total    int    `json:"total"`
	Done     int    `json:"done"` // ok + no_data + failed + skipped
	OK       int    `json:"ok"`
	NoData   int    `json:"no_data"`
	Failed   int    `json:"failed"`
	Skipped  int    `json:"skipped"` // no provider call: already done
	Calls    int    `json:"calls"`   // provider pages fetched
	Bytes    int64  `json:"bytes"`   // raw bytes landed
	// State is running, paused, waiting_for_quota or done; WaitUntil the
	// quota reset a waiting dataset waits for.
	State     string    `json:"state"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
	Finished  bool      `json:"finished,omitempty"`
	Error     string    `json:"error,omitempty"` // the workflow itself failed
	// Runs counts the workflow's runs (continue-as-new), MaxHistory the
	// longest history one of them reported (0 where the SDK does not say).
	Runs       int `json:"runs"`
	MaxHistory int `json:"max_history,omitempty"`
	// MaxEstimated is the most events a run's history held by the
	// workflow's own upper-bound count (the budget it continues as new
	// at).
	MaxEstimated int `json:"max_estimated,omitempty"`
}

// BackfillDatasetInput is a dataset's workflow input; Chunks, Next,
// Progress and Paused carry its state across continue-as-new.
type BackfillDatasetInput struct {
	Parent    string                     `json:"parent"`   // the Backfill's workflow id
	Backfill  string                     `json:"backfill"` // names the manifests
	Dataset   string                     `json:"dataset"`
	Provider  string                     `json:"provider"`
	From      string                     `json:"from"`
	To        string                     `json:"to"`
	Reprocess string                     `json:"reprocess"`
	Chunks    []activities.BackfillChunk `json:"chunks,omitempty"`
	Next      int                        `json:"next,omitempty"`
	Progress  DatasetProgress            `json:"progress"`
	Paused    bool                       `json:"paused,omitempty"`
}

// backfillIngestOptions are the daily ingest's options, waiting for a
// cancelled ingest to abort its object before the workflow goes on.
func backfillIngestOptions() workflow.ActivityOptions {
	o := IngestActivityOptions
	o.WaitForCancellation = true
	return o
}

var backfillStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeUnknownDataset, activities.ErrTypeBadInput},
	},
}

// BackfillDataset fetches one dataset's chunks of a backfill: it plans
// them (PlanChunks), asks which need a provider call (CheckChunks: the
// reprocess mode against the lake and the manifests), ingests those at
// most backfillWindow at a time at backfill priority, records every chunk
// in the dataset's manifest a batch at a time (RecordManifest), and
// reports its progress to the parent. A spent daily quota stops new
// chunks until the reset the error names (a durable timer), then the
// chunk runs again: quota never fails a chunk. Pause stops new chunks
// (in-flight ones finish); cancellation cancels the in-flight ingests,
// whose sink writes abort, and records what finished.
func BackfillDataset(ctx workflow.Context, in BackfillDatasetInput) (DatasetProgress, error) {
	var a *activities.Activities
	st := in.Progress
	st.Dataset, st.Provider = in.Dataset, in.Provider
	st.Runs++
	paused := in.Paused
	budget := 0
	changed := false
	log := workflow.GetLogger(ctx)

	pauseCh := workflow.GetSignalChannel(ctx, PauseSignal)
	resumeCh := workflow.GetSignalChannel(ctx, ResumeSignal)
	onSignal := func(pause bool) {
		budget += eventsReceived
		paused, changed = pause, true
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(pauseCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); onSignal(true) })
			sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); onSignal(false) })
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})

	stepCtx := workflow.WithActivityOptions(ctx, backfillStepOptions)
	if in.Chunks == nil {
		var chunks []activities.BackfillChunk
		if err := workflow.ExecuteActivity(stepCtx, a.PlanChunks, activities.PlanChunksInput{Dataset: in.Dataset, From: in.From, To: in.To}).Get(ctx, &chunks); err != nil {
			return st, fmt.Errorf("planning the chunks of %s: %w", in.Dataset, err)
		}
		budget += eventsActivity
		in.Chunks = chunks
		st.Total = len(chunks)
	}
	end := min(len(in.Chunks), in.Next+maxChunksPerRun)
	var check activities.CheckChunksResult
	if err := workflow.ExecuteActivity(stepCtx, a.CheckChunks, activities.CheckChunksInput{
		Backfill: in.Backfill, Dataset: in.Dataset, Reprocess: in.Reprocess, Chunks: in.Chunks[in.Next:end],
	}).Get(ctx, &check); err != nil {
		return st, fmt.Errorf("checking the chunks of %s: %w", in.Dataset, err)
	}
	budget += eventsActivity
	var pending []manifest.Entry
	for _, e := range check.Done {
		st.Done++
		st.Skipped++
		pending = append(pending, e)
	}

	now := func() time.Time { return workflow.Now(ctx) }
	state := func() string {
		switch {
		case st.Finished:
			return BackfillDone
		case paused:
			return BackfillPaused
		case now().Before(st.WaitUntil):
			return BackfillWaiting
		}
		return BackfillRunning
	}
	lastState := ""
	report := func(ctx workflow.Context) {
		st.State = state()
		if st.State != BackfillWaiting {
			st.WaitUntil = time.Time{}
		}
		if h := workflow.GetInfo(ctx).GetCurrentHistoryLength(); h > st.MaxHistory {
			st.MaxHistory = h
		}
		lastState = st.State
		if in.Parent == "" {
			return
		}
		// The last report must arrive: the parent waits for it. A parent
		// between two runs (continue-as-new) may miss a signal in the test
		// environment, so it is sent again a few times.
		for try := 0; ; try++ {
			budget += eventsSignal
			err := workflow.SignalExternalWorkflow(ctx, in.Parent, "", datasetProgressSignal, st).Get(ctx, nil)
			if err == nil || !st.Finished || try >= 10 || ctx.Err() != nil {
				if err != nil {
					log.Warn("reporting backfill progress", "dataset", in.Dataset, "err", err)
				}
				break
			}
			budget += eventsTimer
			_ = workflow.Sleep(ctx, time.Second)
		}
	}
	lastFlush := now()
	flush := func(ctx workflow.Context) error {
		lastFlush = now()
		if len(pending) == 0 {
			return nil
		}
		batch := pending
		pending = nil
		budget += eventsActivity
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, backfillStepOptions), a.RecordManifest, activities.RecordManifestInput{
			Backfill: in.Backfill, Dataset: in.Dataset, Provider: in.Provider, Entries: batch,
		}).Get(ctx, nil); err != nil {
			return fmt.Errorf("recording the manifest of %s: %w", in.Dataset, err)
		}
		report(ctx)
		return nil
	}

	ingestCtx := workflow.WithActivityOptions(ctx, backfillIngestOptions())
	inflight := 0
	runChunk := func(ctx workflow.Context, c activities.BackfillChunk) {
		defer func() { inflight--; changed = true }()
		in := activities.IngestInput{Dataset: in.Dataset, From: c.From, To: c.To, Priority: permit.PriorityBackfill}
		var out activities.IngestResult
		var err error
		for {
			budget += eventsActivity
			err = workflow.ExecuteActivity(ingestCtx, a.Ingest, in).Get(ctx, &out)
			q, ok := ratelimit.QuotaWaitOf(err)
			if !ok {
				break
			}
			// The day's share is spent: wait for the reset, then again.
			if until := q.ResetAt.Add(time.Second); until.After(st.WaitUntil) {
				st.WaitUntil, changed = until, true
			}
			budget += eventsTimer
			if d := st.WaitUntil.Sub(workflow.Now(ctx)); d > 0 {
				if serr := workflow.Sleep(ctx, d); serr != nil {
					err = serr
					break
				}
			}
		}
		if ctx.Err() != nil {
			return // cancelled: nothing landed, nothing to record
		}
		e := manifest.Entry{From: c.From, To: c.To, Updated: workflow.Now(ctx)}
		switch {
		case err != nil:
			e.Status, e.Error = manifest.StatusFailed, rootMessage(err)
			st.Failed++
		case out.NoData:
			e.Status = manifest.StatusNoData
			st.NoData++
		default:
			e.Status, e.Key, e.Pages, e.SHA256, e.RawBytes, e.Skipped = manifest.StatusOK, out.Key, out.Pages, out.SHA256, out.RawBytes, out.Skipped
			st.OK++
		}
		st.Calls += out.Pages
		if !out.Skipped {
			st.Bytes += out.RawBytes
		}
		st.Done++
		pending = append(pending, e)
	}

	queue := check.Fetch
	qi := 0
	stopping := false
	var runErr error
	report(ctx)
	for {
		changed = false
		if ctx.Err() != nil {
			break
		}
		if len(pending) >= manifestBatch || (len(pending) > 0 && flushInterval > 0 && now().Sub(lastFlush) >= flushInterval) || (len(pending) > 0 && inflight == 0) {
			if runErr = flush(ctx); runErr != nil {
				break
			}
			continue
		}
		if state() != lastState {
			report(ctx)
			continue
		}
		if !stopping && (budget >= datasetHistoryBudget || workflow.GetInfo(ctx).GetContinueAsNewSuggested() ||
			workflow.GetInfo(ctx).GetCurrentHistoryLength() >= historyLimit) {
			stopping = true
		}
		if inflight == 0 && (qi >= len(queue) || stopping) {
			break
		}
		canLaunch := !stopping && qi < len(queue) && !paused && inflight < backfillWindow
		if canLaunch && !now().Before(st.WaitUntil) {
			c := in.Chunks[in.Next+queue[qi]]
			qi++
			inflight++
			workflow.Go(ctx, func(ctx workflow.Context) { runChunk(ctx, c) })
			continue
		}
		var timeout time.Duration
		if canLaunch {
			timeout = st.WaitUntil.Sub(now()) // waiting for quota
		}
		if len(pending) > 0 && flushInterval > 0 {
			if d := flushInterval - now().Sub(lastFlush); timeout == 0 || d < timeout {
				timeout = d
			}
		}
		var err error
		if timeout > 0 {
			budget += eventsTimer
			_, err = workflow.AwaitWithTimeout(ctx, timeout, func() bool { return changed })
		} else {
			err = workflow.Await(ctx, func() bool { return changed })
		}
		if err != nil {
			break
		}
	}
	if ctx.Err() != nil || runErr != nil {
		// Cancelled (or the manifest failing): let the cancelled ingests
		// abort, then record what finished.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Await(dctx, func() bool { return inflight == 0 })
		if err := flush(dctx); err != nil && runErr == nil {
			runErr = err
		}
		if runErr != nil {
			return st, runErr
		}
		return st, ctx.Err()
	}
	next := end
	if qi < len(queue) {
		// Stopped early: the chunks from the first one not launched are
		// checked again by the next run, and counted there.
		next = in.Next + queue[qi]
		for _, idx := range check.DoneIndex {
			if in.Next+idx > next {
				st.Done--
				st.Skipped--
			}
		}
	}
	st.MaxEstimated = max(st.MaxEstimated, budget+eventsSignal+eventsActivity)
	if next < len(in.Chunks) {
		// The signals this run has not handled carry over.
		in.Next, in.Progress, in.Paused = next, st, paused
		for {
			var v any
			if pauseCh.ReceiveAsync(&v) {
				in.Paused = true
				continue
			}
			if resumeCh.ReceiveAsync(&v) {
				in.Paused = false
				continue
			}
			break
		}
		return st, workflow.NewContinueAsNewError(ctx, BackfillDatasetName, in)
	}
	st.Finished = true
	report(ctx)
	return st, nil
}
