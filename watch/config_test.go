package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

func TestConfigForDefaultRegistry(t *testing.T) {
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Defaults.ProbeHeadroom != 2 {
		t.Fatalf("headroom %d", reg.Defaults.ProbeHeadroom)
	}
	cfg, err := ConfigFor(reg, reg.Dataset("fsc-stock-market-index")) // hourly
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if p.FailuresToConfirm != 3 || p.SuccessesToConfirm != 2 || p.ConfirmationsPerDay != 24 ||
		p.ConfirmSpacing != 10*time.Minute || p.StaleAfter != 2*time.Hour+10*time.Minute || p.Location.String() != "Asia/Seoul" {
		t.Errorf("hourly policy %+v", p)
	}
	cfg, err = ConfigFor(reg, reg.Dataset("ecos-731y001-0000001")) // daily
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Policy; p.ConfirmationsPerDay != 1 || p.ConfirmSpacing != 10*time.Minute || p.StaleAfter != 48*time.Hour+10*time.Minute {
		t.Errorf("daily policy %+v", p)
	}
	// Within the gate: scheduled probes plus the confirmation budget never
	// exceed probes a day × headroom, for every probed dataset.
	for _, ds := range reg.Datasets {
		if ds.Probe == nil {
			if _, err := ConfigFor(reg, ds); err == nil || !strings.Contains(err.Error(), "no probe section") {
				t.Errorf("%s: %v", ds.ID, err)
			}
			continue
		}
		cfg, err := ConfigFor(reg, ds)
		if err != nil {
			t.Fatal(err)
		}
		if got, reserved := ds.Probe.PerDay()+cfg.Policy.ConfirmationsPerDay, ds.Probe.PerDay()*reg.Defaults.ProbeHeadroom; got > reserved {
			t.Errorf("%s: %d probes a day, the gate reserved %d", ds.ID, got, reserved)
		}
	}
	if _, err := ConfigFor(reg, nil); err == nil {
		t.Error("nil dataset")
	}
}

// TestBudgetNeverExceeded drives an hourly dataset whose every scheduled
// probe fails and whose confirmations fail once and then answer (so every
// hour wants two confirmations and never confirms), and counts the probes
// sent — scheduled plus every confirmation Step asks for — against what
// the gate reserved: 24 × 2.
func TestBudgetNeverExceeded(t *testing.T) {
	cfg := hourly
	var s DatasetState
	sent, confirmations := 0, 0
	for hour := 0; hour < 24; hour++ {
		at := t0.Add(time.Duration(hour) * time.Hour)
		res := Step(cfg, s, Probe{At: at, Dataset: "ds", Outcome: ProviderError, HTTPStatus: 500})
		sent++
		s = res.State
		for n := 0; res.Confirm.Wanted(); n++ {
			o := ProviderError
			if n == 1 {
				o = OK
			}
			res = Step(cfg, s, Probe{At: res.Confirm.At, Dataset: "ds", Outcome: o, HTTPStatus: 500, Confirmation: true})
			sent++
			confirmations++
			s = res.State
		}
	}
	if reserved := 24 * 2; sent != reserved || confirmations != cfg.Policy.ConfirmationsPerDay {
		t.Errorf("%d probes sent (%d confirmations), want the %d reserved (24 confirmations)", sent, confirmations, reserved)
	}
	// Once the budget is spent the scheduled failures confirm by
	// themselves: three in a row are an outage.
	if s.Confirmed != Down {
		t.Errorf("confirmed %s, want down", s.Confirmed)
	}
}

// TestScaledConfig: a watch at rate scale 60 runs an hour in a minute: its
// spacing and staleness shrink with it, and so does the budget's day, so
// that the day's confirmations are spent over 24 minutes — never more
// than the gate reserved per (scaled) day, and renewed every scaled day.
func TestScaledConfig(t *testing.T) {
	cfg := hourly.Scaled(60)
	p := cfg.Policy
	if p.ConfirmSpacing != 10*time.Second || p.StaleAfter != 130*time.Second || p.DayLength != 24*time.Minute ||
		p.ConfirmationsPerDay != 24 || p.FailuresToConfirm != 3 || p.SlowAfter != 15*time.Second {
		t.Fatalf("scaled policy %+v", p)
	}
	if same := hourly.Scaled(1); same.Policy != hourly.Policy {
		t.Errorf("scale 1 changed the policy: %+v", same.Policy)
	}
	var s DatasetState
	for day := 0; day < 3; day++ {
		sent, confirmations := 0, 0
		for hour := 0; hour < 24; hour++ {
			at := t0.Add(time.Duration(day)*24*time.Minute + time.Duration(hour)*time.Minute)
			// Every scheduled probe disagrees with the confirmed state, and
			// its first confirmation agrees with it: a streak every hour
			// that never confirms, each wanting two confirmations.
			bad := s.Confirmed != Down
			o := func(bad bool) Outcome {
				if bad {
					return ProviderError
				}
				return OK
			}
			res := Step(cfg, s, Probe{At: at, Dataset: "ds", Outcome: o(bad)})
			sent++
			s = res.State
			for n := 0; res.Confirm.Wanted(); n++ {
				if !res.Confirm.At.After(at) || res.Confirm.At.Sub(at) > time.Minute {
					t.Fatalf("day %d hour %d: confirmation at %s, not within the scaled hour after %s", day, hour, res.Confirm.At, at)
				}
				res = Step(cfg, s, Probe{At: res.Confirm.At, Dataset: "ds", Outcome: o(bad != (n == 1)), Confirmation: true})
				sent++
				confirmations++
				s = res.State
			}
		}
		if sent > 48 || confirmations > 24 {
			t.Errorf("scaled day %d: %d probes (%d confirmations) sent, more than the 48 reserved", day, sent, confirmations)
		}
		if confirmations == 0 {
			t.Errorf("scaled day %d: no confirmation sent: the budget was not renewed", day)
		}
		if want := fmt.Sprintf("2026-11-30/%d", day); s.BudgetDay != want {
			t.Errorf("scaled day %d: budget day %q, want %q", day, s.BudgetDay, want)
		}
	}
}

func TestInterval(t *testing.T) {
	ds := &registry.Dataset{Probe: &registry.Probe{IntervalMinutes: 60}}
	for _, c := range []struct {
		scale float64
		want  time.Duration
	}{{0, time.Hour}, {1, time.Hour}, {60, time.Minute}, {1e12, time.Millisecond}} {
		if got := Interval(ds, c.scale); got != c.want {
			t.Errorf("scale %g: %s, want %s", c.scale, got, c.want)
		}
	}
	if Interval(&registry.Dataset{}, 1) != 0 || Interval(nil, 1) != 0 {
		t.Error("a dataset without a probe has an interval")
	}
}
