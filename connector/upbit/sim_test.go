package upbit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

func startSim(t *testing.T, opts simulator.Options, clock func() time.Time) (*upbit.Connector, *simulator.Simulator, *registry.Registry, *connectortest.Log) {
	t.Helper()
	reg := connectortest.Registry(t)
	opts.Registry = reg
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	log, lg := connectortest.NewLog()
	c, err := upbit.New(reg.Provider("upbit"), connector.Options{BaseURL: srv.URL, Logger: lg, Now: clock,
		Credentials: connector.MapCredentials(simulator.TestCredentials(reg))})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim, reg, log
}

func TestSimulatorCandleDays(t *testing.T) {
	c, sim, reg, log := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, nil)
	resp, err := c.Fetch(context.Background(), connector.Request{Provider: reg.Provider("upbit"), Dataset: reg.Dataset(connectortest.UPBITDataset),
		From: day(1), To: day(7)})
	if err != nil {
		t.Fatal(err)
	}
	var candles []struct {
		UTC string `json:"candle_date_time_utc"`
		KST string `json:"candle_date_time_kst"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&candles); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(candles) != 7 || candles[0].UTC != "2024-01-07T00:00:00" || candles[6].UTC != "2024-01-01T00:00:00" ||
		candles[0].KST != "2024-01-07T09:00:00" {
		t.Errorf("candles %+v", candles)
	}
	rr, err := upbit.ParseRemainingReq(resp.Header.Get("Remaining-Req"))
	if err != nil || rr.Group != "candles" {
		t.Errorf("Remaining-Req %q: %+v %v", resp.Header.Get("Remaining-Req"), rr, err)
	}
	if err := c.Probe(context.Background(), reg.Dataset(connectortest.UPBITDataset)); err != nil {
		t.Errorf("probe: %v", err)
	}
	if st := sim.Stats().Scopes["upbit/ip"]; st == nil || st.Violations != 0 || st.Accepted != 2 {
		t.Errorf("scope stats %+v", st)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.SecretValuesOf(simulator.TestCredentials(reg))...)
}

func TestSimulatorEscalationTo418(t *testing.T) {
	clk := time.Now()
	c, sim, reg, _ := startSim(t, simulator.Options{Seed: 1, RateScale: 0.01}, func() time.Time { return clk }) // 10 calls per 100 s
	req := connector.Request{Provider: reg.Provider("upbit"), Dataset: reg.Dataset(connectortest.UPBITDataset), From: day(1), To: day(1)}
	var classes []string
	var secs []int
	for range 17 {
		resp, err := c.Fetch(context.Background(), req)
		if err == nil {
			rr, perr := upbit.ParseRemainingReq(resp.Header.Get("Remaining-Req"))
			if perr != nil {
				t.Fatal(perr)
			}
			secs = append(secs, rr.Sec)
			resp.Body.Close()
			classes = append(classes, "ok")
			continue
		}
		var e *connector.Error
		if !errors.As(err, &e) {
			t.Fatalf("unclassified: %v", err)
		}
		if e.Class == connector.Blocked && !e.Until.After(clk) {
			t.Errorf("blocked until %v, not after now", e.Until)
		}
		classes = append(classes, e.Class.String())
	}
	got := strings.Join(classes, ",")
	want := strings.Repeat("ok,", 10) + strings.Repeat("rate_limited,", 5) + "blocked,blocked"
	if got != want {
		t.Errorf("classes\n%s\nwant\n%s", got, want)
	}
	for i := 1; i < len(secs); i++ {
		if secs[i] >= secs[i-1] {
			t.Errorf("Remaining-Req sec did not fall: %v", secs)
			break
		}
	}
	if st := sim.Stats().Scopes["upbit/ip"]; st == nil || st.Blocked != 2 {
		t.Errorf("scope stats %+v", st)
	}
}

func TestSimulatorExchangeJWT(t *testing.T) {
	c, sim, reg, _ := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, nil)
	ds := &registry.Dataset{ID: "upbit-chance", Provider: "upbit", Request: registry.Request{Path: "/v1/orders/chance", Market: "KRW-BTC"}}
	err := connector.Drain(c.Fetch(context.Background(), connector.Request{Provider: reg.Provider("upbit"), Dataset: ds, From: day(1), To: day(1)}))
	if err != nil {
		t.Fatalf("signed exchange call: %v", err)
	}
	if st := sim.Stats().Providers["upbit"]; st == nil || st.AuthFailures != 0 {
		t.Errorf("provider stats %+v", st)
	}
	unknown := &registry.Dataset{ID: "upbit-nope", Provider: "upbit", Request: registry.Request{Market: "KRW-NOPE"}}
	_, err = c.Fetch(context.Background(), connector.Request{Provider: reg.Provider("upbit"), Dataset: unknown, From: day(1), To: day(1)})
	if cl, _ := connector.ClassOf(err); cl != connector.BadRequest {
		t.Errorf("unknown market: %v", err)
	}
}
