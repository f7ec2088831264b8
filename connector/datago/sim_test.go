package datago_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

func startSim(t *testing.T, opts simulator.Options, creds map[string]string) (*datago.Connector, *simulator.Simulator, *registry.Registry, *connectortest.Log) {
	t.Helper()
	if opts.Registry == nil {
		opts.Registry = connectortest.Registry(t)
	}
	reg := opts.Registry
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	if creds == nil {
		creds = simulator.TestCredentials(reg)
	}
	log, lg := connectortest.NewLog()
	c, err := datago.New(reg.Provider("datago"), connector.Options{BaseURL: srv.URL, Logger: lg, Credentials: connector.MapCredentials(creds), Now: opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim, reg, log
}

func dates(reg *registry.Registry, from, to int) connector.Request {
	return connector.Request{Provider: reg.Provider("datago"), Dataset: reg.Dataset(connectortest.DataGoDataset),
		From: time.Date(2024, 1, from, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, to, 0, 0, 0, 0, time.UTC)}
}

func TestSimulatorSuccessWithAKeyHoldingPlusAndSlash(t *testing.T) {
	// A clock that steps past the 2 s minimum interval on every reading:
	// the fetch and the probe that follows it never depend on how fast
	// the machine is.
	c, sim, reg, log := startSim(t, simulator.Options{Seed: 1, Now: steppingClock(3 * time.Second)}, nil)
	resp, err := c.Fetch(context.Background(), dates(reg, 2, 5))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Response struct {
			Header struct{ ResultCode string }
			Body   struct{ TotalCount int }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a.Response.Header.ResultCode != "00" || a.Response.Body.TotalCount < 1 {
		t.Errorf("answer %+v", a)
	}
	if err := c.Probe(context.Background(), reg.Dataset(connectortest.DataGoDataset)); err != nil {
		t.Errorf("probe: %v", err)
	}
	if st := sim.Stats().Providers["datago"]; st == nil || st.AuthFailures != 0 {
		t.Errorf("provider stats %+v", st)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.SecretValuesOf(simulator.TestCredentials(reg))...)
}
