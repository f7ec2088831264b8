package workflows_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/replaycheck"
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
	opts := map[string]replaycheck.Options{
		// Protocol 1: grants were bare times; run ids, the decrease
		// horizon and grant ids came later (LimiterProtocol).
		//
		// Its one penalty was answered by the protocol-0 backoff (the
		// rate halved, with a cooldown and a recovery step in the run's
		// input); the AIMD backoff (7601c42) replaced it without a
		// version, and a protocol-0 run replays its penalties with AIMD.
		// Known, not reconstructed: no protocol-0 run can still be open
		// (each continued as new into protocol 2 within its 1,000
		// updates).
		"scope-limiter-v1.json": {Added: []string{"run_id", "decrease_horizon", "id"}, Upgrade: grantsAsTimes,
			Known: map[string]string{"e6b53a38-1059-4054-91af-8d2efe281b3b": "protocol-0 backoff"}},
	}
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
		// A limiter recorded with the first chained arithmetic
		// (RulesChain: a 10 ms margin, a fixed lead), before "limiter-rules".
		ratelimit.WorkflowName + "4": "scope-limiter-v4.json",
		// A limiter recorded with the answer-anchored chain (RulesAnswer,
		// "limiter-rules" 1), before windowed asks.
		ratelimit.WorkflowName + "5": "scope-limiter-v5.json",
		// A limiter recorded before chained grants could leave before
		// their time ("limiter-rules" 2, RulesWindow).
		ratelimit.WorkflowName + "6": "scope-limiter-v6.json",
		// A limiter recorded before given-back slots were taken over
		// ("limiter-rules" 4, RulesAhead).
		ratelimit.WorkflowName + "7": "scope-limiter-v7.json",
		// A limiter driven to give chained grants and answer windowed
		// asks, whatever the batch's timing: under RulesRefill, and as
		// recorded under RulesAhead and RulesWindow.
		ratelimit.WorkflowName + "/window":  "scope-limiter-window.json",
		ratelimit.WorkflowName + "/window2": "scope-limiter-window-v2.json",
		ratelimit.WorkflowName + "/window1": "scope-limiter-window-v1.json",
		// A limiter driven to take a given-back slot over (RulesRefill).
		ratelimit.WorkflowName + "/refill": "scope-limiter-refill.json",
		events.WorkflowName + "1":          "ops-events-v1.json",
		workflows.RefetchName:              "refetch.json",
		// A daily run that compared revisions (the histories above were
		// recorded before it did, and replay without them:
		// workflow.GetVersion "revisions"), and a watch.
		workflows.DailyIngestName + "Revisions":  "daily-ingest-revisions.json",
		workflows.WatchName:                      "watch.json",
		workflows.DailyIngestName + "/scheduled": "daily-scheduled.json",
	} {
		t.Run(name, func(t *testing.T) {
			opt := opts[file]
			opt.Register = registerAll
			replayAnswers(t, file, opt)
		})
	}
}

// grantsAsTimes turns the grants of a protocol-1 acquire answer, bare
// times, into grants of the current protocol with that time.
func grantsAsTimes(name string, answer any) any {
	m, ok := answer.(map[string]any)
	if name != ratelimit.AcquireUpdate || !ok {
		return answer
	}
	if gs, ok := m["grants"].([]any); ok {
		for i, g := range gs {
			if at, ok := g.(string); ok {
				gs[i] = map[string]any{"at": at}
			}
		}
	}
	return answer
}

// registerAll registers the workflows the TestReplay histories run.
func registerAll(r worker.WorkflowReplayer) {
	r.RegisterWorkflowWithOptions(workflows.DailyIngest, workflow.RegisterOptions{Name: workflows.DailyIngestName})
	r.RegisterWorkflowWithOptions(workflows.Refetch, workflow.RegisterOptions{Name: workflows.RefetchName})
	r.RegisterWorkflowWithOptions(ratelimit.ScopeLimiter, workflow.RegisterOptions{Name: ratelimit.WorkflowName})
	r.RegisterWorkflowWithOptions(events.Workflow, workflow.RegisterOptions{Name: events.WorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
}

// replayAnswers replays testdata/file and fails unless it replays and
// every update answer it recorded is given again, unchanged: a change to
// what a workflow answers that is not behind workflow.GetVersion fails
// here even when it issues the same commands.
func replayAnswers(t *testing.T, file string, opt replaycheck.Options) replaycheck.Result {
	t.Helper()
	res, err := replaycheck.ReplayFile(filepath.Join("testdata", file), opt)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range res.Diffs {
		if i == 3 {
			t.Errorf("… and %d more", len(res.Diffs)-3)
			break
		}
		t.Errorf("update %s (%s) answered differently on replay:\nrecorded %s\nreplayed %s", d.UpdateID, d.Name, d.Recorded, d.Replayed)
	}
	if len(res.Diffs) > 0 {
		t.Errorf("%s: %d of %d recorded update answers differ on replay (per update: %v)", file, len(res.Diffs), res.Recorded, res.Names)
	}
	if res.Compared != res.Recorded {
		t.Errorf("%s: %d of %d recorded update answers replayed", file, res.Compared, res.Recorded)
	}
	for _, d := range res.Known {
		t.Logf("update %s (%s) differs, known (%s): recorded %s, replayed %s", d.UpdateID, d.Name, opt.Known[d.UpdateID], d.Recorded, d.Replayed)
	}
	t.Logf("%s: %d update answers compared, %d differ, %d known to differ", file, res.Compared, len(res.Diffs), len(res.Known))
	return res
}

// TestReplayNotifier replays recorded notifier histories and compares
// the notifications each scheduled for delivery (the NotifyDeliver
// activities' inputs: which changes, grouped how, titled what, for which
// sink) with what the replayed code schedules: the notifier answers no
// update, so these are its recorded answers. notifier-v1.json was
// recorded before the per-provider groups (workflow.GetVersion
// "notifier-provider-groups"), notifier-v2.json with them (version 1),
// before a provider's own down and recovery (2) and the groups' times
// carried across continue-as-new (3).
func TestReplayNotifier(t *testing.T) {
	for _, file := range []string{"notifier.json", "notifier-v2.json", "notifier-v1.json"} {
		t.Run(file, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join("testdata", file)); err != nil {
				t.Fatal(err)
			}
			res := replayAnswers(t, file, notifierReplay)
			if res.Names["NotifyDeliver"] < 3 {
				t.Errorf("%s: %d notifications compared, want the 3 recorded", file, res.Names["NotifyDeliver"])
			}
		})
	}
}

var notifierReplay = replaycheck.Options{
	Register: func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName})
	},
	Activities: []string{"NotifyDeliver"},
}

// TestReplayNotifierSeesAChangedNotification: the comparison can fail — a
// copy of the history whose first notification's title was edited
// replays (same commands) but differs in that one input.
func TestReplayNotifierSeesAChangedNotification(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "notifier.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Payloads are base64 JSON: edit the decoded title and encode back.
	edited, n := editPayloads(t, data, "kis down: 3 of 3 datasets", "kis: 3 datasets down")
	if n != 1 {
		t.Fatalf("%d recorded payloads hold the title, want 1", n)
	}
	path := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := replaycheck.ReplayFile(path, notifierReplay)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diffs) != 1 || res.Diffs[0].Name != "NotifyDeliver" {
		t.Fatalf("diffs %+v, want the edited notification", res.Diffs)
	}
}

// editPayloads replaces old by new inside every base64 "data" payload of
// a JSON history and returns it with how many payloads changed.
func editPayloads(t *testing.T, history []byte, old, new string) ([]byte, int) {
	t.Helper()
	re := regexp.MustCompile(`"data":\s*"([A-Za-z0-9+/=]+)"`)
	n := 0
	out := re.ReplaceAllFunc(history, func(m []byte) []byte {
		sub := re.FindSubmatch(m)
		raw, err := base64.StdEncoding.DecodeString(string(sub[1]))
		if err != nil || !bytes.Contains(raw, []byte(old)) {
			return m
		}
		n++
		return []byte(`"data": "` + base64.StdEncoding.EncodeToString(bytes.ReplaceAll(raw, []byte(old), []byte(new))) + `"`)
	})
	return out, n
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
			replayAnswers(t, file, replaycheck.Options{
				Register: func(r worker.WorkflowReplayer) {
					r.RegisterWorkflowWithOptions(workflows.Backfill, workflow.RegisterOptions{Name: workflows.BackfillName})
					r.RegisterWorkflowWithOptions(workflows.BackfillDataset, workflow.RegisterOptions{Name: workflows.BackfillDatasetName})
				},
				OriginalExecution: workflow.Execution{ID: id},
			})
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
	replayAnswers(t, "token-keeper.json", replaycheck.Options{
		Register: func(r worker.WorkflowReplayer) {
			r.RegisterWorkflowWithOptions(workflows.TokenKeeper, workflow.RegisterOptions{Name: tokenkeeper.WorkflowName})
		},
		DataConverter: c.DataConverter(), FailureConverter: c.FailureConverter(),
	})
}
