package fred_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/fred"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

func startSim(t *testing.T, opts simulator.Options, creds map[string]string) (*fred.Connector, *simulator.Simulator, *registry.Registry, *connectortest.Log) {
	t.Helper()
	reg := connectortest.Registry(t)
	opts.Registry = reg
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
	c, err := fred.New(reg.Provider("fred"), connector.Options{BaseURL: srv.URL, Logger: lg, Credentials: connector.MapCredentials(creds)})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim, reg, log
}

func january(reg *registry.Registry, ds *registry.Dataset) connector.Request {
	return connector.Request{Provider: reg.Provider("fred"), Dataset: ds,
		From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)}
}

func TestSimulatorObservations(t *testing.T) {
	c, sim, reg, log := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, nil)
	resp, err := c.Fetch(context.Background(), january(reg, reg.Dataset(connectortest.FREDDataset)))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Count        int `json:"count"`
		Observations []struct {
			Date  string `json:"date"`
			Value string `json:"value"`
		} `json:"observations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a.Count != len(a.Observations) || a.Count < 20 || a.Observations[0].Date < "2024-01-01" || resp.More {
		t.Errorf("count %d, %d observations, first %+v, more %v", a.Count, len(a.Observations), a.Observations[0], resp.More)
	}
	if err := c.Probe(context.Background(), reg.Dataset(connectortest.FREDDataset)); err != nil {
		t.Errorf("probe: %v", err)
	}
	if st := sim.Stats().Scopes["fred/key"]; st == nil || st.Violations != 0 || st.Accepted != 2 {
		t.Errorf("scope stats %+v", st)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.SecretValuesOf(simulator.TestCredentials(reg))...)
}

func TestSimulatorTooManyRequests(t *testing.T) {
	c, _, reg, _ := startSim(t, simulator.Options{Seed: 1, RateScale: 0.01}, nil) // 2 per 100 s
	var classes []connector.Class
	for range 4 {
		resp, err := c.Fetch(context.Background(), january(reg, reg.Dataset(connectortest.FREDDataset)))
		if err == nil {
			resp.Body.Close()
			classes = append(classes, 0)
			continue
		}
		var e *connector.Error
		if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter <= 0 {
			t.Fatalf("err = %v", err)
		}
		classes = append(classes, e.Class)
	}
	if want := []connector.Class{0, 0, connector.RateLimited, connector.RateLimited}; !equal(classes, want) {
		t.Errorf("classes %v, want %v", classes, want)
	}
}

func equal(a, b []connector.Class) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
