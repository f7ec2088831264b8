package ecos_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/ecos"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// TestSimulatorEveryErrorClass drives the connector against the real
// simulator into every class ECOS can produce, in JSON and XML. The
// registry's limit is lowered to 2 calls a second and the simulator's
// clock is frozen, so ERROR-602 comes on the third call exactly. ECOS
// answers its daily quota with ERROR-602 too (RateLimited) and has no
// block, so QuotaExhausted and Blocked cannot occur.
func TestSimulatorEveryErrorClass(t *testing.T) {
	baseRate := func(reg *registry.Registry) *registry.Dataset { return reg.Dataset(connectortest.ECOSDataset) }
	unknown := func(format string) func(*registry.Registry) *registry.Dataset {
		return func(*registry.Registry) *registry.Dataset {
			return &registry.Dataset{ID: "ecos-unknown", Provider: "ecos",
				Request: registry.Request{StatCode: "999Y999", Cycle: "D", Items: []string{"0"}, Format: format}}
		}
	}
	type tc struct {
		name   string
		faults []simulator.Fault
		key    string // ECOS_API_KEY when not empty
		ds     func(*registry.Registry) *registry.Dataset
		from   time.Time
		limit  int
		calls  int // calls sent; every one before the last must succeed
		want   connectortest.Expect
	}
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []tc{
		{name: "auth failed: unregistered key", key: "NOTAKEY0000000000000", ds: baseRate, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "INFO-100", Status: 200}},
		{name: "no data: unknown statistic", ds: unknown(""), from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
		{name: "no data: unknown statistic, xml", ds: unknown("xml"), from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
		{name: "no data: a weekend", ds: baseRate, from: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC), calls: 1,
			want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
		{name: "bad request: more rows than one call may ask", ds: baseRate, from: jan, limit: 100001, calls: 1,
			want: connectortest.Expect{Class: connector.BadRequest, Code: "ERROR-400"}},
		{name: "rate limited: third call in the same second", ds: baseRate, from: jan, calls: 3,
			want: connectortest.Expect{Class: connector.RateLimited, Code: "ERROR-602", Status: 200}},
	}
	for _, fc := range connectortest.TransientFaults("ecos", connectortest.ECOSDataset) {
		cases = append(cases, tc{name: "transient: " + fc.Name, faults: []simulator.Fault{parseFault(t, fc.Spec)}, ds: baseRate, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := connectortest.RegistryWith(t, "requests_per_second: 20\n", "requests_per_second: 2\n")
			sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: connectortest.FrozenClock, Faults: c.faults})
			if err != nil {
				t.Fatal(err)
			}
			url := connectortest.Serve(t, sim.Handler())
			creds := simulator.TestCredentials(reg)
			if c.key != "" {
				creds["ECOS_API_KEY"] = c.key
			}
			log, lg := connectortest.NewLog()
			conn, err := ecos.New(reg.Provider("ecos"), connector.Options{BaseURL: url, Logger: lg,
				Now: connectortest.FrozenClock, Credentials: connector.MapCredentials(creds)})
			if err != nil {
				t.Fatal(err)
			}
			req := connector.Request{Provider: reg.Provider("ecos"), Dataset: c.ds(reg), From: c.from, To: c.from.AddDate(0, 0, 1), Limit: c.limit}
			connectortest.CallN(t, c.calls, func(int) error {
				return connector.Drain(conn.Fetch(context.Background(), req))
			}, c.want)
			if c.want.Class == connector.RateLimited {
				if st := sim.Stats().Scopes["ecos/key"]; st.Accepted != int64(c.calls-1) || st.Rejected != 1 {
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
