package ratelimit

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/internal/replaycheck"
	"github.com/sluicehq/sluice/ratelimit/ledger"
)

// replayLimiter replays a recorded limiter history of workflows/testdata
// and returns what the comparison of its update answers found.
func replayLimiter(t *testing.T, file string) replaycheck.Result {
	t.Helper()
	res, err := replaycheck.ReplayFile(filepath.Join("..", "workflows", "testdata", file), replaycheck.Options{
		Register: func(r worker.WorkflowReplayer) {
			r.RegisterWorkflowWithOptions(ScopeLimiter, workflow.RegisterOptions{Name: WorkflowName})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLimiterAnswersReplay is the mutation test of the replay comparison
// (workflows.TestReplay): a change to a generation's arithmetic that is
// not a new generation behind a new version — here made in-process, to
// the rules of the generation a history was recorded under — makes its
// replayed acquire answers differ from the recorded ones, and so fails
// CI, although the limiter issues the same commands.
func TestLimiterAnswersReplay(t *testing.T) {
	for _, tc := range []struct {
		file   string
		gen    int
		name   string
		mutate func(*ledger.RuleSet)
	}{
		{"scope-limiter-refill.json", ledger.RulesRefill, "given-back slots dropped", func(r *ledger.RuleSet) { r.Refill = false }},
		{"scope-limiter-window.json", ledger.RulesRefill, "no early sends", func(r *ledger.RuleSet) { r.Ahead = false }},
		{"scope-limiter-window.json", ledger.RulesRefill, "ChainMargin 2 ms → 3 ms", func(r *ledger.RuleSet) { r.ChainMargin += time.Millisecond }},
		{"scope-limiter-window-v2.json", ledger.RulesAhead, "no early sends", func(r *ledger.RuleSet) { r.Ahead = false }},
		{"scope-limiter-window-v1.json", ledger.RulesWindow, "ChainMargin 2 ms → 3 ms", func(r *ledger.RuleSet) { r.ChainMargin += time.Millisecond }},
		{"scope-limiter-window-v1.json", ledger.RulesWindow, "windows ignored", func(r *ledger.RuleSet) { r.Window = false }},
		{"scope-limiter-v6.json", ledger.RulesWindow, "Until only where Late hides it", func(r *ledger.RuleSet) { r.KeepUntil = false }},
		{"scope-limiter-v5.json", ledger.RulesAnswer, "ChainMargin 2 ms → 3 ms", func(r *ledger.RuleSet) { r.ChainMargin += time.Millisecond }},
		{"scope-limiter-v4.json", ledger.RulesChain, "ChainMargin 10 ms → 2 ms (the drift of issue 20)", func(r *ledger.RuleSet) { r.ChainMargin = 2 * time.Millisecond }},
		{"scope-limiter-v3.json", ledger.RulesPriority, "no priorities", func(r *ledger.RuleSet) { r.Priority = false }},
	} {
		t.Run(tc.file+"/"+tc.name, func(t *testing.T) {
			if res := replayLimiter(t, tc.file); len(res.Diffs) != 0 {
				t.Fatalf("unmutated: %d of %d answers differ", len(res.Diffs), res.Recorded)
			}
			restore := ledger.MutateRules(tc.gen, tc.mutate)
			res := replayLimiter(t, tc.file)
			restore()
			if len(res.Diffs) == 0 {
				t.Fatalf("mutated (%s): all %d answers replay unchanged; the comparison misses the change", tc.name, res.Recorded)
			}
			t.Logf("mutated (%s): %d of %d answers differ (%d acquire answers of %d)", tc.name,
				len(res.Diffs), res.Recorded, res.DiffsNamed(AcquireUpdate), res.Names[AcquireUpdate])
		})
	}
}
