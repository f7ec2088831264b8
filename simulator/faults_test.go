package simulator_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

func TestFaultErrorRateIsSeededAndScoped(t *testing.T) {
	count := func() (int, int) {
		h := simtest.New(t, func(o *simulator.Options) {
			o.RateScale = 1e6
			o.Faults = []simulator.Fault{{Provider: "fred", ErrorRate: 0.3, ErrorStatus: 502}}
		})
		errs := 0
		for i := 0; i < 200; i++ {
			h.Clock.Advance(time.Millisecond)
			switch r := fredGet(h, ""); r.Status {
			case http.StatusBadGateway:
				errs++
				if !strings.Contains(string(r.Body), "502 Bad Gateway") {
					t.Fatalf("error body %s", r.Body)
				}
			case http.StatusOK:
			default:
				t.Fatalf("status %d", r.Status)
			}
		}
		// Other providers are unaffected.
		if r := ecosGet(h, "json/kr/1/1/722Y001/D/20250101/20250131/0101000"); r.Status != 200 || !strings.Contains(string(r.Body), "StatisticSearch") {
			t.Fatalf("ecos under a fred fault: %s", r.Body)
		}
		st := h.Stats()
		if int(st.Providers["fred"].Faults.Errors) != errs || int(st.Scopes["fred/key"].Calls) != 200-errs {
			t.Errorf("stats: faults %d, scope calls %d, errors seen %d", st.Providers["fred"].Faults.Errors, st.Scopes["fred/key"].Calls, errs)
		}
		return errs, 200
	}
	a, n := count()
	b, _ := count()
	if a != b {
		t.Errorf("same seed gave %d and %d injected errors", a, b)
	}
	if a < n/10 || a > n/2 {
		t.Errorf("%d of %d errors for rate 0.3", a, n)
	}
}

func TestFaultDownResetTruncate(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	set := func(faults ...simulator.Fault) {
		t.Helper()
		b, _ := json.Marshal(faults)
		if r := h.Post("/_sim/faults", string(b)); r.Status != 200 {
			t.Fatalf("setting faults: %d %s", r.Status, r.Body)
		}
	}
	fredPath := "/fred/series/observations?series_id=DGS10&file_type=json&api_key=" + h.Creds["FRED_API_KEY"]

	set(simulator.Fault{Provider: "fred", Down: true})
	resp, body, err := h.RawGet(fredPath)
	if err != nil || resp.StatusCode != 503 || !strings.Contains(string(body), "503 Service Unavailable") {
		t.Fatalf("down: %v %v %s", err, resp, body)
	}

	set(simulator.Fault{Provider: "fred", ResetRate: 1})
	if _, _, err := h.RawGet(fredPath); err == nil {
		t.Fatal("reset: the request succeeded")
	}

	set(simulator.Fault{Provider: "fred", TruncateAfter: 40})
	h.Clock.Advance(time.Second)
	resp, body, err = h.RawGet(fredPath)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncate: err %v", err)
	}
	if resp.StatusCode != 200 || len(body) != 40 || !strings.HasPrefix(string(body), `{"realtime_start"`) || resp.ContentLength <= 40 {
		t.Errorf("truncate: status %d, %d bytes of %d: %q", resp.StatusCode, len(body), resp.ContentLength, body)
	}

	r := h.Get("/_sim/faults", nil)
	var got []simulator.Fault
	simtest.MustJSON(t, r.Body, &got)
	if len(got) != 1 || got[0].TruncateAfter != 40 {
		t.Errorf("GET faults %s", r.Body)
	}
	if r := h.Post("/_sim/faults", `[{"provider":"fred","error_rate":7}]`); r.Status != 400 {
		t.Errorf("bad fault accepted: %d", r.Status)
	}
	if r := h.Post("/_sim/faults", `{"provider":"fred","bogus":1}`); r.Status != 400 {
		t.Errorf("unknown field accepted: %d", r.Status)
	}
	if r := h.Post("/_sim/faults", "provider=fred,truncate-after=40\nprovider=nope,down"); r.Status != 400 || !strings.Contains(string(r.Body), `provider \"nope\"`) {
		t.Errorf("a spec for an unknown provider accepted: %d %s", r.Status, r.Body)
	}
	if r := h.Post("/_sim/faults", "provider=fred,truncate-after=40\n"); r.Status != 200 || !strings.Contains(string(r.Body), `"truncate_after": 40`) {
		t.Errorf("a --fault spec: %d %s", r.Status, r.Body)
	}
	st := h.Stats().Providers["fred"].Faults
	if st.Down != 1 || st.Resets < 1 || st.Truncated != 1 { // the client may retry a reset idempotent request
		t.Errorf("fault stats %+v", st)
	}
	req, _ := http.NewRequest(http.MethodDelete, h.Srv.URL+"/_sim/faults", nil)
	h.Do(req)
	if r := h.Get(fredPath, nil); r.Status != 200 {
		t.Errorf("after clearing faults: %d", r.Status)
	}
}

func TestFaultLatencyAndSlowBody(t *testing.T) {
	rec := &simtest.SleepRecorder{}
	h := simtest.New(t, func(o *simulator.Options) {
		o.Sleep = rec.Sleep
		o.RateScale = 1e6
		o.Faults = []simulator.Fault{{Provider: "fred", Latency: simulator.Latency{Fixed: 150 * time.Millisecond}}}
	})
	if r := fredGet(h, ""); r.Status != 200 {
		t.Fatal(r.Status)
	}
	if rec.Total() != 150*time.Millisecond {
		t.Errorf("latency slept %v", rec.Sleeps())
	}
	rec.Clear()
	if err := h.Sim.SetFaults([]simulator.Fault{{Provider: "fred", Latency: simulator.Latency{Quantiles: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		h.Clock.Advance(time.Second)
		fredGet(h, "")
	}
	for _, d := range rec.Sleeps() {
		if d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Errorf("quantile latency %v out of [10ms, 20ms]", d)
		}
	}
	rec.Clear()
	if err := h.Sim.SetFaults([]simulator.Fault{{Provider: "fred", SlowBody: 1000}}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Second)
	r := fredGet(h, "&observation_start=2025-01-01")
	if r.Status != 200 || !json.Valid(r.Body) {
		t.Fatalf("slow body: %d, valid JSON %v", r.Status, json.Valid(r.Body))
	}
	want := time.Duration(float64(len(r.Body)) / 1000 * float64(time.Second))
	if got := rec.Total(); got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("slow body of %d bytes at 1000 B/s slept %v, want %v", len(r.Body), got, want)
	}
	if h.Stats().Providers["fred"].Faults.Slowed != 1 {
		t.Error("slowed not counted")
	}
}
