package workflows_test

import (
	"context"
	"strings"
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
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
		Dataset: "fred-dgs10", Provider: "fred", Key: "provider=fred/job=fred-dgs10/year=2026/fred-dgs10_20261127.json.zst",
		RawBytes: 100, CompressedBytes: 50, SHA256: "ab", Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "kis-a", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{},
		temporal.NewNonRetryableApplicationError("kis kis-a: auth_failed EGW00121: invalid token", "auth_failed", nil))
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "ecos-m", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
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

// TestLogicalDate: a scheduled run ingests the day before its nominal
// time's date in the provider's calendar — whatever the UTC date, across
// month and year ends and on the days America/Chicago changes its clocks.
func TestLogicalDate(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	chicago, _ := time.LoadLocation("America/Chicago")
	for _, tc := range []struct {
		nominal time.Time
		loc     *time.Location
		want    string
	}{
		{time.Date(2026, 12, 1, 9, 0, 0, 0, seoul), seoul, "2026-11-30"}, // 2026-12-01T00:00Z
		{time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC), time.UTC, "2026-11-30"},
		{time.Date(2027, 1, 1, 8, 0, 0, 0, seoul), seoul, "2026-12-31"},     // 2026-12-31T23:00Z: the UTC date is still the 31st
		{time.Date(2024, 3, 1, 7, 0, 0, 0, chicago), chicago, "2024-02-29"}, // a leap day
		{time.Date(2026, 3, 8, 7, 0, 0, 0, chicago), chicago, "2026-03-07"}, // spring forward: 12:00Z, not 13:00Z
		{time.Date(2026, 3, 9, 7, 0, 0, 0, chicago), chicago, "2026-03-08"},
		{time.Date(2026, 11, 1, 7, 0, 0, 0, chicago), chicago, "2026-10-31"}, // fall back: 13:00Z
		{time.Date(2026, 11, 1, 0, 30, 0, 0, chicago), chicago, "2026-10-31"},
		{time.Date(2026, 12, 1, 23, 30, 0, 0, chicago), chicago, "2026-11-30"}, // 2026-12-02T05:30Z
	} {
		if got := workflows.LogicalDate(tc.nominal.UTC(), tc.loc); got != tc.want {
			t.Errorf("LogicalDate(%s in %s) = %s, want %s", tc.nominal.UTC().Format(time.RFC3339), tc.loc, got, tc.want)
		}
	}
}

// TestScheduledRunTakesItsNominalDate: a run a schedule starts carries no
// date; it reads its nominal time (TemporalScheduledStartTime) and
// ingests the day before it in the schedule's timezone — not the test
// environment's clock, which says another day.
func TestScheduledRunTakesItsNominalDate(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 12, 9, 3, 0, 0, 0, time.UTC)) // a week later: a catch-up or backfill
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	var a *activities.Activities
	env.RegisterActivity(a)
	nominal := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) // 09:00 KST
	if err := env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(workflows.ScheduledStartTime.ValueSet(nominal))); err != nil {
		t.Fatal(err)
	}
	env.OnActivity(a.Plan, mock.Anything, activities.PlanInput{Datasets: []string{"ecos-m"}}).Return([]activities.PlanItem{{Dataset: "ecos-m", Provider: "ecos"}}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "ecos-m", From: "2026-11-30", LookBack: true}).Return(activities.IngestResult{
		Dataset: "ecos-m", Provider: "ecos", Key: "k", WindowFrom: "2026-06-01", WindowTo: "2026-11-30", Attempt: 1}, nil)
	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Datasets: []string{"ecos-m"},
		Schedule: &workflows.ScheduleRun{ID: "sluice-ecos-0900-daily", Timezone: "Asia/Seoul"}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, err %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res workflows.DailyIngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Date != "2026-11-30" || res.Succeeded != 1 || res.Results[0].WindowFrom != "2026-06-01" {
		t.Errorf("result %+v", res)
	}
}

// TestScheduledRunRejectsBadInput: a scheduled input with a date, without
// a nominal time, or with an unknown timezone fails at once, saying why.
func TestScheduledRunRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      workflows.DailyIngestInput
		nominal bool
		want    string
	}{
		{"a date as well", workflows.DailyIngestInput{Date: "2026-11-30", Schedule: &workflows.ScheduleRun{ID: "s", Timezone: "UTC"}}, true, "takes its date from its nominal time"},
		{"no nominal time", workflows.DailyIngestInput{Schedule: &workflows.ScheduleRun{ID: "s", Timezone: "UTC"}}, false, "carries no TemporalScheduledStartTime"},
		{"unknown timezone", workflows.DailyIngestInput{Schedule: &workflows.ScheduleRun{ID: "s", Timezone: "Mars/Olympus"}}, true, `unknown timezone "Mars/Olympus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
			if tc.nominal {
				_ = env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(workflows.ScheduledStartTime.ValueSet(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))))
			}
			env.ExecuteWorkflow(workflows.DailyIngestName, tc.in)
			var app *temporal.ApplicationError
			if err := env.GetWorkflowError(); err == nil || !errorsAs(err, &app) || app.Type() != activities.ErrTypeBadInput || !strings.Contains(app.Error(), tc.want) {
				t.Fatalf("err = %v, want bad_input saying %q", err, tc.want)
			}
		})
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
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "soon", From: "2026-11-27", LookBack: true}).Return(
		func(context.Context, activities.IngestInput) (activities.IngestResult, error) {
			soonCalls = append(soonCalls, env.Now())
			if len(soonCalls) == 1 {
				return activities.IngestResult{}, quota(start.Add(4 * time.Hour)) // midnight KST
			}
			return activities.IngestResult{Dataset: "soon", Provider: "datago", Key: "k", Attempt: 1}, nil
		})
	lateCalls := 0
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "late", From: "2026-11-27", LookBack: true}).Return(
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
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
		Dataset: "fred-dgs10", Provider: "fred", Key: "k10", Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs2", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
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

// TestDailyIngestProgressCountsDoneDatasets: while a landed object's
// revisions are still being compared, the progress query counts the
// dataset neither done nor succeeded; every dataset counted succeeded,
// no data or failed is done (it once said 193 succeeded of 192 done).
func TestDailyIngestProgressCountsDoneDatasets(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	var a *activities.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.Plan, mock.Anything, activities.PlanInput{}).Return([]activities.PlanItem{
		{Dataset: "fred-dgs10", Provider: "fred"}, {Dataset: "ecos-m", Provider: "ecos"},
	}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "fred-dgs10", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
		Dataset: "fred-dgs10", Provider: "fred", Key: "k10", Attempt: 1}, nil)
	env.OnActivity(a.Ingest, mock.Anything, activities.IngestInput{Dataset: "ecos-m", From: "2026-11-27", LookBack: true}).Return(activities.IngestResult{
		Dataset: "ecos-m", Provider: "ecos", NoData: true, Attempt: 1}, nil)
	env.OnActivity(a.Revisions, mock.Anything, mock.Anything).After(time.Hour).Return(activities.RevisionsResult{Revisions: 1}, nil)
	var mid workflows.Progress
	queried := false
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.ProgressQuery)
		if err != nil {
			t.Errorf("querying progress: %v", err)
			return
		}
		if err := v.Get(&mid); err != nil {
			t.Errorf("decoding progress: %v", err)
			return
		}
		queried = true
	}, 30*time.Minute)
	env.ExecuteWorkflow(workflows.DailyIngestName, workflows.DailyIngestInput{Date: "2026-11-27"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, err %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if !queried {
		t.Fatal("the progress query never ran")
	}
	want := workflows.Progress{Total: 2, Done: 1, NoData: 1}
	if mid != want {
		t.Errorf("progress while fred-dgs10's revisions are compared = %+v, want %+v", mid, want)
	}
	var res workflows.DailyIngestResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 1 || res.NoData != 1 || res.Failed != 0 {
		t.Errorf("result %+v", res)
	}
}

// TestRevisionsActivityHeartbeats: the Revisions activity has a heartbeat
// timeout well inside its start-to-close, so a worker killed mid-compare
// frees its dataset within it (the activity heartbeats every 5 s).
func TestRevisionsActivityHeartbeats(t *testing.T) {
	o := workflows.RevisionsActivityOptions
	if o.HeartbeatTimeout <= 0 || o.HeartbeatTimeout > o.StartToCloseTimeout/4 {
		t.Errorf("RevisionsActivityOptions: heartbeat timeout %v, start-to-close %v; want a heartbeat timeout of at most a quarter of it",
			o.HeartbeatTimeout, o.StartToCloseTimeout)
	}
}
