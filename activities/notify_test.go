package activities

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/watch"
)

// fakeNotifier keeps what the probes pass to the notifier.
type fakeNotifier struct {
	mu  sync.Mutex
	got []notify.Change
}

func (f *fakeNotifier) Notify(_ context.Context, cs []notify.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, cs...)
	return nil
}

func (f *fakeNotifier) kinds() []notify.Kind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []notify.Kind
	for _, c := range f.got {
		out = append(out, c.Kind)
	}
	return out
}

// outage probes ecos-722y001-0101000 while ecos is down until the state is down,
// then while it is back until it is up again.
func outage(t *testing.T, s *probeStack) {
	t.Helper()
	ctx := context.Background()
	if err := s.sim.SetFaults([]simulator.Fault{{Provider: "ecos", Down: true}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: "ecos-722y001-0101000", Confirmation: i > 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		res, err := s.acts.Probe(ctx, ProbeInput{Dataset: "ecos-722y001-0101000", Confirmation: i > 0})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && res.State != watch.Up {
			t.Fatalf("not up again: %+v", res)
		}
	}
}

func equalKinds(a, b []notify.Kind) bool {
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

// TestProbeNotifiesAnOutageAndItsRecovery: the first up is no news; the
// confirmed down and the confirmed recovery are passed to the notifier.
func TestProbeNotifiesAnOutageAndItsRecovery(t *testing.T) {
	s := newProbeStack(t)
	fn := &fakeNotifier{}
	s.acts.cfg.Notifier = fn
	if _, err := s.acts.Probe(context.Background(), ProbeInput{Dataset: "ecos-722y001-0101000"}); err != nil {
		t.Fatal(err)
	}
	outage(t, s)
	if got := fn.kinds(); !equalKinds(got, []notify.Kind{notify.Down, notify.Up}) {
		t.Fatalf("notified %v, want [down up]", got)
	}
	if c := fn.got[0]; c.Provider != "ecos" || c.Dataset != "ecos-722y001-0101000" || c.Key == "" {
		t.Errorf("down change %+v", c)
	}
	// Each says how many of ecos's datasets the watch probes, for the
	// notifier to tell ecos's own down from some of its datasets'.
	watched := 0
	for _, ds := range s.acts.cfg.Registry.DatasetsOf("ecos") {
		if ds.Probe != nil && ds.Probe.IntervalMinutes > 0 {
			watched++
		}
	}
	for _, c := range fn.got {
		if watched == 0 || c.Watched != watched {
			t.Errorf("%s change says %d watched datasets of ecos, want %d", c.Kind, c.Watched, watched)
		}
	}
}

// TestOwnThrottlingIsNeverNotified: probes our limiter or quota held back
// make no notification, and neither do the events they record; an
// exhausted daily quota does.
func TestOwnThrottlingIsNeverNotified(t *testing.T) {
	s := newProbeStack(t)
	s.acts.cfg.RateScale = 3.6e6
	fn := &fakeNotifier{}
	s.acts.cfg.Notifier = fn
	ctx := context.Background()
	if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: "ecos-722y001-0101000"}); err != nil {
		t.Fatal(err)
	}
	s.setGate(func(context.Context, permit.Call) error {
		return &connector.Error{Class: connector.QuotaExhausted, Provider: "fred", Code: "sluice-quota", Message: "declared daily quota used up"}
	})
	for range 10 {
		res, err := s.acts.Probe(ctx, ProbeInput{Dataset: "ecos-722y001-0101000"})
		if err != nil || res.Outcome != watch.Throttled {
			t.Fatalf("%+v %v", res, err)
		}
	}
	NotifyEvent(ctx, s.acts, watch.Event{Kind: watch.KindProbeThrottled, At: probeNow, Provider: "fred", Dataset: "ecos-722y001-0101000"})
	NotifyEvent(ctx, s.acts, watch.Event{Kind: "ratelimit.backoff", At: probeNow, Provider: "fred", Scope: "fred/key"})
	if got := fn.kinds(); len(got) != 0 {
		t.Fatalf("our own throttling notified %v", got)
	}
	NotifyEvent(ctx, s.acts, watch.Event{Kind: "quota.exhausted", At: probeNow, Provider: "fred", Scope: "fred/key", Message: "fred/key: daily quota used up"})
	if got := fn.kinds(); !equalKinds(got, []notify.Kind{notify.QuotaExhausted}) {
		t.Fatalf("an exhausted quota notified %v", got)
	}
}

// TestMaintenanceWindowsSilenceNotifications: an outage inside a window
// of the store (`sluice maintenance add`) or of the registry notifies
// nothing; once the window has ended, the next outage notifies again.
func TestMaintenanceWindowsSilenceNotifications(t *testing.T) {
	for _, from := range []string{"store", "registry"} {
		t.Run(from, func(t *testing.T) {
			s := newProbeStack(t)
			fn := &fakeNotifier{}
			s.acts.cfg.Notifier = fn
			ctx := context.Background()
			if _, err := s.acts.Probe(ctx, ProbeInput{Dataset: "ecos-722y001-0101000"}); err != nil {
				t.Fatal(err)
			}
			// The probes' clock moves on at every reading from probeNow:
			// the window is open through the first outage and ends, read
			// from that clock, before the second.
			start := probeNow.Add(-time.Hour)
			var id string
			switch from {
			case "store":
				w, err := s.store.AddMaintenance(ctx, notify.Window{Provider: "ecos", Start: start, End: probeNow.Add(time.Hour), Reason: "FRED upgrade"})
				if err != nil {
					t.Fatal(err)
				}
				id = w.ID
			case "registry":
				ecos := s.acts.cfg.Registry.Provider("ecos")
				saved := ecos.Maintenance
				ecos.Maintenance = []registry.Maintenance{{Start: start, End: probeNow.Add(time.Hour), Reason: "FRED upgrade"}}
				t.Cleanup(func() { ecos.Maintenance = saved })
			}
			outage(t, s)
			if got := fn.kinds(); len(got) != 0 {
				t.Fatalf("notified %v during maintenance", got)
			}
			end := s.acts.now()
			if id != "" {
				if _, err := s.store.EndMaintenance(ctx, id, end); err != nil {
					t.Fatal(err)
				}
			} else {
				s.acts.cfg.Registry.Provider("ecos").Maintenance[0].End = end
			}
			outage(t, s)
			if got := fn.kinds(); !equalKinds(got, []notify.Kind{notify.Down, notify.Up}) {
				t.Fatalf("after the window: notified %v, want [down up]", got)
			}
		})
	}
}
