package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/workflows"
)

// TestWriteSummary pins the batch summary: a row per provider (sorted),
// the total summing them (elapsed the longest, the bound the longest),
// the violations of the providers' scopes with the first one's calls (a
// make run once reported 1 ECOS violation and nothing to tell whether the
// call was sent early or counted late), and the failed datasets.
func TestWriteSummary(t *testing.T) {
	start := time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC)
	res := workflows.DailyIngestResult{
		Date:     "2026-08-03",
		Started:  start,
		Finished: start.Add(9 * time.Second),
		Results: []workflows.DatasetResult{
			{Dataset: "fred.dgs10", Provider: "fred", Status: workflows.StatusOK, RawBytes: 4096, CompressedBytes: 1024, Finished: start.Add(2 * time.Second)},
			{Dataset: "ecos.base_rate", Provider: "ecos", Status: workflows.StatusNoData, Finished: start.Add(3 * time.Second)},
			{Dataset: "fred.unrate", Provider: "fred", Status: workflows.StatusFailed, ErrorType: "Transient", Error: "HTTP 503", Finished: start.Add(5 * time.Second)},
			{Dataset: "ecos.cpi", Provider: "ecos", Status: workflows.StatusOK, RawBytes: 3 << 20, CompressedBytes: 1 << 20, Finished: start.Add(8 * time.Second)},
		},
	}
	stats := &simulator.Stats{Scopes: map[string]*simulator.ScopeStats{
		"fred/key": {Provider: "fred", Violations: 2},
		"ecos/key": {Provider: "ecos", Violations: 1, FirstViolation: &simulator.Violation{Reason: "over_window", Field: "requests_per_second",
			Call:     simulator.Arrival{Kernel: start.Add(3*time.Second + 1500*time.Microsecond), Read: start.Add(3*time.Second + 2*time.Millisecond), Stamped: start.Add(3*time.Second + 2100*time.Microsecond), Dataset: "ecos.cpi"},
			Previous: &simulator.Arrival{Stamped: start.Add(2*time.Second + 3*time.Millisecond), Dataset: "ecos.base_rate"}}},
		"kis/key": {Provider: "kis", Violations: 7}, // no dataset of this batch
	}}
	bounds := map[string]time.Duration{"ecos": 4 * time.Second, "fred": 500 * time.Millisecond}
	var b strings.Builder
	writeSummary(&b, res, stats, bounds)
	want := `  PROVIDER  JOBS  OK  NO DATA  FAILED      RAW  COMPRESSED  RATIO  ELAPSED  BOUND  VS BOUND  VIOLATIONS
      ecos     2   1        1       0  3.0 MiB     1.0 MiB   3.0×       8s     4s     2.00×           1
      fred     2   1        0       1  4.0 KiB     1.0 KiB   4.0×       5s      -         -           2
     total     4   2        1       1  3.0 MiB     1.0 MiB   3.0×       8s     4s     2.00×           3
batch 2026-08-03: 9s elapsed
violation on ecos/key (1 in all): over_window of requests_per_second; the call (ecos.cpi) kernel 00:00:03.001500, read 00:00:03.002000, counted 00:00:03.002100
  the accepted call before it (ecos.base_rate) kernel -, read -, counted 00:00:02.003000

1 dataset(s) failed (re-run them with sluice ingest --date 2026-08-03 --dataset ID):
  fred.unrate [Transient] HTTP 503
`
	if got := b.String(); got != want {
		t.Errorf("writeSummary wrote\n%s\nwant\n%s", got, want)
	}
}
