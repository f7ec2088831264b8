package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/workflows"
)

// TestDailyIngestIsolatesFailures: one provider's failures fail only its
// datasets; the workflow completes and names them.
func TestDailyIngestIsolatesFailures(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	var a *activities.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.Plan, mock.Anything, activities.PlanInput{}).Return([]activities.PlanItem{
		{Dataset: "fred-dgs10", Provider: "fred"},
		{Dataset: "kis-a", Provider: "kis"},
		{Dataset: "ecos-m", Provider: "ecos"},
	}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27"}).Return(activities.IngestResult{
		Dataset: "fred-dgs10", Provider: "fred", Key: "provider=fred/job=fred-dgs10/year=2026/fred-dgs10_20261127.json.zst",
		RawBytes: 100, CompressedBytes: 50, SHA256: "ab", Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "kis-a", From: "2026-11-27"}).Return(activities.IngestResult{},
		temporal.NewNonRetryableApplicationError("kis kis-a: auth_failed EGW00121: invalid token", "auth_failed", nil))
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "ecos-m", From: "2026-11-27"}).Return(activities.IngestResult{
		Dataset: "ecos-m", Provider: "ecos", NoData: true, Attempt: 1}, nil)
	// Only the landed object is compared with its predecessor.
	env.OnActivity(a.Revisions, mock.Anything, activities.RevisionsInput{Dataset: "fred-dgs10",
		Key: "provider=fred/job=fred-dgs10/year=2026/fred-dgs10_20261127.json.zst"}).Return(activities.RevisionsResult{Revisions: 2}, nil).Once()

	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Date: "2026-11-27"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, err %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res workflows.DailyIngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 1 || res.NoData != 1 || res.Failed != 1 || len(res.Results) != 3 {
		t.Fatalf("result = %+v", res)
	}
	got := map[string]workflows.DatasetResult{}
	for _, r := range res.Results {
		got[r.Dataset] = r
	}
	if r := got["kis-a"]; r.Status != workflows.StatusFailed || r.ErrorType != "auth_failed" || r.Error == "" {
		t.Errorf("kis-a = %+v", r)
	}
	if r := got["fred-dgs10"]; r.Status != workflows.StatusOK || r.Key == "" || r.SHA256 != "ab" || r.Revisions != 2 {
		t.Errorf("fred-dgs10 = %+v", r)
	}
	env.AssertExpectations(t)
	if r := got["ecos-m"]; r.Status != workflows.StatusNoData {
		t.Errorf("ecos-m = %+v", r)
	}
}

func TestDailyIngestRejectsBadDate(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Date: "27/11/2026"})
	err := env.GetWorkflowError()
	var app *temporal.ApplicationError
	if err == nil || !errorsAs(err, &app) || app.Type() != activities.ErrTypeBadInput {
		t.Fatalf("err = %v", err)
	}
}

// TestDailyIngestWaitsForQuotaReset: a dataset whose daily quota is spent
// fails its activity at once; the workflow waits for the reset on a
// durable timer when it comes within the worker's --max-quota-wait, then
// runs the activity again, and fails the dataset naming the reset when it
// does not.
func TestDailyIngestWaitsForQuotaReset(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	start := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	var a *activities.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.Plan, mock.Anything, activities.PlanInput{}).Return([]activities.PlanItem{
		{Dataset: "soon", Provider: "datago"}, {Dataset: "late", Provider: "datago"},
	}, nil)
	quota := func(reset time.Time) error {
		return temporal.NewNonRetryableApplicationError("datago: quota exhausted", ratelimit.ErrTypeQuotaExhausted, nil,
			ratelimit.QuotaWait{ResetAt: reset, MaxWait: 5 * time.Hour})
	}
	var soonCalls []time.Time
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "soon", From: "2026-11-27"}).Return(
		func(context.Context, activities.IngestInput) (activities.IngestResult, error) {
			soonCalls = append(soonCalls, env.Now())
			if len(soonCalls) == 1 {
				return activities.IngestResult{}, quota(start.Add(4 * time.Hour)) // midnight KST
			}
			return activities.IngestResult{Dataset: "soon", Provider: "datago", Key: "k", Attempt: 1}, nil
		})
	lateCalls := 0
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "late", From: "2026-11-27"}).Return(
		func(context.Context, activities.IngestInput) (activities.IngestResult, error) {
			lateCalls++
			// Spent until the day after: beyond the five hours allowed.
			return activities.IngestResult{}, quota(start.Add(28 * time.Hour))
		})
	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Date: "2026-11-27"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, err %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res workflows.DailyIngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	got := map[string]workflows.DatasetResult{}
	for _, r := range res.Results {
		got[r.Dataset] = r
	}
	if r := got["soon"]; r.Status != workflows.StatusOK || len(soonCalls) != 2 || soonCalls[1].Before(start.Add(4*time.Hour)) {
		t.Errorf("soon: %+v after calls at %v; want ok, run again after the reset at %v", r, soonCalls, start.Add(4*time.Hour))
	}
	if r := got["late"]; r.Status != workflows.StatusFailed || r.ErrorType != ratelimit.ErrTypeQuotaExhausted || lateCalls != 1 {
		t.Errorf("late: %+v after %d calls; want failed with quota_exhausted after one", r, lateCalls)
	}
}

// TestDailyIngestRevisionsNeverFailADataset: an object left unchanged is
// not compared, and a failed comparison leaves its dataset ok.
func TestDailyIngestRevisionsNeverFailADataset(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	var a *activities.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.Plan, mock.Anything, activities.PlanInput{}).Return([]activities.PlanItem{
		{Dataset: "fred-dgs10", Provider: "fred"}, {Dataset: "fred-dgs2", Provider: "fred"},
	}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27"}).Return(activities.IngestResult{
		Dataset: "fred-dgs10", Provider: "fred", Key: "k10", Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs2", From: "2026-11-27"}).Return(activities.IngestResult{
		Dataset: "fred-dgs2", Provider: "fred", Key: "k2", Skipped: true, Attempt: 1}, nil)
	var compared []string
	env.OnActivity(a.Revisions, mock.Anything, mock.Anything).Return(activities.RevisionsResult{},
		temporal.NewNonRetryableApplicationError("the lake is unreachable", "bad_input", nil)).Run(func(args mock.Arguments) {
		compared = append(compared, args.Get(1).(activities.RevisionsInput).Key)
	})
	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Date: "2026-11-27"})
	var res workflows.DailyIngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 2 || res.Failed != 0 {
		t.Errorf("result %+v", res)
	}
	if len(compared) != 1 || compared[0] != "k10" {
		t.Errorf("compared %v, want only the landed object k10", compared)
	}
}
