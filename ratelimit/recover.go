package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Recovery: a limiter run that does not continue its scope's state (the
// first run, a run started after a terminate, a reset run) grants nothing
// until a client hands it the state of the run before it. The client
// finds that run without trusting any clock:
//
//  1. a reset run's own history names its base run (the WorkflowTaskFailed
//     event of the reset); the base run's full history is kept, so
//     querying it replays every grant it gave, after the reset point too;
//  2. otherwise visibility lists the runs of the workflow id: once the
//     current run is listed (visibility caught up), the run that closed
//     last is the one before. A run closed by continue-as-new must have
//     continued into the current run, else its successor is not listed
//     yet and the client tries again.
//
// Querying a closed run replays its history on a worker: its state at
// its end. A run that itself never recovered granted nothing and is
// skipped. If no run is found the scope is new. If the state cannot be
// read after recoverAttempts tries (visibility down, a history that no
// longer replays), the run is told to quarantine (Ledger.Quarantine).

// recoverAttempts is how many times a client tries to read the last run's
// state before it quarantines the scope.
const recoverAttempts = 3

// visibilityWait bounds how long a client waits for the current run to
// appear in visibility.
const visibilityWait = 10 * time.Second

// errNotYet is a recovery that must be tried again later.
var errNotYet = errors.New("the run before is not visible yet")

// previous is the run before a limiter run and its state.
type previous struct {
	runID string
	state State
}

// recoverScope hands the run runID of a scope's limiter the state of the
// run before it, or a quarantine after recoverAttempts failures. Called
// from the scope's batcher (one at a time per process).
func (c *Client) recoverScope(b *batcher, runID string) error {
	b.recoverMu.Lock()
	defer b.recoverMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := RecoverRequest{ForRunID: runID, Caller: c.caller}
	prev, err := c.findPrevious(ctx, WorkflowID(b.scope), runID)
	switch {
	case err != nil:
		b.recoverFailures++
		if b.recoverFailures < recoverAttempts {
			return fmt.Errorf("recovering limiter %s: %w", b.scope, err)
		}
		c.log.Warn("cannot read the limiter's last state; quarantining the scope", "scope", b.scope, "run", runID, "err", err)
		req.Quarantine, req.Reason = true, err.Error()
	case prev != nil:
		req.From, req.State = prev.runID, &prev.state
	}
	h, err := c.tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: WorkflowID(b.scope), UpdateName: RecoverUpdate, Args: []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var st State
		err = h.Get(ctx, &st)
	}
	if err != nil {
		return fmt.Errorf("recovering limiter %s: %w", b.scope, err)
	}
	b.recoverFailures = 0
	c.count(func(s *ClientStats) { s.Recoveries++ })
	c.log.Info("limiter recovered its state", "scope", b.scope, "run", runID, "from", req.From, "quarantine", req.Quarantine)
	return nil
}

// findPrevious returns the run before current and its state, or nil when
// the scope had none that granted anything.
func (c *Client) findPrevious(ctx context.Context, workflowID, current string) (*previous, error) {
	skip := map[string]bool{current: true}
	base, err := c.resetBase(ctx, workflowID, current)
	if err != nil {
		return nil, err
	}
	if base != "" {
		st, err := c.stateOf(ctx, workflowID, base)
		if err != nil {
			return nil, err
		}
		if !st.Recovering {
			return &previous{runID: base, state: st}, nil
		}
		skip[base] = true
	}
	runs, err := c.closedRuns(ctx, workflowID, current)
	if err != nil {
		return nil, err
	}
	for i, r := range runs {
		if skip[r.runID] {
			continue
		}
		switch r.status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			return nil, fmt.Errorf("run %s of %s is still running beside %s", r.runID, workflowID, current)
		case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			if i > 0 {
				continue // its successor was newer and came first
			}
			next, err := c.continuedTo(ctx, workflowID, r.runID)
			if err != nil {
				return nil, err
			}
			if next != current {
				return nil, fmt.Errorf("run %s continued as %s: %w", r.runID, next, errNotYet)
			}
		}
		st, err := c.stateOf(ctx, workflowID, r.runID)
		if err != nil {
			return nil, err
		}
		if st.Recovering {
			continue // it granted nothing
		}
		return &previous{runID: r.runID, state: st}, nil
	}
	return nil, nil
}

// resetBase returns the base run of a reset run (the last reset in its
// history), or "".
func (c *Client) resetBase(ctx context.Context, workflowID, runID string) (string, error) {
	it := c.tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	base := ""
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("reading the history of %s: %w", workflowID, err)
		}
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil &&
			a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW && a.GetBaseRunId() != "" {
			base = a.GetBaseRunId()
		}
	}
	return base, nil
}

// continuedTo returns the run a run closed by continue-as-new continued
// into.
func (c *Client) continuedTo(ctx context.Context, workflowID, runID string) (string, error) {
	it := c.tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("reading the close event of %s: %w", workflowID, err)
		}
		if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
			return a.GetNewExecutionRunId(), nil
		}
	}
	return "", fmt.Errorf("run %s of %s has no continue-as-new event", runID, workflowID)
}

type runInfo struct {
	runID  string
	status enumspb.WorkflowExecutionStatus
	closed time.Time
}

// closedRuns lists the runs of a workflow id other than current, last
// closed first, once visibility lists current. Statuses come from the
// history service (DescribeWorkflowExecution), not from visibility.
func (c *Client) closedRuns(ctx context.Context, workflowID, current string) ([]runInfo, error) {
	if strings.ContainsAny(workflowID, `'"\`) {
		return nil, fmt.Errorf("workflow id %q cannot be listed", workflowID)
	}
	query := fmt.Sprintf("WorkflowId = '%s'", workflowID)
	deadline := time.Now().Add(visibilityWait)
	for {
		var ids []string
		seen := false
		var token []byte
		for page := 0; page < 5; page++ {
			resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 50, NextPageToken: token})
			if err != nil {
				return nil, fmt.Errorf("listing the runs of %s: %w", workflowID, err)
			}
			for _, e := range resp.GetExecutions() {
				id := e.GetExecution().GetRunId()
				if id == current {
					seen = true
				} else {
					ids = append(ids, id)
				}
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		if seen {
			return c.describeRuns(ctx, workflowID, ids)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("run %s of %s: %w", current, workflowID, errNotYet)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Client) describeRuns(ctx context.Context, workflowID string, ids []string) ([]runInfo, error) {
	var runs []runInfo
	for _, id := range ids {
		d, err := c.tc.DescribeWorkflowExecution(ctx, workflowID, id)
		if err != nil {
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				continue // past retention
			}
			return nil, fmt.Errorf("describing run %s of %s: %w", id, workflowID, err)
		}
		info := d.GetWorkflowExecutionInfo()
		runs = append(runs, runInfo{runID: id, status: info.GetStatus(), closed: info.GetCloseTime().AsTime()})
	}
	slices.SortStableFunc(runs, func(a, b runInfo) int {
		// Running first (an anomaly findPrevious reports), then last closed first.
		ar, br := a.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, b.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		switch {
		case ar != br:
			if ar {
				return -1
			}
			return 1
		case a.closed.After(b.closed):
			return -1
		case b.closed.After(a.closed):
			return 1
		}
		return 0
	})
	return runs, nil
}
