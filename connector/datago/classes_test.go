package datago_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/datago"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// steppingClock starts at connectortest.SimNow and moves step ahead on
// every reading: past the 2 s minimum interval on every call.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := connectortest.SimNow
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

// TestSimulatorEveryErrorClass drives the connector against the real
// simulator into every class data.go.kr can produce: the gateway's XML
// errors (30, 12, 23, 22) although JSON was asked for, and the service's
// JSON resultCode 03. The daily quota is lowered to 3 calls; the
// simulator's clock is frozen (the 2 s minimum interval binds on the
// second call) except for the quota case, whose clock steps 3 s a
// reading. data.go.kr has no block, so Blocked cannot occur.
func TestSimulatorEveryErrorClass(t *testing.T) {
	index := func(reg *registry.Registry) *registry.Dataset { return reg.Dataset(connectortest.DataGoDataset) }
	type tc struct {
		name   string
		faults []simulator.Fault
		key    string // DATAGO_SERVICE_KEY when not empty
		clock  func() time.Time
		ds     func(*registry.Registry) *registry.Dataset
		from   time.Time
		calls  int // calls sent; every one before the last must succeed
		want   connectortest.Expect
	}
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []tc{
		{name: "auth failed: unregistered key", key: "WRONGkey+/==", ds: index, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "30", Message: "SERVICE_KEY_IS_NOT_REGISTERED_ERROR"}},
		{name: "no data: a weekend", ds: index, from: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC), calls: 1,
			want: connectortest.Expect{Class: connector.NoData, Code: "03"}},
		{name: "bad request: unknown operation", from: jan, calls: 1,
			ds: func(reg *registry.Registry) *registry.Dataset {
				ds := *reg.Dataset(connectortest.DataGoDataset)
				ds.ID = "datago-nope"
				ds.Request.Path = "/1160100/service/GetMarketIndexInfoService/getNoSuchOperation"
				return &ds
			},
			want: connectortest.Expect{Class: connector.BadRequest, Code: "12"}},
		{name: "rate limited: second call within the minimum interval", ds: index, from: jan, calls: 2,
			want: connectortest.Expect{Class: connector.RateLimited, Code: "23"}},
		{name: "quota exhausted: fourth call of the day", ds: index, from: jan, calls: 4, clock: steppingClock(3 * time.Second),
			want: connectortest.Expect{Class: connector.QuotaExhausted, Code: "22"}},
	}
	for _, fc := range connectortest.TransientFaults("datago", connectortest.DataGoDataset) {
		cases = append(cases, tc{name: "transient: " + fc.Name, faults: []simulator.Fault{parseFault(t, fc.Spec)}, ds: index, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := connectortest.RegistryWith(t, "requests_per_day: 5000", "requests_per_day: 3")
			clock := c.clock
			if clock == nil {
				clock = connectortest.FrozenClock
			}
			sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: clock, Faults: c.faults})
			if err != nil {
				t.Fatal(err)
			}
			url := connectortest.Serve(t, sim.Handler())
			creds := simulator.TestCredentials(reg)
			if c.key != "" {
				creds["DATAGO_SERVICE_KEY"] = c.key
			}
			log, lg := connectortest.NewLog()
			conn, err := datago.New(reg.Provider("datago"), connector.Options{BaseURL: url, Logger: lg,
				Now: clock, Credentials: connector.MapCredentials(creds)})
			if err != nil {
				t.Fatal(err)
			}
			req := connector.Request{Provider: reg.Provider("datago"), Dataset: c.ds(reg), From: c.from, To: c.from.AddDate(0, 0, 1)}
			err = connectortest.CallN(t, c.calls, func(int) error {
				return connector.Drain(conn.Fetch(context.Background(), req))
			}, c.want)
			if e := (*connector.Error)(nil); errors.As(err, &e) && e.Class == connector.QuotaExhausted {
				kst := time.FixedZone("KST", 9*3600)
				if want := time.Date(2025, 3, 12, 0, 0, 0, 0, kst); !e.ResetAt.Equal(want) {
					t.Errorf("ResetAt %v, want the next midnight in Seoul, %v", e.ResetAt, want)
				}
			}
			switch c.want.Class {
			case connector.RateLimited, connector.QuotaExhausted:
				if st := sim.Stats().Scopes["datago/service/15094807"]; st.Accepted != int64(c.calls-1) || st.Rejected != 1 {
					t.Errorf("scope stats: accepted %d, rejected %d", st.Accepted, st.Rejected)
				}
			}
			connectortest.AssertNoSecrets(t, "log", log.String(), connectortest.SecretValuesOf(creds)...)
		})
	}
}

func parseFault(t *testing.T, spec string) simulator.Fault {
	t.Helper()
	f, err := simulator.ParseFault(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
