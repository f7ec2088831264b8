package watch

import (
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
