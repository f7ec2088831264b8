package upbit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// TestSimulatorEveryErrorClass drives the connector against the real
// simulator into every class UPBIT can produce. Candles are public, so
// AuthFailed is shown on the connector's signed exchange path
// (/v1/orders/chance) with a wrong secret key (the JWT does not verify)
// and with an unknown access key. The registry's candle limit is lowered
// to 1 call a second and the simulator's clock is frozen, so the second
// call gets 429 and, after five 429s, the seventh gets 418. UPBIT has no
// daily quota, so QuotaExhausted cannot occur.
func TestSimulatorEveryErrorClass(t *testing.T) {
	btc := func(reg *registry.Registry) *registry.Dataset { return reg.Dataset(connectortest.UPBITDataset) }
	chance := func(*registry.Registry) *registry.Dataset {
		return &registry.Dataset{ID: "upbit-chance", Provider: "upbit", Request: registry.Request{Path: "/v1/orders/chance", Market: "KRW-BTC"}}
	}
	const limited = connector.RateLimited
	type tc struct {
		name   string
		faults []simulator.Fault
		creds  map[string]string // credential overrides
		ds     func(*registry.Registry) *registry.Dataset
		from   time.Time
		before []connector.Class // the outcomes of the calls before the last; 0 is success
		want   connectortest.Expect
	}
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []tc{
		{name: "auth failed: wrong secret key", creds: map[string]string{"UPBIT_SECRET_KEY": "wrongSecret0123456789abcdefghijklmnopqr"}, ds: chance, from: jan,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "jwt_verification", Status: 401}},
		{name: "auth failed: unknown access key", creds: map[string]string{"UPBIT_ACCESS_KEY": "wrongAccess0123456789abcdefghijklmnopq"}, ds: chance, from: jan,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "invalid_access_key", Status: 401}},
		{name: "no data: before the market was listed", ds: btc, from: time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC),
			want: connectortest.Expect{Class: connector.NoData, Status: 200}},
		{name: "bad request: unknown market", from: jan,
			ds: func(*registry.Registry) *registry.Dataset {
				return &registry.Dataset{ID: "upbit-nope", Provider: "upbit", Request: registry.Request{Market: "KRW-NOPE"}}
			},
			want: connectortest.Expect{Class: connector.BadRequest, Status: 404}},
		{name: "rate limited: second call in the same second", ds: btc, from: jan, before: []connector.Class{0},
			want: connectortest.Expect{Class: connector.RateLimited, Code: "too_many_requests", Status: 429}},
		{name: "blocked: after five 429s", ds: btc, from: jan, before: []connector.Class{0, limited, limited, limited, limited, limited},
			want: connectortest.Expect{Class: connector.Blocked, Status: 418}},
	}
	for _, fc := range connectortest.TransientFaults("upbit", connectortest.UPBITDataset) {
		cases = append(cases, tc{name: "transient: " + fc.Name, faults: []simulator.Fault{parseFault(t, fc.Spec)}, ds: btc, from: jan,
			want: connectortest.Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := connectortest.RegistryWith(t, "requests_per_second: 10\n", "requests_per_second: 1\n")
			sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 1, Now: connectortest.FrozenClock, Faults: c.faults})
			if err != nil {
				t.Fatal(err)
			}
			url := connectortest.Serve(t, sim.Handler())
			creds := simulator.TestCredentials(reg)
			for k, v := range c.creds {
				creds[k] = v
			}
			log, lg := connectortest.NewLog()
			conn, err := upbit.New(reg.Provider("upbit"), connector.Options{BaseURL: url, Logger: lg,
				Now: connectortest.FrozenClock, Credentials: connector.MapCredentials(creds)})
			if err != nil {
				t.Fatal(err)
			}
			req := connector.Request{Provider: reg.Provider("upbit"), Dataset: c.ds(reg), From: c.from, To: c.from.AddDate(0, 0, 6)}
			for i, want := range c.before {
				err := connector.Drain(conn.Fetch(context.Background(), req))
				if cl, _ := connector.ClassOf(err); (want == 0 && err != nil) || (want != 0 && cl != want) {
					t.Fatalf("call %d: %v, want class %v", i+1, err, want)
				}
			}
			err = connector.Drain(conn.Fetch(context.Background(), req))
			connectortest.AssertClass(t, fmt.Sprintf("call %d", len(c.before)+1), err, c.want)
			if e := (*connector.Error)(nil); errors.As(err, &e) && e.Class == connector.Blocked && !e.Until.After(connectortest.SimNow) {
				t.Errorf("blocked until %v, not after now", e.Until)
			}
			if c.want.Class == connector.Blocked {
				if st := sim.Stats().Scopes["upbit/ip"]; st.Accepted != 1 || st.Blocked != 1 {
					t.Errorf("scope stats: accepted %d, blocked %d", st.Accepted, st.Blocked)
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
