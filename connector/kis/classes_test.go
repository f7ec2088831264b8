package kis_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// TestSimulatorEveryErrorClass drives the connector against the real
// simulator into every class KIS can produce, on the token call and on
// the data call. The registry's limit is lowered to 1 call a second and
// both clocks are frozen, so EGW00201 comes on the second data call and
// EGW00133 on a second token request (from another machine, that is
// another token store) in the same minute. Faults on the data call name
// the dataset so that the token call still succeeds; "provider down"
// fails the token call itself. KIS answers its daily quota with EGW00201
// too (RateLimited) and has no block, so QuotaExhausted and Blocked cannot
// occur.
func TestSimulatorEveryErrorClass(t *testing.T) {
	kospi := func(reg *registry.Registry) *registry.Dataset { return reg.Dataset(connectortest.KISDataset) }
	type tc struct {
		name      string
		faults    []simulator.Fault
		creds     map[string]string // credential overrides
		ds        func(*registry.Registry) *registry.Dataset
		from      time.Time
		calls     int  // calls sent; every one before the last must succeed
		otherHost bool // the last call comes from a connector with its own token store
		want      connectortest.Expect
	}
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []tc{
		{name: "auth failed: unknown app key", creds: map[string]string{"KIS_APP_KEY": "PSwrongAppKey0123456789abcdefghijkl"}, ds: kospi, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "EGW00103", Status: 403}},
		{name: "auth failed: wrong app secret", creds: map[string]string{"KIS_APP_SECRET": "wrongSecret+/0123456789"}, ds: kospi, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.AuthFailed, Code: "EGW00105", Status: 403}},
		{name: "no data: a weekend", ds: kospi, from: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC), calls: 1,
			want: connectortest.Expect{Class: connector.NoData, Status: 200}},
		{name: "bad request: unknown tr_id", from: jan, calls: 1,
			ds: func(reg *registry.Registry) *registry.Dataset {
				ds := *reg.Dataset(connectortest.KISDataset)
				ds.Request.TrID = "FHKUP99999999"
				return &ds
			},
			want: connectortest.Expect{Class: connector.BadRequest, Code: "OPSQ0002", Status: 200}},
		{name: "rate limited: second data call in the same second", ds: kospi, from: jan, calls: 2,
			want: connectortest.Expect{Class: connector.RateLimited, Code: kis.CodeRateLimited, Status: 500}},
		{name: "rate limited: second token request in the same minute", ds: kospi, from: jan, calls: 2, otherHost: true,
			want: connectortest.Expect{Class: connector.RateLimited, Code: kis.CodeTokenThrottle, Status: 403}},
	}
	for _, fc := range connectortest.TransientFaults("kis", connectortest.KISDataset) {
		cases = append(cases, tc{name: "transient: " + fc.Name, faults: []simulator.Fault{parseFault(t, fc.Spec)}, ds: kospi, from: jan, calls: 1,
			want: connectortest.Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	cases = append(cases, tc{name: "transient: provider down at the token call", ds: kospi, from: jan, calls: 1,
		faults: []simulator.Fault{{Provider: "kis", Down: true}},
		want:   connectortest.Expect{Class: connector.Transient, Status: 503}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := connectortest.RegistryWith(t, "requests_per_second: 5\n", "requests_per_second: 1\n")
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
			newConn := func() *kis.Connector {
				st, err := tokenstore.NewFile(filepath.Join(t.TempDir(), "tokens"))
				if err != nil {
					t.Fatal(err)
				}
				conn, err := kis.New(reg.Provider("kis"), connector.Options{BaseURL: url, Logger: lg, TokenStore: st,
					Now: connectortest.FrozenClock, Credentials: connector.MapCredentials(creds)})
				if err != nil {
					t.Fatal(err)
				}
				return conn
			}
			conn := newConn()
			req := connector.Request{Provider: reg.Provider("kis"), Dataset: c.ds(reg), From: c.from, To: c.from.AddDate(0, 0, 1)}
			connectortest.CallN(t, c.calls, func(i int) error {
				if i == c.calls && c.otherHost {
					conn = newConn()
				}
				return connector.Drain(conn.Fetch(context.Background(), req))
			}, c.want)
			st := sim.Stats().Scopes["kis/key"]
			switch c.want.Code {
			case kis.CodeRateLimited:
				if st.Accepted != int64(c.calls-1) || st.Rejected != 1 {
					t.Errorf("scope stats: accepted %d, rejected %d", st.Accepted, st.Rejected)
				}
			case kis.CodeTokenThrottle:
				if st.TokensIssued != 1 || st.TokenRejected != 1 {
					t.Errorf("token stats: issued %d, rejected %d", st.TokensIssued, st.TokenRejected)
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
