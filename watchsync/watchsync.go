// Package watchsync keeps the watch workflows in step with the registry:
// one running Watch workflow (workflows.Watch, id watch/<dataset>) for
// every dataset with a probe section, and none for the others. Plan is
// pure (registry × running watches → steps); Apply carries the steps out
// on a Temporal client; Running and Query read what runs. `sluice watch
// sync` and `sluice dev` use it. The daily ingest's Schedules are another
// package's: nothing here lists, changes or deletes a Schedule, and only
// workflows of type Watch under the watch/ prefix are touched.
package watchsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	"github.com/sluicehq/sluice/internal/kind"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/workflows"
)

// MemoKey marks the watches Sluice starts (memo sluice=watch), as the
// orchestration practice of marking what one owns asks.
const MemoKey = "sluice"

// MemoValue is MemoKey's value on a watch.
const MemoValue = "watch"

// Action is what a sync does to one dataset's watch.
type Action string

// The actions.
const (
	// Start: the dataset has a probe section and no watch runs.
	Start Action = "start"
	// Keep: its watch runs on the right task queue. Its interval needs no
	// update: the watch reads it from the workers' registry at every
	// probe.
	Keep Action = "keep"
	// Stop: a watch runs for a dataset the registry does not probe (no
	// probe section, or no longer in the registry).
	Stop Action = "stop"
	// Restart: its watch runs on another task queue, where these workers
	// do not poll: it is stopped and started on this one.
	Restart Action = "restart"
)

// Step is one dataset's part of a sync.
type Step struct {
	Action     Action `json:"action"`
	Dataset    string `json:"dataset"`
	WorkflowID string `json:"workflow_id"`
	Reason     string `json:"reason"`
}

// Watch is a running watch workflow, as visibility lists it.
type Watch struct {
	Dataset    string    `json:"dataset"`
	WorkflowID string    `json:"workflow_id"`
	RunID      string    `json:"run_id"`
	TaskQueue  string    `json:"task_queue"`
	Started    time.Time `json:"started"`
	// HistoryLength is the run's history length in events.
	HistoryLength int64 `json:"history_length"`
}

// watchQuery selects the running watches.
const watchQuery = "WorkflowType = '" + workflows.WatchName + "' AND ExecutionStatus = 'Running'"

// Running lists the running watch workflows of the client's namespace, by
// dataset. Visibility is eventually consistent: a watch started a moment
// ago may be missing (Apply tolerates that).
func Running(ctx context.Context, tc client.Client) (map[string]Watch, error) {
	out := map[string]Watch{}
	var token []byte
	for {
		var resp *workflowservice.ListWorkflowExecutionsResponse
		err := retryTransient(ctx, listAttempts, listBackoff, func() error {
			var err error
			resp, err = tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000, NextPageToken: token, Query: watchQuery})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("listing the running watches: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			ds, ok := strings.CutPrefix(id, workflows.WatchWorkflowID(""))
			if !ok || ds == "" {
				continue // a Watch workflow Sluice did not name: not ours to manage
			}
			out[ds] = Watch{Dataset: ds, WorkflowID: id, RunID: e.GetExecution().GetRunId(), TaskQueue: e.GetTaskQueue(),
				Started: e.GetStartTime().AsTime(), HistoryLength: e.GetHistoryLength()}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// listAttempts and listBackoff bound the retries of a visibility listing
// that a server just started (or busy) cut short.
const (
	listAttempts = 5
	listBackoff  = 200 * time.Millisecond
)

// retryTransient calls f up to attempts times while it fails with an
// error a server returns when it is starting or overloaded (Unavailable,
// a stream it cancelled, a deadline of its own, resource exhausted) and
// ctx is still live, doubling the pause between attempts from backoff.
// Any other error, or ctx's end, returns at once.
func retryTransient(ctx context.Context, attempts int, backoff time.Duration, f func() error) error {
	var err error
	for i := range attempts {
		if err = f(); err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if i == attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff << i):
		}
	}
	return err
}

// transient reports whether err is a gRPC status a starting or busy
// server answers with, worth asking again.
func transient(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return false
}

// Probed lists the registry's datasets that have a probe section, sorted.
func Probed(reg *registry.Registry) []*registry.Dataset {
	var out []*registry.Dataset
	for _, d := range reg.Datasets {
		if d.Probe != nil && d.Probe.IntervalMinutes > 0 {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Plan compares the registry with the running watches and returns one step
// per dataset that has a probe section or a running watch, sorted by
// dataset.
func Plan(reg *registry.Registry, running map[string]Watch, taskQueue string) []Step {
	var steps []Step
	probed := map[string]bool{}
	for _, d := range Probed(reg) {
		probed[d.ID] = true
		id := workflows.WatchWorkflowID(d.ID)
		w, ok := running[d.ID]
		switch {
		case !ok:
			steps = append(steps, Step{Action: Start, Dataset: d.ID, WorkflowID: id,
				Reason: fmt.Sprintf("probed every %d min, no watch running", d.Probe.IntervalMinutes)})
		case w.TaskQueue != "" && w.TaskQueue != taskQueue:
			steps = append(steps, Step{Action: Restart, Dataset: d.ID, WorkflowID: id,
				Reason: fmt.Sprintf("running on task queue %s, not %s", w.TaskQueue, taskQueue)})
		default:
			steps = append(steps, Step{Action: Keep, Dataset: d.ID, WorkflowID: id,
				Reason: fmt.Sprintf("running since %s", w.Started.UTC().Format(time.RFC3339))})
		}
	}
	for ds, w := range running {
		if probed[ds] {
			continue
		}
		why := "not in the registry"
		if reg.Dataset(ds) != nil {
			why = "no probe section in the registry"
		}
		steps = append(steps, Step{Action: Stop, Dataset: ds, WorkflowID: w.WorkflowID, Reason: why})
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Dataset < steps[j].Dataset })
	return steps
}

// Apply carries out the steps: it starts the missing watches on
// taskQueue (a watch that started meanwhile is left as it is) and
// terminates those of datasets the registry does not probe, with the
// reason, which the Web UI shows. The watch keeps no state of its own
// (the store does), so stopping one loses nothing. It returns every
// step's error, joined.
func Apply(ctx context.Context, tc client.Client, reg *registry.Registry, taskQueue string, steps []Step) error {
	var errs []error
	for _, s := range steps {
		switch s.Action {
		case Stop, Restart:
			reason := "sluice watch sync: " + s.Reason
			if err := tc.TerminateWorkflow(ctx, s.WorkflowID, "", reason); err != nil && !notFound(err) {
				errs = append(errs, fmt.Errorf("stopping %s: %w", s.WorkflowID, err))
				continue
			}
		}
		switch s.Action {
		case Start, Restart:
			if err := start(ctx, tc, reg.Dataset(s.Dataset), taskQueue); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func start(ctx context.Context, tc client.Client, ds *registry.Dataset, taskQueue string) error {
	if ds == nil || ds.Probe == nil {
		return errors.New("starting a watch: the dataset has no probe section")
	}
	name := ds.Name
	if name == "" {
		name = ds.ID
	}
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.WatchWorkflowID(ds.ID),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                     map[string]any{MemoKey: MemoValue, "dataset": ds.ID, "provider": ds.Provider},
		TypedSearchAttributes:    kind.Of(kind.Watch),
		StaticSummary:            fmt.Sprintf("watch of %s: %s, probed every %d min", ds.ID, name, ds.Probe.IntervalMinutes),
	}, workflows.WatchName, workflows.WatchInput{Dataset: ds.ID})
	if err != nil {
		return fmt.Errorf("starting the watch of %s: %w", ds.ID, err)
	}
	return nil
}

func notFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Sync lists the running watches, plans and applies, and returns the
// steps it took.
func Sync(ctx context.Context, tc client.Client, reg *registry.Registry, taskQueue string) ([]Step, error) {
	running, err := Running(ctx, tc)
	if err != nil {
		return nil, err
	}
	steps := Plan(reg, running, taskQueue)
	return steps, Apply(ctx, tc, reg, taskQueue, steps)
}

// Query asks each running watch for its WatchStatus (WatchStateQuery), a
// few at a time; a watch that does not answer within timeout is left
// out, and the first error is returned beside what did answer.
func Query(ctx context.Context, tc client.Client, watches map[string]Watch, timeout time.Duration) (map[string]workflows.WatchStatus, error) {
	out := map[string]workflows.WatchStatus{}
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for ds, w := range watches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			qctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			v, err := tc.QueryWorkflow(qctx, w.WorkflowID, w.RunID, workflows.WatchStateQuery)
			var st workflows.WatchStatus
			if err == nil {
				err = v.Get(&st)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("querying %s: %w", w.WorkflowID, err)
				}
				return
			}
			out[ds] = st
		}()
	}
	wg.Wait()
	return out, first
}
