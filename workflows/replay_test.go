package workflows_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/workflows"
)

// TestReplay replays histories recorded from a real run (go run
// ./workflows/testdata/record) against the current workflow code: a change
// that would break running workflows fails here.
func TestReplay(t *testing.T) {
	// The -v1 histories were recorded before the limiter moved to package
	// ratelimit and learnt to recover its state: runs started by that
	// version must go on under this one.
	for name, file := range map[string]string{
		workflows.DailyIngestName:       "daily-ingest.json",
		ratelimit.WorkflowName:          "scope-limiter.json",
		events.WorkflowName:             "ops-events.json",
		workflows.DailyIngestName + "1": "daily-ingest-v1.json",
		ratelimit.WorkflowName + "1":    "scope-limiter-v1.json",
		// A limiter recorded before priorities, the backfill share and
		// per-grant tolerances (workflow.GetVersion "limiter-priority").
		ratelimit.WorkflowName + "2": "scope-limiter-v2.json",
		// A limiter recorded before chained grants (workflow.GetVersion
		// "limiter-chain").
		ratelimit.WorkflowName + "3": "scope-limiter-v3.json",
		events.WorkflowName + "1":    "ops-events-v1.json",
		workflows.RefetchName:        "refetch.json",
		// A daily run that compared revisions (the histories above were
		// recorded before it did, and replay without them:
		// workflow.GetVersion "revisions"), and a watch.
		workflows.DailyIngestName + "Revisions":  "daily-ingest-revisions.json",
		workflows.WatchName:                      "watch.json",
		workflows.DailyIngestName + "/scheduled": "daily-scheduled.json",
	} {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
			r.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
			r.RegisterWorkflowWithOptions(ratelimit.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
			r.RegisterWorkflowWithOptions(events.Workflow, workflow.RegisterOptions{Name: events.WorkflowName})
			r.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", file)); err != nil {
				t.Fatalf("replaying %s: %v", file, err)
			}
		})
	}
}

// TestReplayBackfill replays a recorded backfill and one of its dataset
// workflows under their recorded ids: the children's ids are made of the
// parent's.
func TestReplayBackfill(t *testing.T) {
	for file, id := range map[string]string{
		"backfill.json":         "record-backfill",
		"backfill-dataset.json": workflows.BackfillDatasetWorkflowID("record-backfill", "fred-dgs2"),
	} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.Backfill, workflow.RegisterOptions{Name: workflows.BackfillName})
			r.RegisterWorkflowWithOptions(workflows.BackfillDataset, workflow.RegisterOptions{Name: workflows.BackfillDatasetName})
			if err := r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: id},
			}); err != nil {
				t.Fatalf("replaying %s: %v", file, err)
			}
		})
	}
}

// TestReplayTokenKeeper replays a recorded token keeper's history, whose
// payloads are sealed with the test key in testdata/token-keeper.key: the
// replayer opens them with the same codec the workers use.
func TestReplayTokenKeeper(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "token-keeper.key"))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := codec.ParseKeyring("testdata/token-keeper.key", string(text))
	if err != nil {
		t.Fatal(err)
	}
	c, err := codec.New(ring)
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: c.DataConverter(), FailureConverter: c.FailureConverter()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(workflows.TokenKeeper, workflow.RegisterOptions{Name: tokenkeeper.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "token-keeper.json")); err != nil {
		t.Fatalf("replaying token-keeper.json: %v", err)
	}
}
