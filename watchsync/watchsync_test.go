package watchsync

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/sluicehq/sluice/registry"
)

const providers = `defaults: {probe_headroom: 2}
providers:
  - id: fred
    timezone: America/Chicago
    auth: {strategy: api_key_query, param: api_key, credentials: {api_key: FRED_API_KEY}}
    base_url: https://api.stlouisfed.org
    rate_limits:
      - scope: key
        requests_per_second: 2
        source: {url: "https://fred.stlouisfed.org/docs/api/fred/", verified_at: 2026-11-30}
    terms_source: {url: "https://fred.stlouisfed.org/docs/api/terms_of_use.html", verified_at: 2026-11-30}
`

const datasets = `id: a
provider: fred
request: {series_id: A}
probe: {interval_minutes: 60}
---
id: b
provider: fred
request: {series_id: B}
probe: {interval_minutes: 1440}
---
id: c
provider: fred
request: {series_id: C}
---
id: d
provider: fred
request: {series_id: D}
probe: {interval_minutes: 30}
`

func TestPlan(t *testing.T) {
	reg, err := registry.Load(fstest.MapFS{"providers.yaml": {Data: []byte(providers)}, "datasets/x.yaml": {Data: []byte(datasets)}}, "t",
		registry.Options{Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	running := map[string]Watch{
		"a":    {Dataset: "a", WorkflowID: "watch/a", TaskQueue: "sluice", Started: since},
		"b":    {Dataset: "b", WorkflowID: "watch/b", TaskQueue: "old-queue", Started: since},
		"c":    {Dataset: "c", WorkflowID: "watch/c", TaskQueue: "sluice"},
		"gone": {Dataset: "gone", WorkflowID: "watch/gone", TaskQueue: "sluice"},
	}
	got := Plan(reg, running, "sluice")
	want := []Step{
		{Action: Keep, Dataset: "a", WorkflowID: "watch/a"},
		{Action: Restart, Dataset: "b", WorkflowID: "watch/b"},
		{Action: Stop, Dataset: "c", WorkflowID: "watch/c", Reason: "no probe section in the registry"},
		{Action: Start, Dataset: "d", WorkflowID: "watch/d"},
		{Action: Stop, Dataset: "gone", WorkflowID: "watch/gone", Reason: "not in the registry"},
	}
	if len(got) != len(want) {
		t.Fatalf("plan %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Action != w.Action || g.Dataset != w.Dataset || g.WorkflowID != w.WorkflowID || (w.Reason != "" && g.Reason != w.Reason) || g.Reason == "" {
			t.Errorf("step %d: %+v, want %+v", i, g, w)
		}
	}
	// Everything in step: nothing but keeps.
	all := map[string]Watch{}
	for _, d := range Probed(reg) {
		all[d.ID] = Watch{Dataset: d.ID, WorkflowID: "watch/" + d.ID, TaskQueue: "sluice"}
	}
	for _, s := range Plan(reg, all, "sluice") {
		if s.Action != Keep {
			t.Errorf("in step, yet %+v", s)
		}
	}
	if ids := Probed(reg); len(ids) != 3 || ids[0].ID != "a" || ids[2].ID != "d" {
		t.Errorf("probed %v", ids)
	}
}

// TestRetryTransient: a listing a just-started server cuts short (the
// dev test's second start saw "stream terminated by RST_STREAM with error
// code: CANCEL") is asked again; other errors and a finished context are
// returned at once, and the attempts are bounded.
func TestRetryTransient(t *testing.T) {
	rst := serviceerror.NewCanceled("stream terminated by RST_STREAM with error code: CANCEL")
	for _, tc := range []struct {
		name     string
		errs     []error
		attempts int
		wantErr  error
		wantN    int
	}{
		{"cancelled stream, then ok", []error{rst, nil}, 5, nil, 2},
		{"unavailable twice, then ok", []error{serviceerror.NewUnavailable("starting"), serviceerror.NewUnavailable("starting"), nil}, 5, nil, 3},
		{"not transient", []error{serviceerror.NewInvalidArgument("bad query"), nil}, 5, serviceerror.NewInvalidArgument("bad query"), 1},
		{"bounded", []error{rst, rst, rst, rst}, 3, rst, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := retryTransient(context.Background(), tc.attempts, time.Millisecond, func() error {
				e := tc.errs[n]
				n++
				return e
			})
			if n != tc.wantN || (err == nil) != (tc.wantErr == nil) || (err != nil && err.Error() != tc.wantErr.Error()) {
				t.Errorf("calls %d, err %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	if err := retryTransient(ctx, 5, time.Millisecond, func() error { n++; return rst }); err == nil || n != 1 {
		t.Errorf("finished context: %d calls, %v; want 1 call and the error", n, err)
	}
}
