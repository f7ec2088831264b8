package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/sluicehq/sluice/internal/deployment"
)

// promoteTimeout bounds how long a starting worker waits for the server to
// register its version before it can make it current: the version exists
// once one of the worker's pollers has reached the server.
const promoteTimeout = 2 * time.Minute

// NudgeSignal is the signal Nudge sends a pinned run. No workflow handles
// it: it only gives the run a workflow task, the task on which the server
// tells it that its task queue's current version changed, so that a
// singleton with nothing else to do continues as new onto that version.
const NudgeSignal = "sluice-deploy-nudge"

// promote makes v the current version of its deployment when the
// deployment has none, or in any case when always is set, and returns the
// current version's build id and whether it made it so. It retries, until ctx ends, while the server does not
// know the deployment or the version yet and while another client changes
// the deployment between its Describe and its SetCurrentVersion (the
// conflict token): of several workers starting together with no current
// version, one makes its build current and the others see it.
func promote(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion, always bool) (current string, promoted bool, err error) {
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	for {
		d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		if err == nil {
			cur := d.Info.RoutingConfig.CurrentVersion
			if cur != nil && (cur.BuildID == v.BuildID || !always) {
				return cur.BuildID, false, nil
			}
			_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: d.ConflictToken})
			if err == nil {
				return v.BuildID, true, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", false, fmt.Errorf("making build %s the current version of deployment %s: %w", v.BuildID, v.DeploymentName, errors.Join(err, ctx.Err()))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PromoteBuild makes build the current version of the deployment of taskQueue,
// waiting (until ctx ends) for the server to know the version: start the
// new build's workers first. Workflows pinned to the previous version stay
// on it until they continue as new; Nudge hurries the singletons.
func PromoteBuild(ctx context.Context, c client.Client, taskQueue, build string) error {
	v := sdkworker.WorkerDeploymentVersion{DeploymentName: deployment.Name(taskQueue), BuildID: build}
	if _, _, err := promote(ctx, c, v, true); err != nil {
		return err
	}
	return nil
}

// Run is an open workflow run and the version that serves it.
type Run struct {
	WorkflowID, RunID, Type string
	// Behavior is "pinned", "auto-upgrade" or "" (unversioned).
	Behavior string
	// BuildID is the build that serves the run ("" when unversioned).
	BuildID string
}

// Pinned is a run pinned to a build.
func (r Run) Pinned() bool { return r.Behavior == "pinned" }

// OpenRuns lists the namespace's open workflow runs with the version that
// serves each (DescribeWorkflowExecution's versioning info), sorted by
// workflow id.
func OpenRuns(ctx context.Context, c client.Client) ([]Run, error) {
	var out []Run
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Running'", NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("listing open workflows: %w", err)
		}
		for _, e := range resp.Executions {
			id, run := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
			d, err := c.DescribeWorkflowExecution(ctx, id, run)
			if err != nil {
				return nil, fmt.Errorf("describing workflow %s: %w", id, err)
			}
			info := d.GetWorkflowExecutionInfo()
			if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				continue
			}
			r := Run{WorkflowID: id, RunID: run, Type: info.GetType().GetName()}
			vi := info.GetVersioningInfo()
			switch vi.GetBehavior() {
			case enumspb.VERSIONING_BEHAVIOR_PINNED:
				r.Behavior = "pinned"
			case enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE:
				r.Behavior = "auto-upgrade"
			}
			r.BuildID = vi.GetDeploymentVersion().GetBuildId()
			if o := vi.GetVersioningOverride(); o.GetPinned() != nil {
				r.Behavior, r.BuildID = "pinned", o.GetPinned().GetVersion().GetBuildId()
			}
			out = append(out, r)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkflowID < out[j].WorkflowID })
	return out, nil
}

// nudgeEvery is how often Drain nudges the runs still pinned to an older
// build.
const nudgeEvery = 2 * time.Second

// Drain nudges (NudgeSignal) every open run pinned to a build other than
// current, again every nudgeEvery, until none is left or ctx ends, and
// returns the runs left (none when drained). Once is not enough: the
// server tells a pinned run of the new version on a workflow task that
// its task queue's partition dispatches after it has heard of the
// promotion itself, which it does a moment after SetCurrentVersion
// returns; a nudge answered before that changes nothing. A run that
// finished meanwhile is skipped.
func Drain(ctx context.Context, c client.Client, current string) ([]Run, error) {
	for {
		runs, err := OpenRuns(ctx, c)
		if err != nil {
			return nil, err
		}
		var left []Run
		for _, r := range runs {
			if r.Pinned() && r.BuildID != current {
				left = append(left, r)
			}
		}
		if len(left) == 0 {
			return nil, nil
		}
		for _, r := range left {
			if err := c.SignalWorkflow(ctx, r.WorkflowID, r.RunID, NudgeSignal, nil); err != nil {
				if d, derr := c.DescribeWorkflowExecution(ctx, r.WorkflowID, r.RunID); derr == nil &&
					d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					return left, fmt.Errorf("nudging workflow %s: %w", r.WorkflowID, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return left, nil
		case <-time.After(nudgeEvery):
		}
	}
}
