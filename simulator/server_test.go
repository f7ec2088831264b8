package simulator

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator/synth"
)

func TestStartAndClose(t *testing.T) {
	sim, err := New(Options{Registry: loadFixture(t)})
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

func TestKISMonthlyChart(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.kisToken()
	q := strings.Replace(kisIndexQuery("0001", "20240101", "20250311"), "FID_PERIOD_DIV_CODE=D", "FID_PERIOD_DIV_CODE=M", 1)
	r := h.get(q, h.kisHeaders(tok, "FHKUP03500100"))
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	if len(env.Output2) != 15 {
		t.Fatalf("%d monthly rows, want 15 (Jan 2024 … Mar 2025)", len(env.Output2))
	}
	// Each row is dated on the month's last KRX day (up to today).
	if env.Output2[0]["stck_bsop_date"] != "20250311" || env.Output2[3]["stck_bsop_date"] != "20241230" || env.Output2[14]["stck_bsop_date"] != "20240131" {
		t.Errorf("dates %s %s %s", env.Output2[0]["stck_bsop_date"], env.Output2[3]["stck_bsop_date"], env.Output2[14]["stck_bsop_date"])
	}
	for _, row := range env.Output2 {
		d, ok := synth.ParseYYYYMMDD(row["stck_bsop_date"])
		if !ok || !synth.KRX.Open(d) {
			t.Errorf("row date %s is not a KRX day", row["stck_bsop_date"])
		}
	}
}
