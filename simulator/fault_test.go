package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// sleepRecorder is a fake Options.Sleep.
type sleepRecorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (s *sleepRecorder) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	return nil
}

func (s *sleepRecorder) total() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t time.Duration
	for _, d := range s.sleeps {
		t += d
	}
	return t
}

// rawGet returns the response and the error of reading its body.
func (h *harness) rawGet(path string) (*http.Response, []byte, error) {
	resp, err := h.srv.Client().Get(h.srv.URL + path)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func TestParseFault(t *testing.T) {
	f, err := ParseFault("provider=kis, dataset=kis-index-0001-kospi,error-rate=0.25,error-status=502,latency=20ms,jitter=5ms,slow-body=2048,truncate-after=100,reset-rate=0.1,down,reject-at=0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := Fault{Provider: "kis", Dataset: "kis-index-0001-kospi", ErrorRate: 0.25, ErrorStatus: 502,
		Latency: Latency{Fixed: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}, SlowBody: 2048, TruncateAfter: 100,
		ResetRate: 0.1, Down: true, RejectAtFraction: 0.5}
	if !faultEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
	f, err = ParseFault("provider=fred,quantiles=1ms/5ms/50ms")
	if err != nil || len(f.Latency.Quantiles) != 3 || f.Latency.Quantiles[2] != 50*time.Millisecond {
		t.Errorf("quantiles: %+v %v", f, err)
	}
	for _, bad := range []string{"", "provider=kis,error-rate=2", "provider=kis,bogus=1", "provider=kis,latency=fast",
		"dataset=x", "provider=kis,error-status=404", "provider=kis,reject-at=1", "provider=kis,quantiles=5ms/1ms", "provider=kis,error-rate"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) accepted", bad)
		}
	}
	// JSON round trip.
	b, err := json.Marshal([]Fault{want})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFaults(strings.NewReader(string(b)))
	if err != nil || len(got) != 1 || !faultEqual(got[0], want) {
		t.Errorf("round trip: %s → %+v %v", b, got, err)
	}
	if !strings.Contains(string(b), `"latency":{"fixed":"20ms","jitter":"5ms"}`) {
		t.Errorf("latency JSON %s", b)
	}
}

func faultEqual(a, b Fault) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

func TestFaultErrorRateIsSeededAndScoped(t *testing.T) {
	count := func() (int, int) {
		h := newHarness(t, func(o *Options) {
			o.RateScale = 1e6
			o.Faults = []Fault{{Provider: "fred", ErrorRate: 0.3, ErrorStatus: 502}}
		})
		errs := 0
		for i := 0; i < 200; i++ {
			h.clock.Advance(time.Millisecond)
			switch r := h.fred(""); r.status {
			case http.StatusBadGateway:
				errs++
				if !strings.Contains(string(r.body), "502 Bad Gateway") {
					t.Fatalf("error body %s", r.body)
				}
			case http.StatusOK:
			default:
				t.Fatalf("status %d", r.status)
			}
		}
		// Other providers are unaffected.
		if r := h.ecos("json/kr/1/1/722Y001/D/20250101/20250131/0101000"); r.status != 200 || !strings.Contains(string(r.body), "StatisticSearch") {
			t.Fatalf("ecos under a fred fault: %s", r.body)
		}
		st := h.stats()
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
	h := newHarness(t, func(o *Options) { o.RateScale = 1e6 })
	set := func(faults ...Fault) {
		t.Helper()
		b, _ := json.Marshal(faults)
		if r := h.post("/_sim/faults", string(b)); r.status != 200 {
			t.Fatalf("setting faults: %d %s", r.status, r.body)
		}
	}
	fredPath := "/fred/series/observations?series_id=DGS10&file_type=json&api_key=" + h.creds["FRED_API_KEY"]

	set(Fault{Provider: "fred", Down: true})
	resp, body, err := h.rawGet(fredPath)
	if err != nil || resp.StatusCode != 503 || !strings.Contains(string(body), "503 Service Unavailable") {
		t.Fatalf("down: %v %v %s", err, resp, body)
	}

	set(Fault{Provider: "fred", ResetRate: 1})
	if _, _, err := h.rawGet(fredPath); err == nil {
		t.Fatal("reset: the request succeeded")
	}

	set(Fault{Provider: "fred", TruncateAfter: 40})
	h.clock.Advance(time.Second)
	resp, body, err = h.rawGet(fredPath)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncate: err %v", err)
	}
	if resp.StatusCode != 200 || len(body) != 40 || !strings.HasPrefix(string(body), `{"realtime_start"`) || resp.ContentLength <= 40 {
		t.Errorf("truncate: status %d, %d bytes of %d: %q", resp.StatusCode, len(body), resp.ContentLength, body)
	}

	r := h.get("/_sim/faults", nil)
	var got []Fault
	mustJSON(t, r.body, &got)
	if len(got) != 1 || got[0].TruncateAfter != 40 {
		t.Errorf("GET faults %s", r.body)
	}
	if r := h.post("/_sim/faults", `[{"provider":"fred","error_rate":7}]`); r.status != 400 {
		t.Errorf("bad fault accepted: %d", r.status)
	}
	if r := h.post("/_sim/faults", `{"provider":"fred","bogus":1}`); r.status != 400 {
		t.Errorf("unknown field accepted: %d", r.status)
	}
	st := h.stats().Providers["fred"].Faults
	if st.Down != 1 || st.Resets < 1 || st.Truncated != 1 { // the client may retry a reset idempotent request
		t.Errorf("fault stats %+v", st)
	}
	req, _ := http.NewRequest(http.MethodDelete, h.srv.URL+"/_sim/faults", nil)
	h.do(req)
	if r := h.get(fredPath, nil); r.status != 200 {
		t.Errorf("after clearing faults: %d", r.status)
	}
}

func TestFaultLatencyAndSlowBody(t *testing.T) {
	rec := &sleepRecorder{}
	h := newHarness(t, func(o *Options) {
		o.Sleep = rec.Sleep
		o.RateScale = 1e6
		o.Faults = []Fault{{Provider: "fred", Latency: Latency{Fixed: 150 * time.Millisecond}}}
	})
	if r := h.fred(""); r.status != 200 {
		t.Fatal(r.status)
	}
	if rec.total() != 150*time.Millisecond {
		t.Errorf("latency slept %v", rec.sleeps)
	}
	rec.sleeps = nil
	if err := h.sim.SetFaults([]Fault{{Provider: "fred", Latency: Latency{Quantiles: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		h.clock.Advance(time.Second)
		h.fred("")
	}
	for _, d := range rec.sleeps {
		if d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Errorf("quantile latency %v out of [10ms, 20ms]", d)
		}
	}
	rec.sleeps = nil
	if err := h.sim.SetFaults([]Fault{{Provider: "fred", SlowBody: 1000}}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	r := h.fred("&observation_start=2025-01-01")
	if r.status != 200 || !json.Valid(r.body) {
		t.Fatalf("slow body: %d, valid JSON %v", r.status, json.Valid(r.body))
	}
	want := time.Duration(float64(len(r.body)) / 1000 * float64(time.Second))
	if got := rec.total(); got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("slow body of %d bytes at 1000 B/s slept %v, want %v", len(r.body), got, want)
	}
	if h.stats().Providers["fred"].Faults.Slowed != 1 {
		t.Error("slowed not counted")
	}
}

func TestFaultRejectAtFraction(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Faults = []Fault{{Provider: "kis", RejectAtFraction: 0.5}} })
	tok := h.kisToken()
	hdr := h.kisHeaders(tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	// 5/s declared; the provider now rejects above ⌊5 × 0.5⌋ = 2.
	for i := 0; i < 2; i++ {
		if r := h.get(q, hdr); r.status != 200 {
			t.Fatalf("call %d: %d", i, r.status)
		}
	}
	r := h.get(q, hdr)
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	if r.status != 500 || env.MsgCd != "EGW00201" {
		t.Fatalf("third call: %d %s", r.status, r.body)
	}
	st := h.stats()
	if s := st.Scopes["kis/key"]; s.Rejected != 0 || s.RejectedByFault != 1 || s.Violations != 0 || st.Providers["kis"].Faults.RejectedAtFraction != 1 {
		t.Errorf("stats %+v", s)
	}
}
