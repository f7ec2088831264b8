package activities

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/sink"
	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// withLake gives the probe stack's activities a local lake, so that they
// ingest too.
func (s *probeStack) withLake(t *testing.T) {
	t.Helper()
	lake, err := sink.NewLocal(filepath.Join(t.TempDir(), "lake"))
	if err != nil {
		t.Fatal(err)
	}
	s.acts.cfg.Sink = lake
}

// TestIngestStandsInForTheNextProbe: a daily run's own answer is recorded
// as the watch's passive observation (outcome, status, latency, shape), and
// a scheduled probe within the interval after it sends nothing and records
// nothing; one an interval later probes again.
func TestIngestStandsInForTheNextProbe(t *testing.T) {
	s := newProbeStack(t)
	s.withLake(t)
	ctx := context.Background()
	const id = "fred-dgs10"
	if _, err := s.acts.Ingest(ctx, IngestInput{Dataset: id, From: "2026-11-20", LookBack: true}); err != nil {
		t.Fatal(err)
	}
	ingestCalls := s.calls.Load()
	probes, err := s.store.Probes(ctx, store.ProbeFilter{Datasets: []string{id}, WithShapes: true})
	if err != nil || len(probes) != 1 {
		t.Fatalf("after the ingest: %d observations recorded (%v), want 1", len(probes), err)
	}
	if p := probes[0]; p.Outcome != watch.OK || p.HTTPStatus != 200 || p.Shape.Empty() || p.Confirmation {
		t.Errorf("the ingest's observation: %+v", p)
	}

	res, err := s.acts.Probe(ctx, ProbeInput{Dataset: id})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passive || res.Recorded || res.Outcome != watch.OK || res.State != watch.Up || res.Confirm.Wanted() {
		t.Errorf("a probe right after the ingest: %+v, want the ingest's observation, nothing recorded", res)
	}
	if n := s.calls.Load() - ingestCalls; n != 0 {
		t.Errorf("a probe right after the ingest sent %d calls, want none", n)
	}
	if probes, _ = s.store.Probes(ctx, store.ProbeFilter{Datasets: []string{id}}); len(probes) != 1 {
		t.Errorf("%d observations recorded after the suppressed probe, want 1", len(probes))
	}

	// An interval later the scheduled probe is sent.
	interval := res.Interval
	later := probeNow.Add(interval + time.Minute)
	s.acts.now = func() time.Time { return later }
	if res, err = s.acts.Probe(ctx, ProbeInput{Dataset: id}); err != nil {
		t.Fatal(err)
	}
	if res.Passive || !res.Recorded || s.calls.Load()-ingestCalls != 1 {
		t.Errorf("a probe an interval after the ingest: %+v, %d calls; want it sent and recorded", res, s.calls.Load()-ingestCalls)
	}
}

// TestFailingIngestIsObservedOnce: a daily run that fails is an observation
// the confirmation logic sees exactly once — the scheduled probe it
// stands in for records nothing and asks for
// the confirmation a failing probe would, and the confirmations are sent
// and counted against the budget as usual.
func TestFailingIngestIsObservedOnce(t *testing.T) {
	s := newProbeStack(t)
	s.withLake(t)
	ctx := context.Background()
	const id = "fred-dgs10"
	if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: id}); err != nil { // up
		t.Fatal(err)
	}
	if err := s.sim.SetFaults([]simulator.Fault{{Provider: "fred", Down: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.acts.Ingest(ctx, IngestInput{Dataset: id, From: "2026-11-20", LookBack: true}); err == nil {
		t.Fatal("the ingest of a provider down succeeded")
	}
	st, err := s.store.States(ctx, s.acts.clock(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got := st[0]; got.Probes != 2 || len(got.Streak) != 1 || got.Streak[0].HTTPStatus != 503 || got.LastPassive.IsZero() {
		t.Fatalf("after the failing ingest: %d probes stepped, streak %+v, last passive %s; want 2, one 503, set", got.Probes, got.Streak, got.LastPassive)
	}

	calls := s.calls.Load()
	res, err := s.acts.Probe(ctx, ProbeInput{Dataset: id})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passive || res.Recorded || res.Outcome != watch.ProviderError || res.State != watch.Degraded || !res.Confirm.Wanted() {
		t.Fatalf("the scheduled probe after the failing ingest: %+v; want the ingest's failure, a confirmation asked", res)
	}
	if s.calls.Load() != calls {
		t.Errorf("the suppressed probe sent %d calls", s.calls.Load()-calls)
	}
	for range 2 {
		if res, err = s.acts.Probe(ctx, ProbeInput{Dataset: id, Confirmation: true}); err != nil {
			t.Fatal(err)
		}
		if res.Passive || !res.Recorded {
			t.Fatalf("a confirmation after the failing ingest was not sent: %+v", res)
		}
	}
	if res.State != watch.Down {
		t.Errorf("after the ingest's failure and two confirmations: %s, want down (1 + 2 failures confirm)", res.State)
	}
	st, _ = s.store.States(ctx, s.acts.clock(), id)
	if st[0].Probes != 4 || st[0].ConfirmationsUsed != 2 {
		t.Errorf("stepped %d observations, %d confirmations used; want 4 (probe, ingest, two confirmations) and 2", st[0].Probes, st[0].ConfirmationsUsed)
	}
}

// TestIngestConfirmingARecoveryNotifiesIt: a dataset confirmed down whose
// first answer again came from a probe and whose second came from a daily
// run's ingest is confirmed up by the ingest's observation, and that
// recovery is passed to the notifier like a probe's (it was recorded but
// never told before).
func TestIngestConfirmingARecoveryNotifiesIt(t *testing.T) {
	s := newProbeStack(t)
	s.withLake(t)
	fn := &fakeNotifier{}
	s.acts.cfg.Notifier = fn
	ctx := context.Background()
	const id = "ecos-722y001-0101000"
	if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: id}); err != nil { // up
		t.Fatal(err)
	}
	if err := s.sim.SetFaults([]simulator.Fault{{Provider: "ecos", Down: true}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: id, Confirmation: i > 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	if res, err := s.acts.Probe(ctx, ProbeInput{Dataset: id}); err != nil || res.State != watch.Degraded {
		t.Fatalf("first answer after the outage: %+v %v, want degraded (recovery not yet confirmed)", res, err)
	}
	if _, err := s.acts.Ingest(ctx, IngestInput{Dataset: id, From: "2026-11-20", LookBack: true}); err != nil {
		t.Fatal(err)
	}
	st, err := s.store.States(ctx, s.acts.clock(), id)
	if err != nil || st[0].State != watch.Up {
		t.Fatalf("after the ingest: %+v %v, want up", st, err)
	}
	if got := fn.kinds(); !equalKinds(got, []notify.Kind{notify.Down, notify.Up}) {
		t.Fatalf("notified %v, want [down up]: the recovery the ingest confirmed was not told", got)
	}
}
