package schedules_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/activities"
	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/embedded"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/schedules"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/worker"
	"github.com/sluicehq/sluice/workflows"
)

// loadRegistry is the default providers.yaml with the given datasets.
func loadRegistry(t *testing.T, datasets string) *registry.Registry {
	t.Helper()
	providers, err := fs.ReadFile(registry.DefaultFS(), "providers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(fstest.MapFS{
		"providers.yaml":  {Data: providers},
		"datasets/d.yaml": {Data: []byte(datasets)},
	}, "test", registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

const (
	fredAt7 = "id: fred-dgs10\nprovider: fred\nrequest: {series_id: DGS10}\ningest: {schedule: \"0 7 * * *\"}\n"
	fredAt6 = "id: fred-dgs10\nprovider: fred\nrequest: {series_id: DGS10}\ningest: {schedule: \"0 6 * * *\"}\n"
	ecosCPI = "id: ecos-cpi\nprovider: ecos\nrequest: {stat_code: 901Y009, cycle: M, items: [\"0\"]}\ningest: {schedule: \"0 9 * * *\"}\n"
	ecosPPI = "id: ecos-ppi\nprovider: ecos\nrequest: {stat_code: 404Y014, cycle: M, items: [\"*AA\"]}\ningest: {schedule: \"0 9 * * *\"}\n"
	ecosM2  = "id: ecos-m2\nprovider: ecos\nrequest: {stat_code: 161Y005, cycle: M, items: [\"BBHS00\"]}\ningest: {schedule: \"0 9 * * *\"}\n"
)

func startServer(t *testing.T) (*embedded.Server, client.Client, *slog.Logger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: t.TempDir(), FrontendAddr: "127.0.0.1:0", UIAddr: embedded.UIOff, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	tc, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return srv, tc, log
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

func sync(t *testing.T, tc client.Client, reg *registry.Registry) schedules.Report {
	t.Helper()
	ws, err := schedules.Wanted(reg, schedules.Options{CatchupWindow: 72 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := schedules.Sync(ctx, schedules.Temporal(tc), ws, false)
	if err := r.Err(); err != nil {
		var out strings.Builder
		r.Write(&out)
		t.Fatalf("sync: %v\n%s", err, out.String())
	}
	return r
}

func counts(r schedules.Report) [4]int {
	return [4]int{r.Count(schedules.Create), r.Count(schedules.Update), r.Count(schedules.Delete), r.Count(schedules.Unchanged)}
}

// waitListed waits until Temporal's (eventually consistent) schedule list
// shows every id: a sync deletes only what it lists.
func waitListed(t *testing.T, tc client.Client, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		it, err := tc.ScheduleClient().List(context.Background(), client.ScheduleListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			seen[e.ID] = true
		}
		missing := false
		for _, id := range ids {
			missing = missing || !seen[id]
		}
		if !missing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schedule list still lacks some of %v: %v", ids, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSyncOnTheEmbeddedServer: schedules synced from a
// registry into a real Temporal server; a second sync changes nothing; a
// registry change updates, creates and deletes — keeping a paused
// schedule paused — and a schedule Sluice does not own is never touched.
// A backfill over three nominal times, taken while no worker runs (an
// outage of every worker), runs the three dates one at a time once a
// worker comes back, each ingesting the day before its nominal time in
// Chicago under the key and window `sluice ingest --date` gives it.
func TestSyncOnTheEmbeddedServer(t *testing.T) {
	_, tc, log := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// A schedule of someone else's, paused so it never fires.
	if _, err := tc.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:     "nightly-report",
		Spec:   client.ScheduleSpec{CronExpressions: []string{"0 2 * * *"}},
		Action: &client.ScheduleWorkflowAction{ID: "nightly-report", Workflow: "Report", TaskQueue: "reports"},
		Paused: true,
	}); err != nil {
		t.Fatal(err)
	}

	v1 := loadRegistry(t, strings.Join([]string{fredAt7, ecosCPI, ecosPPI}, "---\n"))
	if got := counts(sync(t, tc, v1)); got != [4]int{2, 0, 0, 0} {
		t.Fatalf("first sync: created, updated, deleted, unchanged = %v", got)
	}
	d, err := tc.ScheduleClient().GetHandle(ctx, "sluice-fred-0700-daily").Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Schedule.Policy; p.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL || p.CatchupWindow != 72*time.Hour {
		t.Errorf("policies %+v", p)
	}
	if d.Schedule.Spec.TimeZoneName != "America/Chicago" || len(d.Info.NextActionTimes) == 0 {
		t.Errorf("spec %+v, next %v", d.Schedule.Spec, d.Info.NextActionTimes)
	}
	chicago, _ := time.LoadLocation("America/Chicago")
	if next := d.Info.NextActionTimes[0].In(chicago); next.Hour() != 7 || next.Minute() != 0 {
		t.Errorf("next run at %s, want 07:00 Chicago", next)
	}
	if got := counts(sync(t, tc, v1)); got != [4]int{0, 0, 0, 2} {
		t.Fatalf("second sync: %v, want nothing changed", got)
	}

	if err := schedules.Pause(ctx, tc, "sluice-ecos-0900-daily", "ECOS maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := schedules.Pause(ctx, tc, "nightly-report", "mine now"); err == nil || !strings.Contains(err.Error(), "not Sluice's") {
		t.Errorf("pausing a foreign schedule: %v", err)
	}
	waitListed(t, tc, "nightly-report", "sluice-fred-0700-daily", "sluice-ecos-0900-daily")
	v2 := loadRegistry(t, strings.Join([]string{fredAt6, ecosCPI, ecosM2}, "---\n"))
	r := sync(t, tc, v2)
	if got := counts(r); got != [4]int{1, 1, 1, 0} {
		var out strings.Builder
		r.Write(&out)
		t.Fatalf("sync after the change: %v\n%s", got, out.String())
	}
	var out strings.Builder
	r.Write(&out)
	report := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"create sluice-fred-0600-daily fred 0 6 * * * (America/Chicago) 1 datasets", "update sluice-ecos-0900-daily",
		"datasets +1 (ecos-m2) -1 (ecos-ppi); paused, kept paused: ECOS maintenance", "delete sluice-fred-0700-daily",
		"left alone: 1 schedule(s) Sluice does not own: nightly-report", "synced: 1 created, 1 updated, 1 deleted, 0 unchanged"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := tc.ScheduleClient().GetHandle(ctx, "sluice-fred-0700-daily").Describe(ctx); !isNotFound(err) {
		t.Errorf("the retired schedule: %v", err)
	}
	entries, err := schedules.List(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ID)
		if e.ID == "sluice-ecos-0900-daily" && (!e.Paused || e.Note != "ECOS maintenance" || !slices.Equal(e.Input.Datasets, []string{"ecos-cpi", "ecos-m2"})) {
			t.Errorf("the updated schedule: %+v", e.Have)
		}
	}
	if !slices.Equal(ids, []string{"sluice-ecos-0900-daily", "sluice-fred-0600-daily"}) {
		t.Errorf("Sluice's schedules: %v", ids)
	}
	foreign, err := tc.ScheduleClient().GetHandle(ctx, "nightly-report").Describe(ctx)
	if err != nil || !foreign.Schedule.State.Paused || foreign.Schedule.State.Note != "" {
		t.Errorf("the foreign schedule was touched: %+v, %v", foreign, err)
	}
	if got := counts(sync(t, tc, v2)); got != [4]int{0, 0, 0, 2} {
		t.Fatalf("sync again: %v, want nothing changed", got)
	}

	// Three nominal times, 06:00 Chicago on 24, 25 and 26 November,
	// backfilled while no worker runs.
	h := tc.ScheduleClient().GetHandle(ctx, "sluice-fred-0600-daily")
	if err := h.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{
		Start: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)}}}); err != nil {
		t.Fatal(err)
	}
	runIDs := []string{"sluice-fred-0600-daily-2026-11-24T12:00:00Z", "sluice-fred-0600-daily-2026-11-25T12:00:00Z", "sluice-fred-0600-daily-2026-11-26T12:00:00Z"}
	waitStarted(t, tc, runIDs[0]) // the first waits for a worker; the others wait for it

	sim, err := simulator.New(simulator.Options{Registry: v2, RateScale: 10, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sim.Handler())
	t.Cleanup(hs.Close)
	lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := tokenstore.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.Start(worker.Options{Client: tc, Config: activities.Config{Registry: v2, Sink: lake, Logger: log, RateScale: 10,
		BaseURLs: map[string]string{"*": hs.URL}, Credentials: connector.MapCredentials(simulator.TestCredentials(v2)), TokenStore: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	var prevClose time.Time
	for i, id := range runIDs {
		waitStarted(t, tc, id)
		var res workflows.DailyIngestResult
		if err := tc.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		date := time.Date(2026, 11, 23+i, 0, 0, 0, 0, time.UTC)
		if res.Date != date.Format(time.DateOnly) || len(res.Results) != 1 || res.Results[0].Status != workflows.StatusOK {
			t.Fatalf("%s: result %+v", id, res)
		}
		key, _ := sink.Key(sink.KeySpec{Provider: "fred", Dataset: "fred-dgs10", From: date, Ext: "json"})
		if got := res.Results[0]; got.Key != key || got.WindowFrom != date.AddDate(0, 0, -9).Format(time.DateOnly) || got.WindowTo != res.Date {
			t.Errorf("%s: key %s window %s..%s; want %s, a ten-day window ending %s", id, got.Key, got.WindowFrom, got.WindowTo, key, res.Date)
		}
		desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		info := desc.WorkflowExecutionInfo
		if start := info.StartTime.AsTime(); start.Before(prevClose) {
			t.Errorf("%s started at %s, before the previous run closed at %s: the group ran twice at once", id, start, prevClose)
		}
		prevClose = info.CloseTime.AsTime()
	}

	// `sluice ingest --date 2026-11-24` of the same dataset: the same key
	// and window as the scheduled run for that date.
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.DailyWorkflowID("2026-11-24"), TaskQueue: worker.DefaultTaskQueue},
		workflows.DailyIngestName, workflows.DailyIngestInput{Date: "2026-11-24", Datasets: []string{"fred-dgs10"}})
	if err != nil {
		t.Fatal(err)
	}
	var manual, scheduled workflows.DailyIngestResult
	if err := run.Get(ctx, &manual); err != nil {
		t.Fatal(err)
	}
	if err := tc.GetWorkflow(ctx, runIDs[1], "").Get(ctx, &scheduled); err != nil {
		t.Fatal(err)
	}
	m, s := manual.Results[0], scheduled.Results[0]
	if m.Key != s.Key || m.WindowFrom != s.WindowFrom || m.WindowTo != s.WindowTo || m.SHA256 != s.SHA256 {
		t.Errorf("manual %s %s..%s %s; scheduled %s %s..%s %s", m.Key, m.WindowFrom, m.WindowTo, m.SHA256, s.Key, s.WindowFrom, s.WindowTo, s.SHA256)
	}
	if obj, err := lake.Stat(ctx, s.Key); err != nil || obj.Window.String() != s.WindowFrom+".."+s.WindowTo {
		t.Errorf("the lake object: %+v, %v", obj, err)
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// waitStarted waits until the schedule has started the workflow id.
func waitStarted(t *testing.T, tc client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		if err == nil {
			return
		}
		if !isNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestScheduleInChicagoAcrossDST: a FRED schedule fires in
// America/Chicago by the clock. At 07:00 (the registry's) it fires once
// every day, 13:00 UTC in winter and 12:00 UTC in summer, and the logical
// dates follow one another with neither gap nor repeat across both
// changes. At 02:30 it does not fire on the day the clocks spring forward
// (02:00 becomes 03:00: that day's logical date gets no run of its own);
// at 01:30 it fires twice on the day they fall back (01:00–02:00 happens
// twice: two runs for one logical date, the second rewriting the same
// keys). Temporal says so itself: ListScheduleMatchingTimes.
func TestScheduleInChicagoAcrossDST(t *testing.T) {
	srv, tc, _ := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := loadRegistry(t, strings.Join([]string{
		fredAt7,
		"id: fred-dgs2\nprovider: fred\nrequest: {series_id: DGS2}\ningest: {schedule: \"30 2 * * *\"}\n",
		"id: fred-dgs5\nprovider: fred\nrequest: {series_id: DGS5}\ningest: {schedule: \"30 1 * * *\"}\n",
	}, "---\n"))
	sync(t, tc, reg)
	if got := reg.Dataset("fred-dgs5").Ingest.RunsPerDay; got != 2 {
		t.Errorf("the budget gate counts %d runs on the busiest day of the 01:30 schedule, want 2", got)
	}
	chicago, _ := time.LoadLocation("America/Chicago")
	matching := func(id string, from, to time.Time) []time.Time {
		t.Helper()
		resp, err := tc.WorkflowService().ListScheduleMatchingTimes(ctx, &workflowservice.ListScheduleMatchingTimesRequest{
			Namespace: srv.Namespace(), ScheduleId: id, StartTime: timestamppb.New(from), EndTime: timestamppb.New(to)})
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for _, ts := range resp.StartTime {
			out = append(out, ts.AsTime())
		}
		return out
	}
	utc := func(ts []time.Time) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.UTC().Format("01-02T15:04Z"))
		}
		return out
	}
	dates := func(ts []time.Time) []string {
		var out []string
		for _, t := range ts {
			out = append(out, workflows.LogicalDate(t, chicago))
		}
		return out
	}
	spring := [2]time.Time{time.Date(2026, 3, 7, 0, 0, 0, 0, chicago), time.Date(2026, 3, 10, 0, 0, 0, 0, chicago)}
	fall := [2]time.Time{time.Date(2026, 10, 31, 0, 0, 0, 0, chicago), time.Date(2026, 11, 3, 0, 0, 0, 0, chicago)}
	for _, tc := range []struct {
		id, season string
		from, to   time.Time
		utc, dates []string
	}{
		{"sluice-fred-0700-daily", "spring", spring[0], spring[1],
			[]string{"03-07T13:00Z", "03-08T12:00Z", "03-09T12:00Z"}, []string{"2026-03-06", "2026-03-07", "2026-03-08"}},
		{"sluice-fred-0700-daily", "fall", fall[0], fall[1],
			[]string{"10-31T12:00Z", "11-01T13:00Z", "11-02T13:00Z"}, []string{"2026-10-30", "2026-10-31", "2026-11-01"}},
		{"sluice-fred-0230-daily", "spring", spring[0], spring[1],
			[]string{"03-07T08:30Z", "03-09T07:30Z"}, []string{"2026-03-06", "2026-03-08"}},
		{"sluice-fred-0130-daily", "fall", fall[0], fall[1],
			[]string{"10-31T06:30Z", "11-01T06:30Z", "11-01T07:30Z", "11-02T07:30Z"}, []string{"2026-10-30", "2026-10-31", "2026-10-31", "2026-11-01"}},
	} {
		got := matching(tc.id, tc.from, tc.to)
		if !slices.Equal(utc(got), tc.utc) || !slices.Equal(dates(got), tc.dates) {
			t.Errorf("%s around the %s change: fires at %v for %v; want %v for %v", tc.id, tc.season, utc(got), dates(got), tc.utc, tc.dates)
		}
	}
}
