// Command record runs a small real batch — embedded Temporal, the provider
// simulator, a worker, a local lake — and writes the histories of the
// DailyIngest (started by hand, and by a schedule), Refetch, ScopeLimiter,
// OpsEvents and Notifier workflows it produced to workflows/testdata, for the
// replay tests; and a token keeper's, its payloads sealed with the test key
// in workflows/testdata/token-keeper.key. Run it from the module root
// after changing workflow code on purpose — first keeping the limiter's
// history as the next scope-limiter-vN.json for the replay test (see
// docs/ratelimit.md, "Changing the arithmetic"):
//
//	go run ./workflows/testdata/record
//
// With -only notifier it records the notifier's history alone
// (notifier.json), leaving the others as they are.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/tokenkeeper"
	"github.com/sluicehq/sluice/watch/store"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func run() error {
	only := flag.String("only", "", `record only this history ("notifier")`)
	flag.Parse()
	if *only != "" && *only != "notifier" {
		return fmt.Errorf("-only %q: only \"notifier\" is known", *only)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "sluice-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: filepath.Join(tmp, "temporal"), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: log})
	if err != nil {
		return err
	}
	defer srv.Stop()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		return err
	}
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 10})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	lake, err := sink.NewLocal(filepath.Join(tmp, "lake"))
	if err != nil {
		return err
	}
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace()})
	if err != nil {
		return err
	}
	defer tc.Close()
	notifier := func() error {
		runID, err := recordNotifier(ctx, tc, reg, tmp, log)
		if err != nil {
			return err
		}
		return saveRun(ctx, tc, workflows.NotifierWorkflowID, runID, filepath.Join("workflows", "testdata", "notifier.json"))
	}
	if *only == "notifier" {
		return notifier()
	}
	// A checkout does not keep the file's 0600: read it as text.
	keyText, err := os.ReadFile(filepath.Join("workflows", "testdata", "token-keeper.key"))
	if err != nil {
		return err
	}
	ring, err := codec.ParseKeyring("workflows/testdata/token-keeper.key", string(keyText))
	if err != nil {
		return err
	}
	cd, err := codec.New(ring)
	if err != nil {
		return err
	}
	kc, err := tokenkeeper.SealingClient(ctx, tc, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace()}, cd)
	if err != nil {
		return err
	}
	defer kc.Close()
	w, err := worker.Start(worker.Options{
		Client: tc, TokenKeeper: kc, Config: activities.Config{Registry: reg, Sink: lake, Logger: log, RateScale: 10,
			BaseURLs:    map[string]string{"*": "http://" + ln.Addr().String()},
			Credentials: connector.MapCredentials(withheld(simulator.TestCredentials(reg), "DATAGO_SERVICE_KEY"))},
	})
	if err != nil {
		return err
	}
	defer w.Stop()

	// A batch of daily runs (each dataset's look-back window) with
	// successes and a failure (data.go.kr's service key is withheld, so
	// its dataset fails authentication).
	in := workflows.DailyIngestInput{Date: "2026-11-27", Datasets: []string{
		"fred-dgs10", "fred-dgs2", "upbit-krw-btc", "ecos-901y009-0", "fsc-stock-market-index"}}
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID(in.Date), TaskQueue: worker.DefaultTaskQueue}, workflows.DailyIngestName, in)
	if err != nil {
		return err
	}
	var res workflows.DailyIngestResult
	if err := run.Get(ctx, &res); err != nil {
		return err
	}
	fmt.Printf("batch: %d ok, %d no data, %d failed\n", res.Succeeded, res.NoData, res.Failed)
	// A refetch of one day and one range that needs several pages.
	refetch := workflows.RefetchInput{Items: []activities.IngestInput{
		{Dataset: "fred-dgs10", From: "2026-11-27"},
		{Dataset: "upbit-krw-btc", From: "2025-01-01", To: "2026-06-30"},
	}}
	rrun, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "record-refetch", TaskQueue: worker.DefaultTaskQueue}, workflows.RefetchName, refetch)
	if err != nil {
		return err
	}
	var rres workflows.RefetchResult
	if err := rrun.Get(ctx, &rres); err != nil {
		return err
	}
	fmt.Printf("refetch: %d ok, %d failed, pages %d and %d\n", rres.Succeeded, rres.Failed, rres.Results[0].Pages, rres.Results[1].Pages)
	// A small backfill: yearly ECOS and FRED chunks, paused and resumed.
	brun, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "record-backfill", TaskQueue: worker.DefaultTaskQueue}, workflows.BackfillName,
		workflows.BackfillInput{From: "2019-01-01", To: "2021-12-31", Datasets: []string{"fred-dgs2", "ecos-731y001-0000001"}})
	if err != nil {
		return err
	}
	if err := tc.SignalWorkflow(ctx, "record-backfill", "", workflows.PauseSignal, nil); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	if err := tc.SignalWorkflow(ctx, "record-backfill", "", workflows.ResumeSignal, nil); err != nil {
		return err
	}
	var bres workflows.BackfillProgress
	if err := brun.Get(ctx, &bres); err != nil {
		return err
	}
	fmt.Printf("backfill: %d chunks, %d ok, %d failed, state %s\n", bres.Counts.Total, bres.Counts.OK, bres.Counts.Failed, bres.State)
	if err := events.NewRecorder(tc, worker.DefaultTaskQueue).Record(ctx, events.Event{Kind: events.KindBackoff, Scope: "fred/key", Message: "recorded for the replay test"}); err != nil {
		return err
	}
	lim := ratelimit.NewClient(tc, ratelimit.ClientOptions{TaskQueue: worker.DefaultTaskQueue})
	if _, err := lim.Penalize(ctx, "fred/key", ledger.Limits{Tolerance: ledger.DefaultTolerance},
		ratelimit.PenalizeRequest{Penalty: ledger.Penalty{RetryAfter: time.Second}, Reason: "recorded for the replay test"}); err != nil {
		return err
	}
	// A limiter whose history holds every kind of answer of the latest
	// rules, whatever the batch's timing: chained grants and windowed asks.
	if err := recordWindowLimiter(ctx, lim); err != nil {
		return err
	}
	// And one whose history holds a given-back slot taken over again
	// (RulesRefill).
	if err := recordRefillLimiter(ctx, lim); err != nil {
		return err
	}
	// A token keeper: a lease, a recorded request, a token saved, a
	// release, a second holder finding the token, a query.
	if err := recordKeeper(ctx, kc); err != nil {
		return err
	}
	// A run started by a schedule: its date comes from its nominal time.
	scheduledID, err := scheduledRun(ctx, tc, reg)
	if err != nil {
		return err
	}
	time.Sleep(time.Second) // let the events workflow's task complete
	watchRun, err := recordWatch(ctx, tc, reg, tmp, log)
	if err != nil {
		return err
	}
	if err := saveRun(ctx, tc, workflows.WatchWorkflowID("fred-dgs2"), watchRun, filepath.Join("workflows", "testdata", "watch.json")); err != nil {
		return err
	}
	if err := notifier(); err != nil {
		return err
	}
	for id, file := range map[string]string{
		workflows.DailyWorkflowID(in.Date): "daily-ingest-revisions.json",
		ratelimit.WorkflowID("fred/key"):   "scope-limiter.json",
		ratelimit.WorkflowID(windowScope):  "scope-limiter-window.json",
		ratelimit.WorkflowID(refillScope):  "scope-limiter-refill.json",
		events.WorkflowID:                  "ops-events.json",
		"record-refetch":                   "refetch.json",
		"record-backfill":                  "backfill.json",
		workflows.BackfillDatasetWorkflowID("record-backfill", "fred-dgs2"): "backfill-dataset.json",
		tokenkeeper.WorkflowID(replayKeeperKey):                             "token-keeper.json",
		scheduledID:                                                         "daily-scheduled.json",
	} {
		if err := save(ctx, tc, id, filepath.Join("workflows", "testdata", file)); err != nil {
			return err
		}
	}
	return nil
}

// windowScope is the scope of the limiter recordWindowLimiter drives.
const windowScope = "record/window"

// recordWindowLimiter drives a limiter of its own (one call per 150 ms,
// a tolerance of 50 ms) with sixteen calls that report their sends, so
// that its grants come chained once the round trips are known, and then
// with windowed asks (AcquireOptions.NotAfter): one no slot fits, which
// is answered with the first slot and nothing granted, and one at that
// slot.
func recordWindowLimiter(ctx context.Context, lc *ratelimit.Client) error {
	lim := ledger.Limits{MinInterval: 150 * time.Millisecond, Tolerance: 50 * time.Millisecond}
	var last ratelimit.Permit
	for range 16 {
		p, err := lc.Acquire(ctx, windowScope, lim, ratelimit.AcquireOptions{Chain: true})
		if err != nil {
			return fmt.Errorf("recording the window limiter: %w", err)
		}
		if err := p.Wait(ctx, nil); err != nil {
			return fmt.Errorf("recording the window limiter: %w", err)
		}
		tr := lc.Track([]ratelimit.Permit{p})
		if tr.Leave(time.Now()) {
			tr.Wrote(time.Now())
			tr.Done(time.Now())
		}
		last = p
	}
	_, err := lc.Acquire(ctx, windowScope, lim, ratelimit.AcquireOptions{NotBefore: last.At, NotAfter: last.At.Add(time.Millisecond)})
	var nw *ratelimit.NotWithinError
	if !errors.As(err, &nw) {
		return fmt.Errorf("recording the window limiter: a window no slot fits answered %v", err)
	}
	p, err := lc.Acquire(ctx, windowScope, lim, ratelimit.AcquireOptions{NotBefore: nw.Earliest, NotAfter: nw.Earliest.Add(lim.Tolerance)})
	if err != nil {
		return fmt.Errorf("recording the window limiter: %w", err)
	}
	lc.Release(p)
	return nil
}

// refillScope is the scope of the limiter recordRefillLimiter drives.
const refillScope = "record/refill"

// recordRefillLimiter drives a limiter of its own (three calls a second,
// a tolerance of 50 ms) so that a given-back slot is taken over
// (RulesRefill): three permits fill the first second, a fourth is granted
// in the next, the third is given back, and a fifth ask takes its slot,
// at once instead of after the fourth. None of the permits is sent.
func recordRefillLimiter(ctx context.Context, lc *ratelimit.Client) error {
	lim := ledger.Limits{Windows: []ledger.Window{{Length: time.Second, Count: 3}}, Tolerance: 50 * time.Millisecond}
	var permits []ratelimit.Permit
	for range 4 {
		p, err := lc.Acquire(ctx, refillScope, lim, ratelimit.AcquireOptions{})
		if err != nil {
			return fmt.Errorf("recording the refill limiter: %w", err)
		}
		permits = append(permits, p)
	}
	lc.Release(permits[2])
	p, err := lc.Acquire(ctx, refillScope, lim, ratelimit.AcquireOptions{})
	if err != nil {
		return fmt.Errorf("recording the refill limiter: %w", err)
	}
	if !p.At.Before(permits[3].At) {
		return fmt.Errorf("recording the refill limiter: the given-back slot was not taken over: granted at %v, after the next second's grant at %v", p.At, permits[3].At)
	}
	lc.Release(append(permits[:2], permits[3], p)...)
	return nil
}

// replayKeeperKey is the store key of the recorded token keeper.
const replayKeeperKey = "kis-replay"

func recordKeeper(ctx context.Context, kc client.Client) error {
	for _, holder := range []string{"record-a", "record-b"} {
		st, err := tokenkeeper.NewStore(kc, tokenkeeper.StoreOptions{TaskQueue: tokenkeeper.TaskQueue(worker.DefaultTaskQueue), Holder: holder})
		if err != nil {
			return err
		}
		err = st.WithLock(ctx, replayKeeperKey, func(ctx context.Context) error {
			if tok, ok, err := st.Load(ctx, replayKeeperKey); err != nil || ok && tok.AccessToken != "" {
				return err
			}
			now := time.Now()
			if err := st.Save(ctx, replayKeeperKey, connector.Token{RequestedAt: now}); err != nil {
				return err
			}
			return st.Save(ctx, replayKeeperKey, connector.Token{AccessToken: "replay-fixture-token", IssuedAt: now,
				ExpiresAt: now.Add(24 * time.Hour), RequestedAt: now})
		})
		if err != nil {
			return fmt.Errorf("recording the token keeper: %w", err)
		}
	}
	return nil
}

func save(ctx context.Context, tc client.Client, id, path string) error {
	return saveRun(ctx, tc, id, "", path)
}

func saveRun(ctx context.Context, tc client.Client, id, runID, path string) error {
	h, err := readHistory(ctx, tc, id, runID)
	if err != nil {
		return err
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d events → %s\n", id, len(h.Events), path)
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// scheduledRun syncs the FRED schedule of the registry, triggers it and
// waits for the run it starts; it returns the run's workflow id.
func scheduledRun(ctx context.Context, tc client.Client, reg *registry.Registry) (string, error) {
	wants, err := schedules.Wanted(reg, schedules.Options{})
	if err != nil {
		return "", err
	}
	var fred []schedules.Want
	for _, w := range wants {
		if w.Provider == "fred" {
			fred = append(fred, w)
		}
	}
	if r := schedules.Sync(ctx, schedules.Temporal(tc), fred, false); r.Err() != nil {
		return "", r.Err()
	}
	if err := schedules.Trigger(ctx, tc, fred[0].ID); err != nil {
		return "", err
	}
	for {
		d, err := tc.ScheduleClient().GetHandle(ctx, fred[0].ID).Describe(ctx)
		if err != nil {
			return "", err
		}
		if n := len(d.Info.RecentActions); n > 0 {
			id := d.Info.RecentActions[n-1].StartWorkflowResult.WorkflowID
			var res workflows.DailyIngestResult
			if err := tc.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
				return "", err
			}
			fmt.Printf("scheduled run %s: date %s, %d ok\n", id, res.Date, res.Succeeded)
			if err := tc.ScheduleClient().GetHandle(ctx, fred[0].ID).Delete(ctx); err != nil {
				return "", err
			}
			return id, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readHistory(ctx context.Context, tc client.Client, id, runID string) (*history.History, error) {
	it := tc.GetWorkflowHistory(ctx, id, runID, false, 0)
	h := &history.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading history of %s: %w", id, err)
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}

// recordWatch runs two watches on a worker of their own, at rate scale
// 3,600 (an hourly dataset probed every second) against a simulator whose
// FRED answers half its calls with 503, so that confirmations come: one
// watch of fred-dgs2 continuing as new every 8 probes, whose first run is
// recorded for the replay test, and one of fred-dgs10 with the default
// 100 probes a run, whose first run's history length is printed (the
// largest a watch run grows). It returns the first run id of fred-dgs2.
func recordWatch(ctx context.Context, tc client.Client, reg *registry.Registry, tmp string, log *slog.Logger) (string, error) {
	const scale, queue = 3600, "record-watch"
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: scale, Seed: 7,
		Faults: []simulator.Fault{{Provider: "fred", ErrorRate: 0.5}}})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	hs := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	st, err := store.Open(ctx, store.Config{DataDir: filepath.Join(tmp, "watch")})
	if err != nil {
		return "", err
	}
	defer st.Close()
	lake, err := sink.NewLocal(filepath.Join(tmp, "watch-lake"))
	if err != nil {
		return "", err
	}
	w, err := worker.Start(worker.Options{
		Client: tc, TaskQueue: queue, Config: activities.Config{Registry: reg, Sink: lake, Logger: log, RateScale: scale, Watch: st,
			BaseURLs:    map[string]string{"*": "http://" + ln.Addr().String()},
			Credentials: connector.MapCredentials(simulator.TestCredentials(reg))},
	})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	start := func(ds string, per int) (client.WorkflowRun, error) {
		return tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WatchWorkflowID(ds), TaskQueue: queue},
			workflows.WatchName, workflows.WatchInput{Dataset: ds, ProbesPerRun: per})
	}
	small, err := start("fred-dgs2", 8)
	if err != nil {
		return "", err
	}
	full, err := start("fred-dgs10", 0)
	if err != nil {
		return "", err
	}
	// Both runs end by continuing as new.
	for _, run := range []client.WorkflowRun{small, full} {
		var res workflows.WatchResult
		err := tc.GetWorkflow(ctx, run.GetID(), run.GetRunID()).GetWithOptions(ctx, &res, client.WorkflowRunGetOptions{DisableFollowingRuns: true})
		if err != nil && !strings.Contains(err.Error(), "continue") {
			return "", fmt.Errorf("waiting for the first run of %s: %w", run.GetID(), err)
		}
	}
	h, err := readHistory(ctx, tc, full.GetID(), full.GetRunID())
	if err != nil {
		return "", err
	}
	probes, confirmations := 0, 0
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Probe" {
			probes++
			if strings.Contains(string(a.GetInput().GetPayloads()[0].GetData()), `"confirmation":true`) {
				confirmations++
			}
		}
	}
	fmt.Printf("%s: a run of %d probes (%d confirmations) took %d history events\n", full.GetID(), probes, confirmations, len(h.Events))
	for _, id := range []string{small.GetID(), full.GetID()} {
		if err := tc.TerminateWorkflow(ctx, id, "", "recorded"); err != nil {
			return "", err
		}
	}
	return small.GetRunID(), nil
}

func withheld(creds map[string]string, name string) map[string]string {
	delete(creds, name)
	return creds
}
