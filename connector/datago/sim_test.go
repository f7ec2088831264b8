package datago_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
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
	c, sim, reg, log := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, nil)
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

func TestSimulatorNoDataOnAWeekend(t *testing.T) {
	c, _, reg, _ := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, nil)
	_, err := c.Fetch(context.Background(), dates(reg, 6, 7))
	var e *connector.Error
	if !errors.As(err, &e) || e.Class != connector.NoData || e.Code != "03" {
		t.Errorf("weekend: %v", err)
	}
}

func TestSimulatorWrongKeyAndThrottle(t *testing.T) {
	c, _, reg, log := startSim(t, simulator.Options{Seed: 1, RateScale: 100}, map[string]string{"DATAGO_SERVICE_KEY": "WRONGkey+/=="})
	_, err := c.Fetch(context.Background(), dates(reg, 2, 5))
	var e *connector.Error
	if !errors.As(err, &e) || e.Class != connector.AuthFailed {
		t.Errorf("wrong key: %v", err)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), "WRONGkey+/==")

	c, _, reg, _ = startSim(t, simulator.Options{Seed: 1, RateScale: 0.01}, nil) // 200 s between calls
	if err := connector.Drain(c.Fetch(context.Background(), dates(reg, 2, 5))); err != nil {
		t.Fatal(err)
	}
	_, err = c.Fetch(context.Background(), dates(reg, 2, 5))
	if !errors.As(err, &e) || e.Class != connector.RateLimited || e.Code != "23" {
		t.Errorf("second call within the minimum interval: %v", err)
	}
}

func TestSimulatorDailyQuota(t *testing.T) {
	reg := connectortest.RegistryWith(t, "requests_per_day: 5000", "requests_per_day: 3")
	now := time.Date(2024, 3, 4, 14, 0, 0, 0, time.UTC) // 23:00 KST
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(3 * time.Second) // past the 2 s minimum interval on every call
		return now
	}
	c, sim, reg, _ := startSim(t, simulator.Options{Registry: reg, Seed: 1, Now: clock}, nil)
	for i := range 3 {
		if err := connector.Drain(c.Fetch(context.Background(), dates(reg, 2, 5))); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := c.Fetch(context.Background(), dates(reg, 2, 5))
	var e *connector.Error
	if !errors.As(err, &e) || e.Class != connector.QuotaExhausted || e.Code != "22" {
		t.Fatalf("fourth call of the day: %v", err)
	}
	kst := time.FixedZone("KST", 9*3600)
	if want := time.Date(2024, 3, 5, 0, 0, 0, 0, kst); !e.ResetAt.Equal(want) {
		t.Errorf("ResetAt %v, want %v", e.ResetAt, want)
	}
	if st := sim.Stats().Scopes["datago/service/15094807"]; st == nil || st.Accepted != 3 {
		t.Errorf("scope stats %+v", st)
	}
}
