package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/workflows"
)

// TestBackfillStartRejectsBadFlags: bad dates and modes fail before any
// connection, naming the flag and value.
func TestBackfillStartRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "2016/01/01", "--to", "2026-08-31"}, `--from "2016/01/01"`},
		{[]string{"--from", "2016-01-01", "--to", "31.08.2026"}, `--to "31.08.2026"`},
		{[]string{"--from", "2026-01-01", "--to", "2016-08-31"}, "before --from"},
		{[]string{"--from", "2016-01-01", "--to", "2026-08-31", "--reprocess", "some"}, `--reprocess "some"`},
	} {
		// --temporal points nowhere: reaching it would be a dial error.
		args := append([]string{"backfill", "start", "--temporal", "127.0.0.1:1"}, tc.args...)
		_, _, err := runCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestBackfillIDIsStable: the same selection gets the same id, another
// selection another.
func TestBackfillIDIsStable(t *testing.T) {
	a := workflows.BackfillInput{From: "2016-01-01", To: "2026-08-31", Providers: []string{"ecos"}}
	b := a
	c := a
	c.Providers = []string{"fred"}
	if backfillID(a) != backfillID(b) || backfillID(a) == backfillID(c) || !strings.HasPrefix(backfillID(a), "backfill-2016-01-01-2026-08-31-") {
		t.Errorf("ids %s %s %s", backfillID(a), backfillID(b), backfillID(c))
	}
}

// TestProgressLine shows chunks, calls, bytes, ETA and state.
func TestProgressLine(t *testing.T) {
	p := workflows.BackfillProgress{State: "waiting for quota until 2026-12-02T00:00:01+09:00", Percent: 50,
		ETA: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	p.Counts.Total, p.Counts.Done, p.Counts.Failed, p.Counts.Skipped = 10, 5, 1, 2
	p.Counts.Calls, p.Counts.PlannedCalls, p.Counts.Bytes = 7, 20, 3<<20
	line := progressLine(p)
	for _, want := range []string{"############............", "50.0%", "chunks 5/10 (1 failed, 2 skipped)", "calls 7/20", "3.0 MiB", "ETA 2026-12-0", "waiting for quota until"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
}
