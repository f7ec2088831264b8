package metrics

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandlerServesSluiceMetrics(t *testing.T) {
	m := New()
	m.Call("kis", "kis/key", "ok")
	m.Call("kis", "kis/key", "rate_limited")
	m.Wait("kis/key", 150*time.Millisecond)
	m.Written("kis", 1000, 200)
	m.Activity("ingest", "kis", "ok", time.Second)
	m.Backoff("kis/key", 0.5)
	m.Event("ratelimit.backoff")
	m.RemainingRequests("upbit", "candles", 9)
	var nilMetrics *Metrics
	nilMetrics.Call("x", "y", "z") // a nil *Metrics records nothing and does not panic

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`sluice_provider_calls_total{outcome="ok",provider="kis",scope="kis/key"} 1`,
		`sluice_provider_calls_total{outcome="rate_limited",provider="kis",scope="kis/key"} 1`,
		`sluice_limiter_wait_seconds_count{scope="kis/key"} 1`,
		`sluice_lake_bytes_total{kind="raw",provider="kis"} 1000`,
		`sluice_lake_bytes_total{kind="compressed",provider="kis"} 200`,
		`sluice_activity_duration_seconds_count{activity="ingest",outcome="ok",provider="kis"} 1`,
		`sluice_ratelimit_backoff_factor{scope="kis/key"} 0.5`,
		`sluice_ops_events_total{kind="ratelimit.backoff"} 1`,
		`sluice_provider_remaining_requests{group="candles",provider="upbit"} 9`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRemainingGroupsAreBounded: however many group names a provider
// sends, Remaining gets at most MaxGroups labels per provider.
func TestRemainingGroupsAreBounded(t *testing.T) {
	m := New()
	for i := range 1000 {
		m.RemainingRequests("upbit", fmt.Sprintf("group-%d", i), i)
	}
	m.RemainingRequests("fred", "x", 1)
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_provider_remaining_requests" {
			continue
		}
		if n := len(mf.GetMetric()); n != MaxGroups+1 {
			t.Errorf("%d remaining-requests series, want %d (upbit) + 1 (fred)", n, MaxGroups)
		}
	}
}

// TestServerLimits: the /metrics server bounds every timeout and the
// header size, and serves /metrics.
func TestServerLimits(t *testing.T) {
	s := New().Server()
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("metrics server limits: read header %s, read %s, write %s, idle %s, header bytes %d",
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("GET /metrics: %d", rec.Code)
	}
}
