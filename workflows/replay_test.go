package workflows_test

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/workflows"
)

// TestReplay replays histories recorded from a real run (go run
// ./workflows/testdata/record) against the current workflow code: a change
// that would break running workflows fails here.
func TestReplay(t *testing.T) {
	for name, file := range map[string]string{
		// Recorded before daily runs compared revisions: replays without
		// them (workflow.GetVersion).
		workflows.DailyIngestName:               "daily-ingest.json",
		workflows.DailyIngestName + "Revisions": "daily-ingest-revisions.json",
		ratelimit.WorkflowName:                  "scope-limiter.json",
		events.WorkflowName:                     "ops-events.json",
		workflows.RefetchName:                   "refetch.json",
		workflows.WatchName:                     "watch.json",
	} {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
			r.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
			r.RegisterWorkflowWithOptions(workflows.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
			r.RegisterWorkflowWithOptions(workflows.OpsEvents, workflow.RegisterOptions{Name: events.WorkflowName})
			r.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", file)); err != nil {
				t.Fatalf("replaying %s: %v", file, err)
			}
		})
	}
}
