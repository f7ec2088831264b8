package simulator_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// The tests of the simulator's core (windows, statistics, faults, the
// control API) run with every provider linked and use FRED and ECOS, whose
// answers are small, as their vehicle; each provider's own behaviour is
// tested in its package.

// fredGet calls DGS10 (from 1 March 2025 unless query names a start).
func fredGet(h *simtest.Harness, query string) simtest.Response {
	h.T.Helper()
	if !strings.Contains(query, "observation_start") {
		query += "&observation_start=2025-03-01"
	}
	return h.Get("/fred/series/observations?series_id=DGS10&api_key="+h.Creds["FRED_API_KEY"]+"&file_type=json"+query, nil)
}

func ecosGet(h *simtest.Harness, rest string) simtest.Response {
	h.T.Helper()
	return h.Get("/api/StatisticSearch/"+h.Creds["ECOS_API_KEY"]+"/"+rest, nil)
}

func TestStatsAndReset(t *testing.T) {
	h := simtest.New(t, nil)
	fredGet(h, "")
	h.Clock.Advance(250 * time.Millisecond)
	fredGet(h, "")
	fredGet(h, "") // rejected: a third call within a second
	st := h.Stats()
	f := st.Scopes["fred/key"]
	if f.Calls != 3 || f.Accepted != 2 || f.Rejected != 1 || f.Violations != 1 || *f.MinGapMS != 250 || *f.MinGapAllMS != 0 ||
		f.Limits["requests_per_minute"] != 120 || f.MaxInWindow["requests_per_second"] != 3 {
		t.Errorf("fred stats %+v", f)
	}
	if len(st.Scopes) != 8 || st.Providers["fred"].Requests != 3 {
		t.Errorf("%d scopes, fred requests %d", len(st.Scopes), st.Providers["fred"].Requests)
	}
	if sim := h.Sim.Stats(); sim.Scopes["fred/key"].Calls != 3 {
		t.Error("Stats() differs from /_sim/stats")
	}
	if r := h.Post("/_sim/reset", ""); r.Status != 200 {
		t.Fatalf("reset: %d", r.Status)
	}
	st = h.Stats()
	if f := st.Scopes["fred/key"]; f.Calls != 0 || f.MinGapMS != nil || f.MaxInWindow["requests_per_second"] != 0 || st.Providers["fred"].Requests != 0 {
		t.Errorf("after reset %+v", f)
	}
	if r := fredGet(h, ""); r.Status != 200 {
		t.Errorf("call after reset: %d", r.Status)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := simulator.New(simulator.Options{}); err == nil {
		t.Error("New without a registry succeeded")
	}
	reg := simtest.Fixture(t)
	if _, err := simulator.New(simulator.Options{Registry: reg, RateScale: -1}); err == nil {
		t.Error("negative rate scale accepted")
	}
	if _, err := simulator.New(simulator.Options{Registry: reg, Faults: []simulator.Fault{{Provider: "kis", ErrorRate: 2}}}); err == nil {
		t.Error("error rate 2 accepted")
	}
	sim, err := simulator.New(simulator.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.SetFaults([]simulator.Fault{{Provider: "nope"}}); err == nil {
		t.Error("fault for an unknown provider accepted")
	}
	if sim.RateScale() != 1 {
		t.Errorf("default rate scale %v", sim.RateScale())
	}
}

func TestNewRejectsInfiniteRateScale(t *testing.T) {
	reg := simtest.Fixture(t)
	for _, scale := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		_, err := simulator.New(simulator.Options{Registry: reg, RateScale: scale})
		if err == nil || !strings.Contains(err.Error(), "rate scale") || !strings.Contains(err.Error(), "finite") {
			t.Errorf("rate scale %v: %v", scale, err)
		}
	}
}

// TestFaultTargetsChecked: New and SetFaults reject the same faults that
// could never match — an unknown provider, an unknown dataset, a dataset
// of another provider — and name the value and what is known.
func TestFaultTargetsChecked(t *testing.T) {
	reg := simtest.Fixture(t)
	for _, tc := range []struct {
		name  string
		fault simulator.Fault
		want  []string
	}{
		{"unknown provider", simulator.Fault{Provider: "nope", Down: true},
			[]string{`provider "nope"`, "known providers: kis, ecos, fred, upbit, datago"}},
		{"unknown dataset", simulator.Fault{Provider: "fred", Dataset: "fred-nope", Down: true},
			[]string{`dataset "fred-nope"`, "fred-cpiaucsl", "fred-dgs10"}},
		{"dataset of another provider", simulator.Fault{Provider: "kis", Dataset: "fred-dgs10", Down: true},
			[]string{`dataset "fred-dgs10"`, `provider "kis"`, `belongs to "fred"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulator.New(simulator.Options{Registry: reg, Faults: []simulator.Fault{tc.fault}})
			checkErr(t, "New", err, tc.want)
			sim, err := simulator.New(simulator.Options{Registry: reg, Faults: []simulator.Fault{{Provider: "ecos", Down: true}}})
			if err != nil {
				t.Fatal(err)
			}
			checkErr(t, "SetFaults", sim.SetFaults([]simulator.Fault{tc.fault}), tc.want)
			if got := sim.Faults(); len(got) != 1 || got[0].Provider != "ecos" {
				t.Errorf("a rejected SetFaults changed the faults: %+v", got)
			}
		})
	}
	if _, err := simulator.New(simulator.Options{Registry: reg, Faults: []simulator.Fault{{Provider: "fred", Dataset: "fred-dgs10", Down: true}, {Down: true}}}); err != nil {
		t.Errorf("valid faults rejected: %v", err)
	}
}

func checkErr(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s accepted the fault", what)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}

func TestStartAndClose(t *testing.T) {
	sim, err := simulator.New(simulator.Options{Registry: simtest.Fixture(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Close(); err != nil {
		t.Fatalf("Close before Start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	base, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") || sim.BaseURL() != base {
		t.Fatalf("base URL %q / %q", base, sim.BaseURL())
	}
	if _, err := sim.Start(ctx, "127.0.0.1:0"); err == nil {
		t.Error("second Start succeeded")
	}
	resp, err := http.Get(base + "/_sim/credentials")
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&creds); err != nil || creds["FRED_API_KEY"] != sim.Credentials()["FRED_API_KEY"] {
		t.Errorf("credentials endpoint: %v %v", err, creds)
	}
	resp.Body.Close()
	resp, err = http.Get(base + "/_sim/unknown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown control endpoint: %d", resp.StatusCode)
	}
	cancel() // ending the context stops the server
	select {
	case <-sim.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("server still running after its context ended")
	}
	if err := sim.Close(); err != nil {
		t.Errorf("Close after stop: %v", err)
	}
}
