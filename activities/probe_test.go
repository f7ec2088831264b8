package activities

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// probeStack is the Probe activity over the real simulator (its clock
// fixed), an SQLite watch store and connectors whose rate-limit gate the
// test decides, wrapped by probeLimiter as in production.
type probeStack struct {
	acts  *Activities
	sim   *simulator.Simulator
	store store.Store
	gate  atomic.Pointer[func(context.Context, permit.Call) error]
	calls atomic.Int64 // data calls that passed the gate
}

// probeNow is a Tuesday afternoon in Seoul.
var probeNow = time.Date(2026, 11, 24, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))

func newProbeStack(t *testing.T) *probeStack {
	t.Helper()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return probeNow }
	sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 7, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &probeStack{sim: sim, store: st}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The watch's clock moves a second at every probe (the store records
	// one probe per dataset and time).
	var tick atomic.Int64
	s.acts = &Activities{cfg: Config{Registry: reg, Watch: st}, log: log, connectors: map[string]connector.Connector{},
		now: func() time.Time { return probeNow.Add(time.Duration(tick.Add(1)) * time.Second) }}
	tokens, err := tokenstore.NewFile(filepath.Join(dir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	gate := func(ctx context.Context, call permit.Call) (permit.Permit, error) {
		if g := s.gate.Load(); g != nil {
			if err := (*g)(ctx, call); err != nil {
				return permit.Permit{}, err
			}
		}
		if call.Kind == permit.CallData {
			s.calls.Add(1)
		}
		return permit.Permit{}, nil
	}
	for _, p := range reg.Providers {
		c, err := connector.New(p, connector.Options{BaseURL: srv.URL, Credentials: connector.MapCredentials(simulator.TestCredentials(reg)),
			TokenStore: tokens, Logger: log, Now: now, Limiter: probeLimiter{permit.Funcs{WaitFunc: gate}}})
		if err != nil {
			t.Fatal(err)
		}
		s.acts.connectors[p.ID] = c
	}
	return s
}

func (s *probeStack) setGate(g func(context.Context, permit.Call) error) { s.gate.Store(&g) }

// TestProbeRecordsAnAnswer: a probe that answers is recorded with its
// status, shape and newest period, and makes a never-probed dataset up.
func TestProbeRecordsAnAnswer(t *testing.T) {
	s := newProbeStack(t)
	ctx := context.Background()
	for _, c := range []struct{ dataset, newest string }{
		{"fred-dgs10", "2026-11-20"},             // Monday 23:30 in Chicago: Friday's yield is the newest
		{"upbit-krw-btc", "2026-11-24T00:00:00"}, // today's candle (UTC)
		{"ecos-722y001-0101000", "20261123"},     // yesterday's base rate
		{"fsc-stock-market-index", ""},           // one row of unknown order: no newest period claimed
	} {
		res, err := s.acts.Probe(ctx, ProbeInput{Dataset: c.dataset})
		if err != nil {
			t.Fatalf("%s: %v", c.dataset, err)
		}
		if res.Outcome != watch.OK || res.HTTPStatus != 200 || res.Newest != c.newest || res.State != watch.Up || !res.Recorded ||
			res.Interval != watch.Interval(s.acts.cfg.Registry.Dataset(c.dataset), 1) || res.Confirm.Wanted() || res.Changes != 1 {
			t.Errorf("%s: %+v", c.dataset, res)
		}
		probes, err := s.store.Probes(ctx, store.ProbeFilter{Datasets: []string{c.dataset}, WithShapes: true})
		if err != nil || len(probes) != 1 {
			t.Fatalf("%s: %d probes recorded, %v", c.dataset, len(probes), err)
		}
		if p := probes[0]; p.Outcome != watch.OK || p.Shape.Empty() || p.HTTPStatus != 200 || p.Confirmation {
			t.Errorf("%s: recorded %+v", c.dataset, p)
		}
	}
	if n := s.calls.Load(); n != 4 {
		t.Errorf("%d data calls passed the gate, want 4", n)
	}
}

// TestProbeOutageNeedsConfirmation: a provider that is down fails the
// probe with its status; the state is degraded and the store asks for a
// confirmation, which is marked and counted; the third failure is down.
func TestProbeOutageNeedsConfirmation(t *testing.T) {
	s := newProbeStack(t)
	ctx := context.Background()
	if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"}); err != nil {
		t.Fatal(err)
	}
	if err := s.sim.SetFaults([]simulator.Fault{{Provider: "fred", Down: true}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != watch.ProviderError || res.HTTPStatus != 503 || res.State != watch.Degraded || !res.Confirm.Wanted() || res.Message == "" {
		t.Fatalf("first failure: %+v", res)
	}
	for i := 0; i < 2; i++ {
		if res, err = s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10", Confirmation: true}); err != nil {
			t.Fatal(err)
		}
	}
	if res.State != watch.Down || res.Changes != 1 {
		t.Errorf("after two confirmations: %+v", res)
	}
	changes, _ := s.store.Changes(ctx, store.ChangeFilter{Datasets: []string{"fred-dgs10"}, Kinds: []watch.ChangeKind{watch.ChangeState}})
	if len(changes) != 2 || changes[0].To != "down" || len(changes[0].Evidence) != 3 || !changes[0].Evidence[2].Confirmation ||
		changes[0].Evidence[0].HTTPStatus != 503 {
		t.Errorf("state changes %+v", changes)
	}
}

// TestProbeHeldBackIsThrottled: whatever keeps a probe from being sent by
// our own side — the limiter's daily quota, a permit that does not come
// within the probe's wait, the limiter failing — is recorded as throttled
// (unknown, an operational event), never as the provider's failure.
func TestProbeHeldBackIsThrottled(t *testing.T) {
	s := newProbeStack(t)
	// A rate scale so large that the hourly probe may wait a millisecond.
	s.acts.cfg.RateScale = 3.6e6
	ctx := context.Background()
	if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"}); err != nil {
		t.Fatal(err)
	}
	for name, gate := range map[string]func(context.Context, permit.Call) error{
		"quota": func(context.Context, permit.Call) error {
			return &connector.Error{Class: connector.QuotaExhausted, Provider: "fred", Code: "sluice-quota", Message: "declared daily quota used up"}
		},
		"no permit in time": func(ctx context.Context, call permit.Call) error {
			<-ctx.Done() // the gate's deadline, not the activity's
			return ctx.Err()
		},
		"limiter unreachable": func(context.Context, permit.Call) error {
			return errors.New("waiting for a permit of fred/key: connection refused")
		},
	} {
		s.setGate(gate)
		before := s.calls.Load()
		res, err := s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Outcome != watch.Throttled || res.State != watch.Unknown || res.HTTPStatus != 0 || res.Latency != 0 || res.Confirm.Wanted() {
			t.Errorf("%s: %+v", name, res)
		}
		if s.calls.Load() != before {
			t.Errorf("%s: a call went out", name)
		}
	}
	evs, err := s.store.Events(ctx, store.EventFilter{Kinds: []string{watch.KindProbeThrottled}})
	if err != nil || len(evs) != 3 {
		t.Errorf("%d throttled events, %v", len(evs), err)
	}
	if st, _ := s.store.States(ctx, probeNow, "fred-dgs10"); len(st) != 1 || st[0].Confirmed != watch.Up {
		t.Errorf("our throttling changed the confirmed state: %+v", st)
	}
}

// TestProbeGatePassesOtherCalls: ingest calls and token calls go through
// the gate unchanged, its errors unmarked.
func TestProbeGatePassesOtherCalls(t *testing.T) {
	boom := errors.New("boom")
	deadline := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := probeLimiter{permit.Funcs{WaitFunc: func(_ context.Context, call permit.Call) (permit.Permit, error) {
		if call.Dataset == "ok" {
			return permit.Permit{Deadline: deadline}, nil
		}
		return permit.Permit{}, boom
	}}}.Wait
	if _, err := g(context.Background(), permit.Call{Kind: permit.CallData, Dataset: "d"}); err != boom {
		t.Errorf("ingest call: %v", err)
	}
	if _, err := g(context.Background(), permit.Call{Kind: permit.CallToken, Probe: true}); err != boom {
		t.Errorf("token call: %v", err)
	}
	if _, err := g(context.Background(), permit.Call{Kind: permit.CallData, Dataset: "d", Probe: true}); !errors.Is(err, watch.ErrNotSent) || !errors.Is(err, boom) {
		t.Errorf("probe: %v", err)
	}
	// A probe's permit comes back as the gate granted it.
	if p, err := g(context.Background(), permit.Call{Kind: permit.CallData, Dataset: "ok", Probe: true}); err != nil || !p.Deadline.Equal(deadline) {
		t.Errorf("granted probe: %+v, %v", p, err)
	}
	var none probeLimiter
	if _, err := none.Wait(context.Background(), permit.Call{Kind: permit.CallData, Probe: true}); err != nil {
		t.Errorf("no gate: %v", err)
	}
}

// TestProbeOfAnUnwatchedDataset: a dataset without a probe section (or
// unknown) is not_watched, which ends its watch.
func TestProbeOfAnUnwatchedDataset(t *testing.T) {
	s := newProbeStack(t)
	for _, id := range []string{"nope"} {
		_, err := s.acts.Probe(context.Background(), ProbeInput{Dataset: id})
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != ErrTypeNotWatched || !app.NonRetryable() {
			t.Errorf("%s: %v", id, err)
		}
		if _, err := s.acts.WatchPlan(context.Background(), WatchPlanInput{Dataset: id}); !errors.As(err, &app) || app.Type() != ErrTypeNotWatched {
			t.Errorf("plan of %s: %v", id, err)
		}
	}
}

// TestWatchPlanReadsTheLastProbe: a watch started again learns when the
// store last probed its dataset.
func TestWatchPlanReadsTheLastProbe(t *testing.T) {
	s := newProbeStack(t)
	s.acts.cfg.RateScale = 60
	ctx := context.Background()
	plan, err := s.acts.WatchPlan(ctx, WatchPlanInput{Dataset: "fred-dgs10"})
	if err != nil || !plan.LastProbe.IsZero() || plan.Interval != time.Minute || plan.Provider != "fred" {
		t.Fatalf("fresh plan %+v, %v", plan, err)
	}
	res, err := s.acts.Probe(ctx, ProbeInput{Dataset: "fred-dgs10"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err = s.acts.WatchPlan(ctx, WatchPlanInput{Dataset: "fred-dgs10"})
	if err != nil || !plan.LastProbe.Equal(res.At.UTC().Truncate(time.Microsecond)) || plan.LastProbe.Before(probeNow) {
		t.Errorf("plan %+v after a probe at %s, %v", plan, res.At, err)
	}
}

func TestClipMessage(t *testing.T) {
	long := strings.Repeat("가", 200) // 600 bytes
	c := clipMessage(long)
	if len(c) > maxResultMessage+len("…") || !strings.HasSuffix(c, "…") || !strings.HasPrefix(long, strings.TrimSuffix(c, "…")) {
		t.Errorf("clipped to %d bytes: %q", len(c), c)
	}
	if clipMessage("short") != "short" {
		t.Error("a short message changed")
	}
}
