package workflows_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/workflows"
)

// backfillHarness runs Backfill in the test environment with the real
// planner, CheckChunks and RecordManifest over a real local lake; only
// Ingest is stubbed, at the activity boundary: it lands one small object
// under the chunk's range key, as the real Ingest does, and counts calls.
type backfillHarness struct {
	t    *testing.T
	ts   testsuite.WorkflowTestSuite
	env  *testsuite.TestWorkflowEnvironment
	reg  *registry.Registry
	lake *sink.Local
	acts *activities.Activities

	failMu sync.Mutex // serializes calls of fail
	mu     sync.Mutex
	calls  map[string]int // dataset from..to → Ingest calls
	// fail, when set, decides a chunk's failure.
	fail func(in activities.IngestInput, n int) error
	// byRun counts the activities each workflow run scheduled.
	byRun map[string]int
}

var backfillRegistry struct {
	once sync.Once
	reg  *registry.Registry
	err  error
}

func defaultRegistry(t *testing.T) *registry.Registry {
	backfillRegistry.once.Do(func() { backfillRegistry.reg, backfillRegistry.err = registry.Default(registry.Options{}) })
	if backfillRegistry.err != nil {
		t.Fatal(backfillRegistry.err)
	}
	return backfillRegistry.reg
}

func newBackfillHarness(t *testing.T, lake *sink.Local) *backfillHarness {
	t.Helper()
	reg := defaultRegistry(t)
	if lake == nil {
		var err error
		if lake, err = sink.NewLocal(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	gate, err := ratelimit.NewGate(ratelimit.GateOptions{Registry: reg, Client: ratelimit.NewClient(nil, ratelimit.ClientOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	acts, err := activities.New(activities.Config{Registry: reg, Sink: lake, Gate: gate, BaseURLs: map[string]string{"*": "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &backfillHarness{t: t, reg: reg, lake: lake, acts: acts, calls: map[string]int{}, byRun: map[string]int{}}
	h.newEnv()
	return h
}

func (h *backfillHarness) newEnv() {
	h.env = h.ts.NewTestWorkflowEnvironment()
	h.env.SetTestTimeout(10 * time.Minute)
	// The race detector on a loaded two-core machine can stretch the
	// parent's fan-out task past the SDK's 1 s deadlock detector ("workflow
	// goroutine root didn't yield for over 1s"), failing a test about
	// chunks, not about task latency.
	h.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	h.env.RegisterWorkflowWithOptions(workflows.Backfill, workflow.RegisterOptions{Name: workflows.BackfillName})
	h.env.RegisterWorkflowWithOptions(backfillDriver, workflow.RegisterOptions{Name: "BackfillDriver"})
	h.env.RegisterWorkflowWithOptions(workflows.BackfillDataset, workflow.RegisterOptions{Name: workflows.BackfillDatasetName})
	h.env.RegisterActivity(h.acts)
	var a *activities.Activities
	h.env.OnActivity(a.Ingest, mock.Anything, mock.Anything).Return(h.ingest)
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converterValues) {
		h.mu.Lock()
		h.byRun[info.WorkflowExecution.RunID]++
		h.mu.Unlock()
	})
}

func (h *backfillHarness) ingest(ctx context.Context, in activities.IngestInput) (activities.IngestResult, error) {
	ds := h.reg.Dataset(in.Dataset)
	if in.Priority != "backfill" {
		return activities.IngestResult{}, fmt.Errorf("ingest of %s asked at priority %q, want backfill", in.Dataset, in.Priority)
	}
	h.mu.Lock()
	k := in.Dataset + " " + in.From + ".." + in.To
	h.calls[k]++
	n := h.calls[k]
	h.mu.Unlock()
	if h.fail != nil {
		// Ingests run concurrently; the tests' fail functions keep
		// state of their own, so they are called one at a time.
		h.failMu.Lock()
		err := h.fail(in, n)
		h.failMu.Unlock()
		if err != nil {
			return activities.IngestResult{Dataset: in.Dataset}, err
		}
	}
	from, _ := time.Parse(time.DateOnly, in.From)
	to, _ := time.Parse(time.DateOnly, in.To)
	key, err := sink.Key(sink.KeySpec{Provider: ds.Provider, Dataset: ds.ID, From: from, To: to, Ext: "json"})
	if err != nil {
		return activities.IngestResult{}, err
	}
	body := fmt.Sprintf(`{"dataset":%q,"from":%q,"to":%q}`, in.Dataset, in.From, in.To)
	put, err := h.lake.Put(ctx, key, bytes.NewReader([]byte(body)), sink.Meta{ContentType: "application/json", Window: sink.Window{From: from, To: to}})
	if err != nil {
		return activities.IngestResult{}, err
	}
	return activities.IngestResult{Dataset: ds.ID, Provider: ds.Provider, Key: put.Key, RawBytes: put.RawSize, CompressedBytes: put.CompressedSize,
		SHA256: put.RawSHA256, Pages: 1, Skipped: put.Skipped, WindowFrom: in.From, WindowTo: in.To, Attempt: 1}, nil
}

func (h *backfillHarness) totalCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		n += c
	}
	return n
}

// backfillDriver runs a Backfill as its child: the test environment
// continues a child as new (not the workflow it starts), and delivers
// signals to children by id.
func backfillDriver(ctx workflow.Context, id string, in workflows.BackfillInput) (workflows.BackfillProgress, error) {
	var p workflows.BackfillProgress
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: id})
	err := workflow.ExecuteChildWorkflow(ctx, workflows.BackfillName, in).Get(ctx, &p)
	return p, err
}

func (h *backfillHarness) start(id string, in workflows.BackfillInput) {
	h.env.ExecuteWorkflow("BackfillDriver", id, in)
}

func (h *backfillHarness) query(id string) (workflows.BackfillProgress, error) {
	var p workflows.BackfillProgress
	v, err := h.env.QueryWorkflowByID(id, workflows.ProgressQuery)
	if err == nil {
		err = v.Get(&p)
	}
	return p, err
}

func (h *backfillHarness) run(id string, in workflows.BackfillInput) workflows.BackfillProgress {
	h.t.Helper()
	h.start(id, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("backfill did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("backfill: %v", err)
	}
	var p workflows.BackfillProgress
	if err := h.env.GetWorkflowResult(&p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *backfillHarness) manifests(dataset string) map[[2]string]manifest.Entry {
	ms, err := manifest.Dataset(context.Background(), h.lake, dataset)
	if err != nil {
		h.t.Fatal(err)
	}
	return manifest.Latest(ms)
}

// small is a backfill of three datasets of different chunkings: yearly
// ECOS, a KIS daily chart (months/quarters) and FRED.
var small = workflows.BackfillInput{From: "2019-01-01", To: "2021-12-31",
	Datasets: []string{"ecos-731y001-0000001", "kis-fx-usdcad", "fred-dgs2"}}

func planned(t *testing.T, h *backfillHarness, in workflows.BackfillInput) activities.PlanBackfillResult {
	t.Helper()
	p, err := h.acts.PlanBackfill(context.Background(), activities.PlanBackfillInput{From: in.From, To: in.To, Providers: in.Providers, Datasets: in.Datasets})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBackfillFansOutEveryChunkOnce: every planned chunk is ingested once
// at backfill priority, lands under its range key and is recorded ok in
// its dataset's manifest; the progress adds up.
func TestBackfillFansOutEveryChunkOnce(t *testing.T) {
	h := newBackfillHarness(t, nil)
	plan := planned(t, h, small)
	p := h.run("bf-1", small)
	if p.State != workflows.BackfillDone || p.Percent != 100 || p.Counts.Total != plan.Chunks || p.Counts.Done != plan.Chunks || p.Counts.OK != plan.Chunks {
		t.Fatalf("progress = %+v, plan %d chunks", p, plan.Chunks)
	}
	if got := h.totalCalls(); got != plan.Chunks || len(h.calls) != plan.Chunks {
		t.Fatalf("ingest calls = %d over %d chunks, want each of %d chunks once", got, len(h.calls), plan.Chunks)
	}
	if len(p.Providers) != 3 || p.Datasets != 3 || p.DatasetsDone != 3 {
		t.Fatalf("providers = %+v", p.Providers)
	}
	for _, d := range plan.Datasets {
		es := h.manifests(d.Dataset)
		if len(es) != d.Chunks {
			t.Fatalf("%s: manifest holds %d chunks, want %d", d.Dataset, len(es), d.Chunks)
		}
		for _, e := range es {
			if e.Status != manifest.StatusOK || e.Key == "" || e.SHA256 == "" || e.Pages != 1 {
				t.Fatalf("%s: entry %+v", d.Dataset, e)
			}
			if _, err := h.lake.Stat(context.Background(), e.Key); err != nil {
				t.Fatalf("%s: object %s: %v", d.Dataset, e.Key, err)
			}
		}
	}
	if p.Counts.Bytes == 0 || p.Counts.Calls != plan.Chunks {
		t.Fatalf("counts = %+v", p.Counts)
	}
}

// TestBackfillReprocessModes: a failed chunk is recorded failed; missing
// redoes it alone (no call for landed chunks), failed redoes only failed
// chunks, all refetches everything (the sink skips unchanged bytes).
func TestBackfillReprocessModes(t *testing.T) {
	h := newBackfillHarness(t, nil)
	plan := planned(t, h, small)
	bad := "kis-fx-usdcad"
	var (
		badMu   sync.Mutex // ingests run concurrently
		badFrom string
	)
	h.fail = func(in activities.IngestInput, n int) error {
		badMu.Lock()
		defer badMu.Unlock()
		if in.Dataset == bad && (badFrom == "" || badFrom == in.From) {
			badFrom = in.From
			return temporal.NewNonRetryableApplicationError("kis: bad_request: no such chart", "bad_request", nil)
		}
		return nil
	}
	p := h.run("bf-a", small)
	if p.Counts.Failed != 1 || p.Counts.OK != plan.Chunks-1 || p.Message == "" {
		t.Fatalf("first run: %+v", p.Counts)
	}
	if e := findEntry(h.manifests(bad), badFrom); e.Status != manifest.StatusFailed || !strings.Contains(e.Error, "no such chart") {
		t.Fatalf("failed entry = %+v", e)
	}

	// missing: only the failed chunk is fetched again.
	h.fail = nil
	before := h.totalCalls()
	h.newEnv()
	p = h.run("bf-b", small)
	if got := h.totalCalls() - before; got != 1 {
		t.Fatalf("reprocess missing made %d calls, want 1 (the failed chunk)", got)
	}
	if p.Counts.Skipped != plan.Chunks-1 || p.Counts.OK != 1 || p.Counts.Failed != 0 {
		t.Fatalf("missing: %+v", p.Counts)
	}
	// missing again: nothing to do, no call.
	before = h.totalCalls()
	h.newEnv()
	if p = h.run("bf-c", small); h.totalCalls() != before || p.Counts.Skipped != plan.Chunks {
		t.Fatalf("second missing: %d calls, %+v", h.totalCalls()-before, p.Counts)
	}

	// failed: fails one chunk again, then redoes only it.
	h.fail = func(in activities.IngestInput, n int) error {
		if in.Dataset == "fred-dgs2" {
			return temporal.NewNonRetryableApplicationError("fred: bad_request", "bad_request", nil)
		}
		return nil
	}
	h.newEnv()
	all := small
	all.Reprocess = activities.ReprocessAll
	before = h.totalCalls()
	p = h.run("bf-d", all)
	if got := h.totalCalls() - before; got != plan.Chunks {
		t.Fatalf("reprocess all made %d calls, want %d", got, plan.Chunks)
	}
	fredChunks := 0
	for _, d := range plan.Datasets {
		if d.Dataset == "fred-dgs2" {
			fredChunks = d.Chunks
		}
	}
	if p.Counts.Failed != fredChunks {
		t.Fatalf("all: %+v, want %d failed", p.Counts, fredChunks)
	}
	h.fail = nil
	h.newEnv()
	failed := small
	failed.Reprocess = activities.ReprocessFailed
	before = h.totalCalls()
	p = h.run("bf-e", failed)
	if got := h.totalCalls() - before; got != fredChunks {
		t.Fatalf("reprocess failed made %d calls, want %d (fred's failed chunks)", got, fredChunks)
	}
	if p.Counts.OK != fredChunks || p.Counts.Skipped != plan.Chunks-fredChunks {
		t.Fatalf("failed: %+v", p.Counts)
	}
}

func findEntry(es map[[2]string]manifest.Entry, from string) manifest.Entry {
	for k, e := range es {
		if k[0] == from {
			return e
		}
	}
	return manifest.Entry{}
}

// TestBackfillRecoversLandedChunks: an object that landed without its
// manifest entry (a worker killed between the two) is recorded from the
// object's metadata, with no provider call.
func TestBackfillRecoversLandedChunks(t *testing.T) {
	h := newBackfillHarness(t, nil)
	in := workflows.BackfillInput{From: "2019-01-01", To: "2021-12-31", Datasets: []string{"ecos-731y001-0000001"}}
	plan := planned(t, h, in)
	// Land the first chunk as Ingest would, recording nothing.
	var chunks []activities.BackfillChunk
	chunks, err := h.acts.PlanChunks(context.Background(), activities.PlanChunksInput{Dataset: in.Datasets[0], From: in.From, To: in.To})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ingest(context.Background(), activities.IngestInput{Dataset: in.Datasets[0], From: chunks[0].From, To: chunks[0].To, Priority: "backfill"}); err != nil {
		t.Fatal(err)
	}
	p := h.run("bf-r", in)
	if h.totalCalls() != plan.Chunks || h.calls[in.Datasets[0]+" "+chunks[0].From+".."+chunks[0].To] != 1 {
		t.Fatalf("calls = %v, want each chunk once", h.calls)
	}
	if p.Counts.Skipped != 1 || p.Counts.OK != plan.Chunks-1 {
		t.Fatalf("counts = %+v", p.Counts)
	}
	if e := findEntry(h.manifests(in.Datasets[0]), chunks[0].From); e.Status != manifest.StatusOK || e.SHA256 == "" || e.Key == "" {
		t.Fatalf("recovered entry = %+v", e)
	}
}

// TestBackfillWaitsForQuota: a chunk that meets a spent daily quota waits
// on a durable timer for the reset the error names, shows "waiting for
// quota until …" meanwhile, and then lands; the backfill never fails for
// quota.
func TestBackfillWaitsForQuota(t *testing.T) {
	h := newBackfillHarness(t, nil)
	in := workflows.BackfillInput{From: "2019-01-01", To: "2021-12-31", Datasets: []string{"ecos-731y001-0000001"}}
	plan := planned(t, h, in)
	var reset time.Time
	h.fail = func(in activities.IngestInput, n int) error {
		if reset.IsZero() {
			reset = h.env.Now().Add(7 * time.Hour)
		}
		if h.env.Now().Before(reset) {
			return temporal.NewNonRetryableApplicationError("ecos: quota_exhausted", ratelimit.ErrTypeQuotaExhausted, nil,
				ratelimit.QuotaWait{ResetAt: reset, MaxWait: time.Minute})
		}
		return nil
	}
	var during workflows.BackfillProgress
	h.env.RegisterDelayedCallback(func() {
		var err error
		if during, err = h.query("bf-q"); err != nil {
			t.Errorf("query: %v", err)
		}
	}, 3*time.Hour)
	p := h.run("bf-q", in)
	if !strings.HasPrefix(during.State, "waiting for quota until ") || !strings.Contains(during.State, reset.Add(time.Second).Format(time.RFC3339)) {
		t.Fatalf("state while waiting = %q", during.State)
	}
	if p.State != workflows.BackfillDone || p.Counts.OK != plan.Chunks || p.Counts.Failed != 0 {
		t.Fatalf("progress = %+v", p)
	}
}

// TestBackfillPauseResume: after pause no new chunk starts until resume;
// then the backfill completes.
func TestBackfillPauseResume(t *testing.T) {
	h := newBackfillHarness(t, nil)
	plan := planned(t, h, small)
	// The first call meets a spent quota until hour 5, so the run is
	// still going when the pause comes at hour 1.
	var reset time.Time
	h.fail = func(in activities.IngestInput, n int) error {
		if reset.IsZero() {
			reset = h.env.Now().Add(5 * time.Hour)
		}
		if h.env.Now().Before(reset) {
			return temporal.NewNonRetryableApplicationError("quota_exhausted", ratelimit.ErrTypeQuotaExhausted, nil, ratelimit.QuotaWait{ResetAt: reset})
		}
		return nil
	}
	var atPause, atResume int
	var paused workflows.BackfillProgress
	h.env.RegisterDelayedCallback(func() { _ = h.env.SignalWorkflowByID("bf-p", workflows.PauseSignal, nil) }, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		atPause = h.totalCalls()
		paused, _ = h.query("bf-p")
	}, 2*time.Hour)
	h.env.RegisterDelayedCallback(func() {
		atResume = h.totalCalls()
		_ = h.env.SignalWorkflowByID("bf-p", workflows.ResumeSignal, nil)
	}, 20*time.Hour)
	p := h.run("bf-p", small)
	if paused.State != workflows.BackfillPaused {
		t.Fatalf("state after pause = %q", paused.State)
	}
	// While paused only the chunks already in flight (waiting for the
	// quota) ran again; the rest waited for resume.
	if extra := atResume - atPause; extra > 3*4 {
		t.Fatalf("%d calls while paused", extra)
	}
	if atResume >= plan.Chunks+12 {
		t.Fatalf("paused run made %d calls before resume, nearly all", atResume)
	}
	if p.State != workflows.BackfillDone || p.Counts.OK != plan.Chunks {
		t.Fatalf("progress = %+v", p)
	}
}

// TestBackfillCancel: cancellation ends the backfill cancelled and every
// chunk recorded is a landed object.
func TestBackfillCancel(t *testing.T) {
	h := newBackfillHarness(t, nil)
	var reset time.Time
	h.fail = func(in activities.IngestInput, n int) error {
		if reset.IsZero() {
			reset = h.env.Now().Add(5 * time.Hour)
		}
		if h.env.Now().Before(reset) {
			return temporal.NewNonRetryableApplicationError("quota_exhausted", ratelimit.ErrTypeQuotaExhausted, nil, ratelimit.QuotaWait{ResetAt: reset})
		}
		return nil
	}
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, time.Hour)
	h.start("bf-x", small)
	if err := h.env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	for _, ds := range small.Datasets {
		for _, e := range h.manifests(ds) {
			if e.Status == manifest.StatusOK {
				if err := h.lake.Verify(context.Background(), e.Key); err != nil {
					t.Fatalf("%s: %v", e.Key, err)
				}
			}
		}
	}
}

// TestBackfillContinueAsNewKeepsProgress: with small per-run bounds the
// dataset workflows continue as new many times; every chunk is still
// fetched once and the counts survive. (The parent's continue-as-new is
// not exercised here: the grandchildren of a child that continues as new
// fail in the test environment; e2e's TestBackfillParentContinuesAsNew
// runs it on the real server.)
func TestBackfillContinueAsNewKeepsProgress(t *testing.T) {
	defer workflows.SetBackfillBounds(5, 60, 1_000_000)()
	h := newBackfillHarness(t, nil)
	plan := planned(t, h, small)
	var runs []workflows.DatasetProgress
	h.env.SetOnChildWorkflowCompletedListener(func(info *workflow.Info, result converter.EncodedValue, err error) {
		var d workflows.DatasetProgress
		if info.WorkflowType.Name == workflows.BackfillDatasetName && result != nil && result.Get(&d) == nil {
			runs = append(runs, d)
		}
	})
	p := h.run("bf-can", small)
	most := 0
	for _, d := range runs {
		most = max(most, d.Runs)
	}
	if most < 3 {
		t.Fatalf("dataset runs = %d, want continued as new", most)
	}
	if got := h.totalCalls(); got != plan.Chunks || len(h.calls) != plan.Chunks {
		t.Fatalf("calls = %d over %d chunks, want %d once each", got, len(h.calls), plan.Chunks)
	}
	if p.Counts.Done != plan.Chunks || p.Counts.OK != plan.Chunks || p.Counts.Skipped != 0 || p.State != workflows.BackfillDone {
		t.Fatalf("progress = %+v", p.Counts)
	}
}

// TestBackfillRejectsBadInput: bad dates, modes and filters fail at once,
// naming the value.
func TestBackfillRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		in   workflows.BackfillInput
		want string
	}{
		{workflows.BackfillInput{From: "2016/01/01", To: "2026-08-31"}, `from "2016/01/01"`},
		{workflows.BackfillInput{From: "2026-01-01", To: "2016-08-31"}, "before from"},
		{workflows.BackfillInput{From: "2016-01-01", To: "2026-08-31", Reprocess: "some"}, `reprocess "some"`},
		{workflows.BackfillInput{From: "2016-01-01", To: "2026-08-31", Providers: []string{"nope"}}, "provider nope"},
	} {
		h := newBackfillHarness(t, nil)
		h.start("bf-bad", tc.in)
		err := h.env.GetWorkflowError()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestBackfillFullRegistryHistory runs the full default registry's plan,
// 2016-01-01..2026-08-31, with Ingest stubbed, and checks no workflow run
// comes near the server's 10,240-event warning: by the workflows' own
// upper-bound count, and by the activities each run scheduled (six events
// each at most, with its workflow task).
func TestBackfillFullRegistryHistory(t *testing.T) {
	// The parent is kept from continuing as new: the test environment
	// stops the grandchildren of a child that does (the real server does
	// not), and this test measures how long its one run grows.
	defer workflows.SetBackfillBounds(800, 7000, 1_000_000)()
	// Timers fired by the test environment's clock while thousands of
	// activities run have hung it; chunks are recorded in batches anyway.
	defer workflows.SetFlushInterval(0)()
	h := newBackfillHarness(t, nil)
	in := workflows.BackfillInput{From: "2016-01-01", To: "2026-08-31"}
	plan := planned(t, h, in)
	p := h.run("bf-full", in)
	if p.Counts.Done != plan.Chunks || p.Counts.OK != plan.Chunks || h.totalCalls() != plan.Chunks {
		t.Fatalf("counts = %+v, calls %d, plan %d chunks", p.Counts, h.totalCalls(), plan.Chunks)
	}
	most := 0
	for _, n := range h.byRun {
		most = max(most, n)
	}
	t.Logf("full registry: %d datasets, %d chunks; parent runs %d; largest estimated history %d events; most activities in one run %d (≤ %d events)",
		len(plan.Datasets), plan.Chunks, p.Runs, p.MaxEstimated, most, 6*most)
	if p.MaxEstimated == 0 || p.MaxEstimated > 10240 || 6*most > 10240 {
		t.Fatalf("largest history estimate %d, activities in one run %d", p.MaxEstimated, most)
	}
}

type converterValues = converter.EncodedValues
