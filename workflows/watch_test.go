package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/workflows"
)

// sent is one probe activity a watch ran: when (the test clock) and
// whether it was a confirmation.
type sent struct {
	at           time.Duration // since the workflow started
	confirmation bool
}

// watchEnv is a test environment with the watch registered and its probes
// answered by answer (called with the probe number, from 0, and the
// clock), recording every probe sent.
type watchEnv struct {
	env   *testsuite.TestWorkflowEnvironment
	start time.Time
	mu    sync.Mutex
	sent  []sent
}

func newWatchEnv(t *testing.T, plan activities.WatchPlan, answer func(n int, now time.Time, in activities.ProbeInput) (activities.ProbeResult, error)) *watchEnv {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	w := &watchEnv{env: ts.NewTestWorkflowEnvironment()}
	w.start = w.env.Now()
	w.env.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
	var a *activities.Activities
	w.env.RegisterActivity(a)
	w.env.OnActivity(a.WatchPlan, mock.Anything, activities.WatchPlanInput{Dataset: "fred-dgs10"}).Return(plan, nil)
	w.env.OnActivity(a.Probe, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ProbeInput) (activities.ProbeResult, error) {
			now := w.env.Now()
			w.mu.Lock()
			n := len(w.sent)
			w.sent = append(w.sent, sent{at: now.Sub(w.start), confirmation: in.Confirmation})
			w.mu.Unlock()
			r, err := answer(n, now, in)
			r.Dataset, r.At = in.Dataset, now
			return r, err
		})
	return w
}

func (w *watchEnv) run(in workflows.WatchInput) {
	w.env.ExecuteWorkflow(workflows.WatchName, in)
}

// continued returns the input the watch continued as new with.
func (w *watchEnv) continued(t *testing.T) workflows.WatchInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if err := w.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the watch did not continue as new: %v", err)
	}
	var in workflows.WatchInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// firstOffset is when a fresh watch of fred-dgs10, never probed, probes
// first on an hourly interval (watch.FirstProbeOffset).
var firstOffset = watch.FirstProbeOffset("fred-dgs10", time.Hour)

// shifted returns the probes, each d later.
func shifted(d time.Duration, probes ...sent) []sent {
	for i := range probes {
		probes[i].at += d
	}
	return probes
}

func ok(interval time.Duration) activities.ProbeResult {
	return activities.ProbeResult{Outcome: watch.OK, State: watch.Up, Interval: interval, Recorded: true}
}

// TestWatchProbesOnItsGrid: a fresh watch of a dataset never probed
// probes first at the dataset's point of the interval
// (watch.FirstProbeOffset, not at once: watches started together spread
// their first probes) and then every interval, and continues as new after
// ProbesPerRun probes, carrying the next slot and its count.
func TestWatchProbesOnItsGrid(t *testing.T) {
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour},
		func(int, time.Time, activities.ProbeInput) (activities.ProbeResult, error) { return ok(time.Hour), nil })
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 4})
	next := w.continued(t)
	off := watch.FirstProbeOffset("fred-dgs10", time.Hour)
	if off < time.Second {
		t.Fatalf("the test dataset's first-probe offset is %s: pick one whose offset tells a spread watch from one probing at once", off)
	}
	want := []sent{{off, false}, {off + time.Hour, false}, {off + 2*time.Hour, false}, {off + 3*time.Hour, false}}
	if !equalSent(w.sent, want) {
		t.Errorf("probes %v, want %v", w.sent, want)
	}
	if !next.Next.Equal(w.start.Add(off+4*time.Hour)) || next.Interval != time.Hour || next.Probes != 4 || next.Runs != 1 || next.ProbesPerRun != 4 ||
		next.Last == nil || next.Last.Outcome != watch.OK {
		t.Errorf("continued with %+v", next)
	}
}

// TestWatchContinuesWhereItLeft: a continued run keeps the grid and asks
// no plan.
func TestWatchContinuesWhereItLeft(t *testing.T) {
	w := newWatchEnv(t, activities.WatchPlan{}, func(int, time.Time, activities.ProbeInput) (activities.ProbeResult, error) {
		return ok(time.Hour), nil
	})
	start := w.env.Now()
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 2, Next: start.Add(30 * time.Minute), Interval: time.Hour, Probes: 200, Runs: 2})
	next := w.continued(t)
	if want := []sent{{30 * time.Minute, false}, {90 * time.Minute, false}}; !equalSent(w.sent, want) {
		t.Errorf("probes %v, want %v", w.sent, want)
	}
	if next.Probes != 202 || next.Runs != 3 || !next.Next.Equal(start.Add(150*time.Minute)) {
		t.Errorf("continued with %+v", next)
	}
}

// TestWatchRestartWaitsForTheInterval: a watch started again (terminated
// and restarted, or reset) never probes sooner than an interval after the
// store's last probe of the dataset.
func TestWatchRestartWaitsForTheInterval(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	now := ts.NewTestWorkflowEnvironment().Now()
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour, LastProbe: now.Add(-10 * time.Minute)},
		func(int, time.Time, activities.ProbeInput) (activities.ProbeResult, error) { return ok(time.Hour), nil })
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 1})
	w.continued(t)
	if len(w.sent) != 1 || w.sent[0].at < 49*time.Minute || w.sent[0].at > 51*time.Minute {
		t.Errorf("probes %v, want one about 50 minutes after the start", w.sent)
	}
}

// TestWatchRestartAfterAClockAhead: a last probe recorded in the future
// (a worker's clock ahead) delays the first probe by one interval at
// most.
func TestWatchRestartAfterAClockAhead(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	now := ts.NewTestWorkflowEnvironment().Now()
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour, LastProbe: now.AddDate(1, 0, 0)},
		func(int, time.Time, activities.ProbeInput) (activities.ProbeResult, error) { return ok(time.Hour), nil })
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 1})
	w.continued(t)
	if len(w.sent) != 1 || w.sent[0].at > time.Hour+time.Minute {
		t.Errorf("probes %v, want one within an hour of the start", w.sent)
	}
}

// TestWatchConfirms: a failure asks for confirmations, sent when asked and
// marked; one asked for at or after the next scheduled probe is not sent
// (the scheduled probe confirms); a spent budget sends none.
func TestWatchConfirms(t *testing.T) {
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour},
		func(n int, now time.Time, _ activities.ProbeInput) (activities.ProbeResult, error) {
			r := ok(time.Hour)
			switch n {
			case 0: // scheduled, fails: confirm in 15 minutes
				r.Outcome, r.State, r.Confirm = watch.ProviderError, watch.Degraded, watch.Confirm{At: now.Add(15 * time.Minute), Remaining: 24}
			case 1: // confirmation, fails again
				r.Outcome, r.State, r.Confirm = watch.ProviderError, watch.Degraded, watch.Confirm{At: now.Add(15 * time.Minute), Remaining: 23}
			case 2: // second confirmation: down
				r.Outcome, r.State = watch.ProviderError, watch.Down
			case 3: // scheduled (+1 h): answers; a confirmation at +2 h would coincide with the next slot
				r.State, r.Confirm = watch.Degraded, watch.Confirm{At: now.Add(time.Hour), Remaining: 22}
			case 4: // scheduled (+2 h): the budget is spent
				r.State, r.Confirm = watch.Degraded, watch.Confirm{BudgetSpent: true}
			}
			return r, nil
		})
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 6})
	w.continued(t)
	want := shifted(firstOffset, sent{0, false}, sent{15 * time.Minute, true}, sent{30 * time.Minute, true}, sent{time.Hour, false}, sent{2 * time.Hour, false}, sent{3 * time.Hour, false})
	if !equalSent(w.sent, want) {
		t.Errorf("probes %v, want %v", w.sent, want)
	}
}

// TestWatchSkipsMissedSlots: a probe that ran late (its worker waited for
// permits, or none was polling) is followed by the next slot of the grid,
// not by the slots it missed.
func TestWatchSkipsMissedSlots(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	start := env.Now()
	env.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
	var a *activities.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.WatchPlan, mock.Anything, mock.Anything).Return(activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour}, nil)
	// The first probe takes two and a half hours.
	env.OnActivity(a.Probe, mock.Anything, mock.Anything).Once().After(150*time.Minute).Return(ok(time.Hour), nil)
	var at []time.Duration
	env.OnActivity(a.Probe, mock.Anything, mock.Anything).Return(func(context.Context, activities.ProbeInput) (activities.ProbeResult, error) {
		at = append(at, env.Now().Sub(start))
		return ok(time.Hour), nil
	})
	env.ExecuteWorkflow(workflows.WatchName, workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 2})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the watch did not continue as new: %v", err)
	}
	var next workflows.WatchInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	// Times from the first probe. The probe after the late one runs at +3 h (the slots at +1 h and +2 h
	// passed while it ran), and the one after that at +4 h.
	if len(at) != 1 || at[0] != firstOffset+3*time.Hour || !next.Next.Equal(start.Add(firstOffset+4*time.Hour)) {
		t.Errorf("probes at %v, next %s after the start", at, next.Next.Sub(start))
	}
}

// TestWatchSurvivesAFailedProbe: a probe activity that fails (a worker
// lost, the store unreachable) is not retried; the next slot follows and
// the query says what failed.
func TestWatchSurvivesAFailedProbe(t *testing.T) {
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour},
		func(n int, _ time.Time, _ activities.ProbeInput) (activities.ProbeResult, error) {
			if n == 0 {
				return activities.ProbeResult{}, temporal.NewNonRetryableApplicationError("recording the probe: database is locked", activities.ErrTypeStore, nil)
			}
			return ok(time.Hour), nil
		})
	var status workflows.WatchStatus
	w.env.RegisterDelayedCallback(func() {
		v, err := w.env.QueryWorkflow(workflows.WatchStateQuery)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&status); err != nil {
			t.Error(err)
		}
	}, firstOffset+30*time.Minute)
	w.run(workflows.WatchInput{Dataset: "fred-dgs10", ProbesPerRun: 2})
	w.continued(t)
	if want := shifted(firstOffset, sent{0, false}, sent{time.Hour, false}); !equalSent(w.sent, want) {
		t.Errorf("probes %v, want %v", w.sent, want)
	}
	if status.Failures != 1 || status.LastError == "" || status.RunProbes != 1 || status.Dataset != "fred-dgs10" ||
		status.Interval != time.Hour || !status.Next.Equal(w.start.Add(firstOffset+time.Hour)) {
		t.Errorf("status at 30 min %+v", status)
	}
}

// TestWatchStopsWhenNotWatched: when the workers' registry no longer
// probes the dataset the watch completes, saying why.
func TestWatchStopsWhenNotWatched(t *testing.T) {
	w := newWatchEnv(t, activities.WatchPlan{Dataset: "fred-dgs10", Interval: time.Hour},
		func(n int, _ time.Time, _ activities.ProbeInput) (activities.ProbeResult, error) {
			if n == 1 {
				return activities.ProbeResult{}, temporal.NewNonRetryableApplicationError("dataset fred-dgs10 has no probe section", activities.ErrTypeNotWatched, nil)
			}
			return ok(time.Hour), nil
		})
	w.run(workflows.WatchInput{Dataset: "fred-dgs10"})
	var res workflows.WatchResult
	if err := w.env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Stopped == "" || res.Probes != 2 || len(w.sent) != 2 {
		t.Errorf("result %+v after %d probes", res, len(w.sent))
	}
}

func TestWatchRequiresADataset(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Watch, workflow.RegisterOptions{Name: workflows.WatchName})
	env.ExecuteWorkflow(workflows.WatchName, workflows.WatchInput{})
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != activities.ErrTypeBadInput {
		t.Errorf("err = %v", err)
	}
}

func equalSent(a, b []sent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
