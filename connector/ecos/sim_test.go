package ecos_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/ecos"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

func startSim(t *testing.T, opts simulator.Options) (*ecos.Connector, *simulator.Simulator, *registry.Registry, *connectortest.Log) {
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
	c, err := ecos.New(reg.Provider("ecos"), connector.Options{BaseURL: srv.URL, Logger: lg,
		Credentials: connector.MapCredentials(simulator.TestCredentials(reg))})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim, reg, log
}

func january(reg *registry.Registry, ds *registry.Dataset) connector.Request {
	return connector.Request{Provider: reg.Provider("ecos"), Dataset: ds,
		From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)}
}

func TestSimulatorSuccessPagingAndProbe(t *testing.T) {
	c, sim, reg, log := startSim(t, simulator.Options{Seed: 1, RateScale: 100})
	req := january(reg, reg.Dataset(connectortest.ECOSDataset))
	req.Limit = 5
	resp, err := c.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		StatisticSearch struct {
			Total int               `json:"list_total_count"`
			Row   []json.RawMessage `json:"row"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(a.StatisticSearch.Row) != 5 || a.StatisticSearch.Total < 15 || !resp.More {
		t.Errorf("rows %d of %d, more %v", len(a.StatisticSearch.Row), a.StatisticSearch.Total, resp.More)
	}
	if err := c.Probe(context.Background(), reg.Dataset(connectortest.ECOSDataset)); err != nil {
		t.Errorf("probe: %v", err)
	}
	if err := c.Probe(context.Background(), reg.Dataset(connectortest.ECOSMonthly)); err != nil {
		t.Errorf("monthly probe: %v", err)
	}
	if st := sim.Stats().Scopes["ecos/key"]; st == nil || st.Violations != 0 || st.Accepted != 3 {
		t.Errorf("scope stats %+v", st)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.SecretValuesOf(simulator.TestCredentials(reg))...)
}

func TestSimulatorThrottling(t *testing.T) {
	c, _, reg, _ := startSim(t, simulator.Options{Seed: 1, RateScale: 0.01}) // 20 calls per 100 s
	limited := 0
	for range 25 {
		resp, err := c.Fetch(context.Background(), january(reg, reg.Dataset(connectortest.ECOSDataset)))
		if err == nil {
			resp.Body.Close()
			continue
		}
		var e *connector.Error
		if !errors.As(err, &e) || e.Class != connector.RateLimited || e.Code != "ERROR-602" || e.RetryAfter <= 0 {
			t.Fatalf("err = %v", err)
		}
		limited++
	}
	if limited != 5 {
		t.Errorf("%d of 25 calls throttled, want 5", limited)
	}
}
