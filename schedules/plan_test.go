package schedules

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/robfig/cron/v3"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/workflows"
)

const testProviders = `providers:
  - id: ecos
    timezone: Asia/Seoul
    rate_limits: unknown
  - id: fred
    timezone: America/Chicago
    rate_limits: unknown
`

func ecos(id, sched string) string {
	return "id: " + id + "\nprovider: ecos\nrequest: {stat_code: 722Y001, cycle: D}\ningest: {schedule: \"" + sched + "\"}\n"
}

func fred(id, sched string) string {
	return "id: " + id + "\nprovider: fred\nrequest: {series_id: DGS10}\ningest: {schedule: \"" + sched + "\"}\n"
}

func testRegistry(t *testing.T, docs ...string) *registry.Registry {
	t.Helper()
	reg, err := registry.Load(fstest.MapFS{
		"providers.yaml":  {Data: []byte(testProviders)},
		"datasets/d.yaml": {Data: []byte(strings.Join(docs, "---\n"))},
	}, "registry", registry.Options{Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func wanted(t *testing.T, reg *registry.Registry) []Want {
	t.Helper()
	ws, err := Wanted(reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// described is a want as Temporal describes it back after creating it:
// the calendars' ranges cleaned (a step of 1, single values as start ==
// end), the input decoded, the policies resolved, owned.
func described(w Want) Have {
	var cals []client.ScheduleCalendarSpec
	for _, c := range w.Calendars {
		clean := func(rs []client.ScheduleRange) []client.ScheduleRange {
			var out []client.ScheduleRange
			for _, r := range rs {
				if r.End < r.Start {
					r.End = r.Start
				}
				r.Step = 1
				out = append(out, r)
			}
			return out
		}
		cals = append(cals, client.ScheduleCalendarSpec{Second: clean(c.Second), Minute: clean(c.Minute), Hour: clean(c.Hour),
			DayOfMonth: clean(c.DayOfMonth), Month: clean(c.Month), DayOfWeek: clean(c.DayOfWeek), Comment: c.Comment})
	}
	in := w.Input()
	return Have{ID: w.ID, Owned: true, Spec: client.ScheduleSpec{Calendars: cals, Intervals: w.Intervals, TimeZoneName: w.Timezone},
		Workflow: workflows.DailyIngestName, ActionID: w.ID, TaskQueue: w.TaskQueue, Input: &in, Summary: w.Summary(),
		Overlap: Overlap, CatchupWindow: w.CatchupWindow}
}

func ops(changes []Change) []string {
	var out []string
	for _, c := range changes {
		s := string(c.Op) + " " + c.ID
		if len(c.Why) > 0 {
			s += ": " + strings.Join(c.Why, "; ")
		}
		out = append(out, s)
	}
	return out
}

// TestPlan: the sync plan, case by case.
func TestPlan(t *testing.T) {
	base := testRegistry(t, ecos("ecos-a", "0 9 * * *"), ecos("ecos-b", "0 9 * * *"), fred("fred-a", "0 7 * * *"))
	bw := wanted(t, base)
	if len(bw) != 2 || bw[0].ID != "sluice-ecos-0900-daily" || bw[1].ID != "sluice-fred-0700-daily" ||
		!slices.Equal(bw[0].Datasets, []string{"ecos-a", "ecos-b"}) || bw[1].Timezone != "America/Chicago" {
		t.Fatalf("wanted %+v", bw)
	}
	var synced []Have
	for _, w := range bw {
		synced = append(synced, described(w))
	}
	foreign := Have{ID: "nightly-report", Workflow: "Report"}
	paused := described(bw[0])
	paused.Paused, paused.Note = true, "ECOS maintenance until Monday"
	retired := described(wanted(t, testRegistry(t, ecos("ecos-c", "30 17 * * 1-5")))[0])
	longer := described(bw[1])
	longer.CatchupWindow = 24 * time.Hour
	hand := described(bw[1])
	hand.Spec.Jitter = time.Minute

	for _, tc := range []struct {
		name  string
		wants []Want
		haves []Have
		want  []string
	}{
		{"create: nothing there", bw, nil, []string{"create sluice-ecos-0900-daily", "create sluice-fred-0700-daily"}},
		{"unchanged: as Temporal describes it back", bw, synced, []string{"unchanged sluice-ecos-0900-daily", "unchanged sluice-fred-0700-daily"}},
		{"changed cron", wanted(t, testRegistry(t, ecos("ecos-a", "0 9 * * *"), ecos("ecos-b", "0 9 * * *"), fred("fred-a", "15 7 * * 1-5"))), synced,
			// The times differ, so the group is another schedule: the old one goes.
			[]string{"create sluice-fred-0715-mon-fri", "unchanged sluice-ecos-0900-daily", "delete sluice-fred-0700-daily"}},
		{"changed dataset set", wanted(t, testRegistry(t, ecos("ecos-a", "0 9 * * *"), ecos("ecos-x", "0 9 * * *"), fred("fred-a", "0 7 * * *"))), synced,
			[]string{"update sluice-ecos-0900-daily: datasets +1 (ecos-x) -1 (ecos-b)", "unchanged sluice-fred-0700-daily"}},
		{"removed", bw[:1], synced, []string{"unchanged sluice-ecos-0900-daily", "delete sluice-fred-0700-daily"}},
		{"foreign schedule untouched", bw, append(slices.Clone(synced), foreign), []string{"unchanged sluice-ecos-0900-daily", "unchanged sluice-fred-0700-daily", "foreign nightly-report"}},
		{"foreign schedule holding a wanted id", bw, []Have{synced[0], {ID: "sluice-fred-0700-daily", Workflow: "Mine"}},
			[]string{"unchanged sluice-ecos-0900-daily", "conflict sluice-fred-0700-daily: a schedule with id sluice-fred-0700-daily exists and is not Sluice's (no memo sluice-managed-by=sluice): rename or delete it, Sluice leaves it alone"}},
		{"a paused schedule stays as it is", bw, []Have{paused, synced[1]}, []string{"unchanged sluice-ecos-0900-daily", "unchanged sluice-fred-0700-daily"}},
		{"an owned schedule no one wants any more", bw, append(slices.Clone(synced), retired), []string{"unchanged sluice-ecos-0900-daily", "unchanged sluice-fred-0700-daily", "delete sluice-ecos-1730-mon-fri"}},
		{"policies changed by hand", bw, []Have{synced[0], longer}, []string{"update sluice-fred-0700-daily: catch-up window 24h0m0s → 96h0m0s", "unchanged sluice-ecos-0900-daily"}},
		{"jitter set by hand", bw, []Have{synced[0], hand}, []string{"update sluice-fred-0700-daily: skip, start, end or jitter set by hand: cleared", "unchanged sluice-ecos-0900-daily"}},
		{"nothing wanted: only Sluice's go", nil, append(slices.Clone(synced), foreign), []string{"delete sluice-ecos-0900-daily", "delete sluice-fred-0700-daily", "foreign nightly-report"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ops(Plan(tc.wants, tc.haves)); !slices.Equal(got, tc.want) {
				t.Errorf("plan\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCalendars: registry cron lines as Temporal matches them.
func TestCalendars(t *testing.T) {
	for _, tc := range []struct {
		line, slug, canon string
	}{
		{"0 9 * * *", "0900-daily", "cal s1 m1 h200 dfffffffe mo1ffe w7f y*"},
		{"30 18 * * 1-5", "1830-mon-fri", "cal s1 m40000000 h40000 dfffffffe mo1ffe w3e y*"},
		{"0 8 * * 2-6", "0800-tue-sat", "cal s1 m1 h100 dfffffffe mo1ffe w7c y*"},
		{"@daily", "0000-daily", "cal s1 m1 h1 dfffffffe mo1ffe w7f y*"},
		{"0 9 * * 1,3,5", "0900-mon.wed.fri", "cal s1 m1 h200 dfffffffe mo1ffe w2a y*"},
		{"0,30 9 * * *", "m0.30-h9-dx-mox-wx", "cal s1 m40000001 h200 dfffffffe mo1ffe w7f y*"},
		// Both days restricted: standard cron fires on either, a Temporal
		// calendar needs both, so two calendars.
		{"0 9 1 * 1", "m0-h9-d1-mox-wx-or-0900-mon", "cal s1 m1 h200 d2 mo1ffe w7f y*; cal s1 m1 h200 dfffffffe mo1ffe w2 y*"},
		{"@every 6h", "every-6h", "every 6h0m0s+0s"},
	} {
		s, err := cron.ParseStandard(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		cals, ivs, err := Calendars(s, tc.line)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if got := slug(cals, ivs); got != tc.slug {
			t.Errorf("%s: slug %q, want %q", tc.line, got, tc.slug)
		}
		if got := canonical(cals, ivs); got != tc.canon {
			t.Errorf("%s: canonical %q, want %q", tc.line, got, tc.canon)
		}
	}
	// The same times spelled otherwise are one group.
	reg := testRegistry(t, ecos("ecos-a", "0 9 * * *"), ecos("ecos-b", "00 09 * * 0-6"))
	if ws := wanted(t, reg); len(ws) != 1 || len(ws[0].Datasets) != 2 || ws[0].Cron != "0 9 * * * | 00 09 * * 0-6" {
		t.Errorf("two spellings of 09:00: %+v", ws)
	}
	if _, err := Wanted(reg, Options{CatchupWindow: time.Second}); err == nil {
		t.Error("a one-second catch-up window was accepted")
	}
}

// fakeNS is a namespace in memory: what Create and Update store is what
// Describe gives back (as described does), and any call can be made to
// fail.
type fakeNS struct {
	haves   map[string]Have
	listErr error
	fail    map[string]error // by "op id"
	calls   []string
}

func (f *fakeNS) IDs(context.Context) ([]string, error) {
	f.calls = append(f.calls, "list")
	if f.listErr != nil {
		return nil, f.listErr
	}
	var ids []string
	for id := range f.haves {
		ids = append(ids, id)
	}
	return ids, nil
}

func (f *fakeNS) Describe(_ context.Context, id string) (*Have, error) {
	if err := f.fail["describe "+id]; err != nil {
		return nil, err
	}
	if h, ok := f.haves[id]; ok {
		return &h, nil
	}
	return nil, nil
}

func (f *fakeNS) do(op, id string) error {
	f.calls = append(f.calls, op+" "+id)
	return f.fail[op+" "+id]
}

func (f *fakeNS) Create(_ context.Context, w Want) error {
	if err := f.do("create", w.ID); err != nil {
		return err
	}
	f.haves[w.ID] = described(w)
	return nil
}

func (f *fakeNS) Update(_ context.Context, w Want) error {
	if err := f.do("update", w.ID); err != nil {
		return err
	}
	h := described(w)
	h.Paused, h.Note = f.haves[w.ID].Paused, f.haves[w.ID].Note
	f.haves[w.ID] = h
	return nil
}

func (f *fakeNS) Delete(_ context.Context, id string) error {
	if err := f.do("delete", id); err != nil {
		return err
	}
	delete(f.haves, id)
	return nil
}

// TestSyncNeverPrunesAfterAFailure: deletes come last, and only when
// every create and update succeeded and the namespace could be listed; a
// dry run changes nothing; a second sync changes nothing.
func TestSyncNeverPrunesAfterAFailure(t *testing.T) {
	ctx := context.Background()
	old := wanted(t, testRegistry(t, ecos("ecos-a", "0 9 * * *"), fred("fred-a", "0 7 * * *")))
	now := wanted(t, testRegistry(t, ecos("ecos-a", "0 9 * * *"), ecos("ecos-b", "0 10 * * *")))
	start := func() *fakeNS {
		f := &fakeNS{haves: map[string]Have{"nightly-report": {ID: "nightly-report"}}, fail: map[string]error{}}
		for _, w := range old {
			f.haves[w.ID] = described(w)
		}
		return f
	}

	f := start()
	if r := Sync(ctx, f, now, true); r.Err() != nil || r.Count(Create) != 1 || r.Count(Delete) != 1 || len(f.calls) != 1 {
		t.Fatalf("dry run: %+v, calls %v", r, f.calls)
	}

	f = start()
	f.fail["create sluice-ecos-1000-daily"] = errors.New("frontend unavailable")
	r := Sync(ctx, f, now, false)
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "frontend unavailable") || slices.Contains(f.calls, "delete sluice-fred-0700-daily") {
		t.Fatalf("a failed create: err %v, calls %v", r.Err(), f.calls)
	}
	var out strings.Builder
	r.Write(&out)
	if !strings.Contains(out.String(), "not deleted: an earlier step failed") || !strings.Contains(out.String(), "left alone: 1 schedule(s) Sluice does not own: nightly-report") {
		t.Errorf("report:\n%s", out.String())
	}

	f = start()
	f.listErr = errors.New("visibility unavailable")
	r = Sync(ctx, f, now, false)
	if r.Err() == nil || !slices.Contains(f.calls, "create sluice-ecos-1000-daily") || slices.Contains(f.calls, "delete sluice-fred-0700-daily") {
		t.Fatalf("a failed list: err %v, calls %v", r.Err(), f.calls)
	}

	f = start()
	f.fail["describe sluice-ecos-0900-daily"] = errors.New("timeout")
	r = Sync(ctx, f, now, false)
	if r.Err() == nil || slices.Contains(f.calls, "delete sluice-fred-0700-daily") || slices.Contains(f.calls, "create sluice-ecos-0900-daily") {
		t.Fatalf("a failed describe: err %v, calls %v", r.Err(), f.calls)
	}

	f = start()
	if r := Sync(ctx, f, now, false); r.Err() != nil || r.Count(Create) != 1 || r.Count(Delete) != 1 || r.Count(Unchanged) != 1 {
		t.Fatalf("sync: %v %+v", r.Err(), r)
	}
	if _, ok := f.haves["nightly-report"]; !ok {
		t.Fatal("the foreign schedule was deleted")
	}
	f.calls = nil
	if r := Sync(ctx, f, now, false); r.Err() != nil || r.Count(Unchanged) != 2 || len(f.calls) != 1 {
		t.Fatalf("second sync: %v %+v, calls %v", r.Err(), r, f.calls)
	}
}

// TestPolicies: every schedule asks for its policies explicitly.
func TestPolicies(t *testing.T) {
	ws, err := Wanted(testRegistry(t, ecos("ecos-a", "0 9 * * *")), Options{CatchupWindow: 48 * time.Hour, TaskQueue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	w := ws[0]
	if w.CatchupWindow != 48*time.Hour || w.TaskQueue != "q" || Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL {
		t.Errorf("want %+v", w)
	}
	in := w.Input()
	if in.Date != "" || in.Schedule == nil || in.Schedule.Timezone != "Asia/Seoul" || in.Schedule.ID != w.ID || !slices.Equal(in.Datasets, []string{"ecos-a"}) {
		t.Errorf("input %+v", in)
	}
}
