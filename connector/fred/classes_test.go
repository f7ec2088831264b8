package fred_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/fred"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// TestSimulatorEveryErrorClass drives the connector against the real
// simulator into every class FRED can produce. The simulator's clock is
// frozen (connectortest.SimNow), so the declared 2 calls a second bind on
// the third call exactly. FRED has no daily quota and no block, so
// QuotaExhausted and Blocked cannot occur.
func TestSimulatorEveryErrorClass(t *testing.T) {
	dgs10 := func(reg *registry.Registry) *registry.Dataset { return reg.Dataset(connectortest.FREDDataset) }
	type tc struct {
		name   string
		faults []simulator.Fault
		key    string // FRED_API_KEY when not empty
		ds     func(*registry.Registry) *registry.Dataset
		from   time.Time
		calls  int // calls sent; every one before the last must succeed
		want   connectortest.Expect
	}
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []tc{
		{name: "auth failed: unregistered key", key: "0123456789abcdef0123456789abcdef", ds: dgs10, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.AuthFailed, Status: 400, Message: "api_key"}},
		{name: "no data: a weekend", ds: dgs10, from: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC), calls: 1,
			want: connectortest.Expect{Class: connector.NoData}},
		{name: "bad request: unknown series", from: jan, calls: 1,
			ds: func(*registry.Registry) *registry.Dataset {
				return &registry.Dataset{ID: "fred-nope", Provider: "fred", Request: registry.Request{SeriesID: "NOSUCHSERIES"}}
			},
			want: connectortest.Expect{Class: connector.BadRequest, Status: 400}},
		{name: "rate limited: third call in the same second", ds: dgs10, from: jan, calls: 3,
			want: connectortest.Expect{Class: connector.RateLimited, Code: "429", Status: 429}},
	}
	for _, fc := range connectortest.TransientFaults("fred", connectortest.FREDDataset) {
		cases = append(cases, tc{name: "transient: " + fc.Name, faults: []simulator.Fault{parseFault(t, fc.Spec)}, ds: dgs10, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := connectortest.Registry(t)
			sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: connectortest.FrozenClock, Faults: c.faults})
			if err != nil {
				t.Fatal(err)
			}
			url := connectortest.Serve(t, sim.Handler())
			creds := simulator.TestCredentials(reg)
			if c.key != "" {
				creds["FRED_API_KEY"] = c.key
			}
			log, lg := connectortest.NewLog()
			conn, err := fred.New(reg.Provider("fred"), connector.Options{BaseURL: url, Logger: lg,
				Now: connectortest.FrozenClock, Credentials: connector.MapCredentials(creds)})
			if err != nil {
				t.Fatal(err)
			}
			req := connector.Request{Provider: reg.Provider("fred"), Dataset: c.ds(reg), From: c.from, To: c.from.AddDate(0, 0, 1)}
			connectortest.CallN(t, c.calls, func(int) error {
				return connector.Drain(conn.Fetch(context.Background(), req))
			}, c.want)
			if c.want.Class == connector.RateLimited {
				if st := sim.Stats().Scopes["fred/key"]; st.Accepted != int64(c.calls-1) || st.Rejected != 1 {
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
