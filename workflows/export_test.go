package workflows

import "time"

// SetBackfillBounds lowers a backfill's per-run bounds for a test — the
// chunks a dataset workflow checks per run, and the estimated events at
// which a dataset workflow and the parent continue as new — and returns
// a function restoring them.
func SetBackfillBounds(chunksPerRun, datasetBudget, parentBudget int) func() {
	oc, od, op := maxChunksPerRun, datasetHistoryBudget, historyBudget
	maxChunksPerRun, datasetHistoryBudget, historyBudget = chunksPerRun, datasetBudget, parentBudget
	return func() { maxChunksPerRun, datasetHistoryBudget, historyBudget = oc, od, op }
}

// SetFlushInterval sets how long a finished chunk may wait unrecorded (0:
// no timed flush) and returns a function restoring it.
func SetFlushInterval(d time.Duration) func() {
	old := flushInterval
	flushInterval = d
	return func() { flushInterval = old }
}

// SetNotifierBatchesPerRun sets the batches a notifier run sends before
// it continues as new and returns a function restoring it.
func SetNotifierBatchesPerRun(n int) func() {
	old := notifierBatchesPerRun
	notifierBatchesPerRun = n
	return func() { notifierBatchesPerRun = old }
}
