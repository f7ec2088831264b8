package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/workflows"
)

// TestRefetchRunsEachItem: each item is one Ingest of its dataset and
// dates (a range included); failures are named, not fatal.
func TestRefetchRunsEachItem(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
	var a *activities.Activities
	env.RegisterActivity(a)
	day := activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27"}
	rng := activities.IngestInput{Dataset: "ecos-base-rate", From: "2016-01-01", To: "2016-12-31"}
	gone := activities.IngestInput{Dataset: "retired", From: "2026-11-27"}
	env.OnActivity(a.Ingest, mock.Anything, day).Return(activities.IngestResult{Dataset: day.Dataset, Provider: "fred", Key: "k1", Pages: 1, Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, rng).Return(activities.IngestResult{Dataset: rng.Dataset, Provider: "ecos", Key: "k2", Pages: 3, Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, gone).Return(activities.IngestResult{},
		temporal.NewNonRetryableApplicationError(`dataset "retired" is not in the registry`, activities.ErrTypeUnknownDataset, nil))
	env.ExecuteWorkflow(workflows.RefetchName, workflows.RefetchInput{Items: []activities.IngestInput{day, rng, gone}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, err %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res workflows.RefetchResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 2 || res.Failed != 1 || len(res.Results) != 3 {
		t.Fatalf("result %+v", res)
	}
	if r := res.Results[1]; r.Status != workflows.StatusOK || r.Pages != 3 || r.Key != "k2" {
		t.Errorf("range item %+v", r)
	}
	if r := res.Results[2]; r.Status != workflows.StatusFailed || r.ErrorType != activities.ErrTypeUnknownDataset {
		t.Errorf("unknown dataset item %+v", r)
	}

	env = ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
	env.ExecuteWorkflow(workflows.RefetchName, workflows.RefetchInput{})
	if err := env.GetWorkflowError(); err == nil {
		t.Error("an empty refetch succeeded")
	}
}
