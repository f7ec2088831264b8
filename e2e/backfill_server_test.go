//go:build linux

package e2e

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/planner"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

// ownServer starts an embedded Temporal server of the test's own on dir,
// at addr (port 0: a free port), with extra dynamic config.
func ownServer(t *testing.T, dir, addr string, dynamic map[string]any) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: dir, FrontendAddr: addr, UIAddr: embedded.UIOff,
		LogLevel: "error", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DynamicConfig: dynamic})
	if err != nil {
		t.Fatalf("starting the embedded server on %s: %v", dir, err)
	}
	return srv
}

// backfillRun is a backfill started on a cluster, with what checks it.
type backfillRun struct {
	c    *cluster
	id   string
	in   workflows.BackfillInput
	plan *planner.Plan
	run  client.WorkflowRun
	base int64
}

func (c *cluster) startBackfill(ctx context.Context, id string, in workflows.BackfillInput) *backfillRun {
	c.t.Helper()
	from, _ := time.Parse(time.DateOnly, in.From)
	to, _ := time.Parse(time.DateOnly, in.To)
	plan, err := planner.Backfill(reg, planner.Input{From: from, To: to, Datasets: in.Datasets})
	if err != nil {
		c.t.Fatal(err)
	}
	b := &backfillRun{c: c, id: id, in: in, plan: plan}
	b.base = b.requests()
	if b.run, err = c.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.tq}, workflows.BackfillName, in); err != nil {
		c.t.Fatal(err)
	}
	return b
}

// requests counts the simulator's requests over every provider.
func (b *backfillRun) requests() int64 {
	var n int64
	for _, ps := range b.c.sim.Stats().Providers {
		if ps != nil {
			n += ps.Requests
		}
	}
	return n
}

// progress is the backfill's progress query, zero while it does not answer.
func (b *backfillRun) progress(ctx context.Context) workflows.BackfillProgress {
	var p workflows.BackfillProgress
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if v, err := b.c.tc.QueryWorkflow(qctx, b.id, "", workflows.ProgressQuery); err == nil {
		_ = v.Get(&p)
	}
	return p
}

// checkLake fails the test unless every planned chunk has an ok (or
// no-data) manifest entry whose object verifies.
func (b *backfillRun) checkLake(ctx context.Context) {
	t := b.c.t
	t.Helper()
	lake := b.c.openLake()
	verifier, ok := lake.(interface {
		Verify(ctx context.Context, key string) error
	})
	if !ok {
		t.Fatalf("the lake (%T) cannot verify its objects", lake)
	}
	entries := map[string]map[[2]string]manifest.Entry{}
	for _, ds := range b.in.Datasets {
		ms, err := manifest.Dataset(ctx, lake, ds)
		if err != nil {
			t.Fatal(err)
		}
		entries[ds] = manifest.Latest(ms)
	}
	for _, ch := range b.plan.Chunks {
		e, ok := entries[ch.Dataset][[2]string{ch.From, ch.To}]
		if ok && e.Status == manifest.StatusNoData {
			continue
		}
		if !ok || e.Status != manifest.StatusOK || e.Key == "" {
			t.Errorf("%s %s..%s: manifest entry %+v (present %v)", ch.Dataset, ch.From, ch.To, e, ok)
			continue
		}
		if err := verifier.Verify(ctx, e.Key); err != nil {
			t.Errorf("%s: %v", e.Key, err)
		}
	}
}

// checkDone fails the test unless the result counts every planned chunk
// ok or without data, none failed.
func (b *backfillRun) checkDone(res workflows.BackfillProgress) {
	b.c.t.Helper()
	if res.State != workflows.BackfillDone || res.Counts.OK+res.Counts.NoData != len(b.plan.Chunks) || res.Counts.OK == 0 ||
		res.Counts.Failed != 0 || res.Counts.Total != len(b.plan.Chunks) {
		b.c.t.Fatalf("result = %+v, plan %d chunks", res.Counts, len(b.plan.Chunks))
	}
}

// TestBackfillParentContinuesAsNew runs a backfill on a server that
// suggests continue-as-new after a few dozen events, so that the parent
// (and its dataset workflows) continue as new many times mid-run, with
// children started by one run reporting to the next. It checks: the
// parent ran at least three times; the done count seen by the progress
// query never went back across runs; every planned call was made once,
// no more; the result counts every chunk; every chunk's object is in the
// lake and verifies.
func TestBackfillParentContinuesAsNew(t *testing.T) {
	t.Parallel()
	srv := ownServer(t, t.TempDir(), "127.0.0.1:0", map[string]any{"limit.historyCount.suggestContinueAsNew": 25})
	t.Cleanup(func() { _ = srv.Stop() })
	c := newCluster(t, clusterOptions{workers: 2, temporal: srv.FrontendHostPort()})
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	in := workflows.BackfillInput{From: "2016-01-01", To: "2021-12-31",
		Datasets: []string{"ecos-731y001-0000001", "fred-dgs2", "upbit-krw-btc", "fred-dgs10", "ecos-722y001-0101000"}}
	b := c.startBackfill(ctx, "backfill-can", in)

	done := make(chan struct{})
	type seen struct{ runs, done int }
	var polls []seen
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if p := b.progress(ctx); p.Runs > 0 {
				polls = append(polls, seen{p.Runs, p.Counts.Done})
				if p.State == workflows.BackfillDone {
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	var res workflows.BackfillProgress
	if err := b.run.Get(ctx, &res); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	cancel()
	<-done
	made := b.requests() - b.base
	t.Logf("backfill: %d chunks, parent runs %d, planned calls %d, calls made %d, %d progress polls", res.Counts.Total, res.Runs, b.plan.Totals.Calls, made, len(polls))
	b.checkDone(res)
	if res.Runs < 3 {
		t.Fatalf("parent runs = %d, want continued as new at least twice", res.Runs)
	}
	runsSeen := map[int]bool{}
	for i, s := range polls {
		runsSeen[s.runs] = true
		if i > 0 && (s.done < polls[i-1].done || s.runs < polls[i-1].runs) {
			t.Errorf("progress went back: %+v after %+v", s, polls[i-1])
		}
	}
	if len(runsSeen) < 2 {
		t.Errorf("the progress query saw runs %v, want several", runsSeen)
	}
	if made != int64(b.plan.Totals.Calls) {
		t.Errorf("calls made = %d, planned %d: want each once", made, b.plan.Totals.Calls)
	}
	b.checkLake(context.Background())
}

// TestBackfillServerRestart stops the Temporal server mid-backfill and
// starts it again on the same data directory and address, with the worker
// processes left running. It checks: the backfill completes with every
// chunk ok (or without data) and none failed; every chunk's object is in
// the lake and verifies; the provider calls the simulator counted are the
// planned ones plus at most the retries of the ingests in flight at the
// stop (a window of four a dataset, two pages each at most).
func TestBackfillServerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := ownServer(t, dir, "127.0.0.1:0", nil)
	addr := srv.FrontendHostPort()
	t.Cleanup(func() { _ = srv.Stop() })
	// UPBIT bodies stream slowly, so ingests are in flight at the stop.
	slow := []simulator.Fault{{Provider: "upbit", SlowBody: 20000}}
	c := newCluster(t, clusterOptions{workers: 2, temporal: addr, faults: slow})
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	in := workflows.BackfillInput{From: "2016-01-01", To: "2021-12-31",
		Datasets: []string{"ecos-731y001-0000001", "fred-dgs2", "upbit-krw-btc"}}
	b := c.startBackfill(ctx, "backfill-restart", in)
	waitFor(t, 3*time.Minute, "a quarter of the chunks done", func() bool {
		p := b.progress(ctx)
		return p.Counts.Total > 0 && p.Counts.Done*4 >= p.Counts.Total
	})
	before := b.progress(ctx)
	if err := srv.Stop(); err != nil {
		t.Fatalf("stopping the server: %v", err)
	}
	t.Logf("stopped the server at %d/%d chunks", before.Counts.Done, before.Counts.Total)
	if before.Counts.Done >= before.Counts.Total {
		t.Fatalf("the backfill was done before the stop: %+v", before.Counts)
	}
	time.Sleep(3 * time.Second) // the workers' calls to the server fail meanwhile
	srv = ownServer(t, dir, addr, nil)
	if err := c.checkWorkers(); err != nil {
		t.Fatal(err)
	}
	var res workflows.BackfillProgress
	if err := c.tc.GetWorkflow(ctx, b.id, "").Get(ctx, &res); err != nil {
		t.Fatalf("backfill: %v", err)
	}
	made := b.requests() - b.base
	t.Logf("backfill: %d chunks, planned calls %d, calls made %d, parent runs %d", res.Counts.Total, b.plan.Totals.Calls, made, res.Runs)
	b.checkDone(res)
	if limit := int64(b.plan.Totals.Calls) + 4*int64(len(in.Datasets))*2; made < int64(b.plan.Totals.Calls) || made > limit {
		t.Errorf("calls made = %d, want %d planned plus at most %d retries", made, b.plan.Totals.Calls, limit-int64(b.plan.Totals.Calls))
	}
	b.checkLake(context.Background())
}

// lakeKeys lists the backfill's objects in the lake: its manifests and
// each chunk's object, and counts the chunks with one. Two chunks naming
// one object fail the test.
func (b *backfillRun) lakeKeys(ctx context.Context) (map[string]bool, int) {
	t := b.c.t
	t.Helper()
	lake := b.c.openLake()
	keys, chunkKeys := map[string]bool{}, map[string]bool{}
	for _, ds := range b.in.Datasets {
		err := lake.List(ctx, manifest.DatasetPrefix(ds), func(o sink.Object) error {
			keys[o.Key] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := manifest.Dataset(ctx, lake, ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range manifest.Latest(ms) {
			if e.Key == "" {
				continue
			}
			if chunkKeys[e.Key] {
				t.Errorf("%s: two chunks share the object %s", ds, e.Key)
			}
			chunkKeys[e.Key], keys[e.Key] = true, true
		}
	}
	return keys, len(chunkKeys)
}
