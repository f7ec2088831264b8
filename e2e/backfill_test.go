//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

// TestBackfillKilledAndPaused runs a small real backfill — ECOS, FRED and
// UPBIT datasets, several chunks each — on two worker processes, SIGKILLs
// one mid-run, pauses and resumes the backfill, and checks: the run
// completes with every chunk ok; the provider calls the simulator counted
// are the planned calls plus at most the retries of the calls in flight at
// the kill; nothing was called while paused (after the in-flight ingests
// finished); every chunk's object is in the lake and verifies.
func TestBackfillKilledAndPaused(t *testing.T) {
	t.Parallel()
	// UPBIT bodies stream slowly, so ingests are in flight at the kill.
	slow := []simulator.Fault{{Provider: "upbit", SlowBody: 20000}}
	c := newCluster(t, clusterOptions{workers: 2, faults: slow})
	in := workflows.BackfillInput{From: "2016-01-01", To: "2021-12-31",
		Datasets: []string{"ecos-731y001-0000001", "fred-dgs2", "upbit-krw-btc"}}
	from, _ := time.Parse(time.DateOnly, in.From)
	to, _ := time.Parse(time.DateOnly, in.To)
	plan, err := planner.Backfill(reg, planner.Input{From: from, To: to, Datasets: in.Datasets})
	if err != nil {
		t.Fatal(err)
	}
	providers := []string{"ecos", "fred", "upbit"}
	requests := func() int64 {
		st := c.sim.Stats()
		var n int64
		for _, p := range providers {
			if ps := st.Providers[p]; ps != nil {
				n += ps.Requests
			}
		}
		return n
	}
	base := requests()
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	const id = "backfill-e2e"
	run, err := c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.tq}, workflows.BackfillName, in)
	if err != nil {
		t.Fatal(err)
	}
	progress := func() workflows.BackfillProgress {
		var p workflows.BackfillProgress
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
		defer qcancel()
		v, err := c.tc.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
		if err == nil {
			_ = v.Get(&p)
		}
		return p
	}
	waitFor(t, 3*time.Minute, "a quarter of the chunks done", func() bool {
		if err := c.checkWorkers(); err != nil {
			t.Fatal(err)
		}
		p := progress()
		return p.Counts.Total > 0 && p.Counts.Done*4 >= p.Counts.Total
	})
	before := progress()
	c.kill(c.workers[0])
	t.Logf("killed %s at %d/%d chunks", c.workers[0].name, before.Counts.Done, before.Counts.Total)
	if before.Counts.Done >= before.Counts.Total {
		t.Fatalf("the backfill was done before the kill: %+v", before.Counts)
	}

	if err := c.tc.SignalWorkflow(ctx, id, "", workflows.PauseSignal, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the backfill paused", func() bool { return progress().State == workflows.BackfillPaused })
	// In-flight ingests may finish — the killed worker's are retried
	// after their 20 s heartbeat timeout — then nothing is called.
	var quiet int64
	waitFor(t, 3*time.Minute, "no call for 25 s while paused", func() bool {
		n := requests()
		time.Sleep(25 * time.Second)
		quiet = requests()
		return quiet == n
	})
	time.Sleep(5 * time.Second)
	if n := requests(); n != quiet {
		t.Fatalf("%d calls while paused", n-quiet)
	}
	paused := progress()
	if paused.Counts.Done >= paused.Counts.Total {
		// The chunks in flight at the pause were all there was: the
		// backfill completes without a resume.
		t.Logf("every chunk finished before the pause took hold (%+v)", paused.Counts)
	} else if err := c.tc.SignalWorkflow(ctx, id, "", workflows.ResumeSignal, nil); err != nil {
		t.Fatal(err)
	}
	var res workflows.BackfillProgress
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	made := requests() - base
	t.Logf("backfill: %d chunks, planned calls %d, calls made %d, runs %d, largest history %d (estimate %d)",
		res.Counts.Total, plan.Totals.Calls, made, res.Runs, res.MaxHistory, res.MaxEstimated)
	if res.State != workflows.BackfillDone || res.Counts.OK+res.Counts.NoData != len(plan.Chunks) || res.Counts.OK == 0 || res.Counts.Failed != 0 {
		t.Fatalf("result = %+v, plan %d chunks", res.Counts, len(plan.Chunks))
	}
	// Calls: the planned ones, plus the retries of those in flight at the
	// kill (at most four ingests a dataset, a few pages each).
	if made < int64(plan.Totals.Calls) || made > int64(plan.Totals.Calls)+4*int64(len(in.Datasets))*2 {
		t.Errorf("calls made = %d, planned %d", made, plan.Totals.Calls)
	}
	lake, err := sink.OpenLocalExisting(filepath.Join(c.dataDir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range in.Datasets {
		ms, err := manifest.Dataset(ctx, lake, ds)
		if err != nil {
			t.Fatal(err)
		}
		entries := manifest.Latest(ms)
		for _, ch := range plan.Chunks {
			if ch.Dataset != ds {
				continue
			}
			e, ok := entries[[2]string{ch.From, ch.To}]
			if ok && e.Status == manifest.StatusNoData {
				continue // the simulator has no rows for the range: nothing stored
			}
			if !ok || e.Status != manifest.StatusOK || e.Key == "" {
				t.Errorf("%s %s..%s: manifest entry %+v (present %v)", ds, ch.From, ch.To, e, ok)
				continue
			}
			if err := lake.Verify(ctx, e.Key); err != nil {
				t.Errorf("%s: %v", e.Key, err)
			}
		}
	}
	// A second backfill of the same range calls no provider.
	again := requests()
	run2, err := c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id + "-again", TaskQueue: c.tq}, workflows.BackfillName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res2 workflows.BackfillProgress
	if err := run2.Get(ctx, &res2); err != nil {
		t.Fatal(err)
	}
	if n := requests() - again; n != 0 || res2.Counts.Skipped != len(plan.Chunks) {
		t.Errorf("second backfill: %d calls, %+v; want none, every chunk skipped", n, res2.Counts)
	}
}
