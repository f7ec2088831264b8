package workflows

// SetBackfillBounds lowers a backfill's per-run bounds for a test and
// returns a function restoring them.
func SetBackfillBounds(chunksPerRun, budget int) func() {
	oc, ob := maxChunksPerRun, historyBudget
	maxChunksPerRun, historyBudget = chunksPerRun, budget
	return func() { maxChunksPerRun, historyBudget = oc, ob }
}
