package upbit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/registry"
	simulators "github.com/sluicehq/sluice/simulator/all"
)

// TestConformance drives the connector against the simulator. Classes:
// every class UPBIT can produce. Candles are public, so AuthFailed is
// shown on the signed exchange path (/v1/orders/chance) with a wrong
// secret key (the JWT does not verify) and with an unknown access key. The
// candle limit is lowered to 1 call a second and the clock frozen, so the
// second call gets 429 and, after five 429s, the seventh gets 418. UPBIT
// has no daily quota, so QuotaExhausted cannot occur. Fetches: a week of
// daily candles, newest first, read with the declared row facts.
func TestConformance(t *testing.T) {
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	chance := func(*registry.Registry) *registry.Dataset {
		return &registry.Dataset{ID: "upbit-chance", Provider: "upbit", Request: registry.Request{Path: "/v1/orders/chance", Market: "KRW-BTC"}}
	}
	const limited = connector.RateLimited
	connectortest.Run(t, connectortest.Suite{
		Provider: "upbit", Simulator: simulators.Handler, Dataset: connectortest.UPBITDataset, Scope: "upbit/ip",
		Limits: []string{"requests_per_second: 10\n", "requests_per_second: 1\n"},
		Days:   6,
		Classes: []connectortest.ClassCase{
			{Name: "auth failed: wrong secret key", Creds: map[string]string{"UPBIT_SECRET_KEY": "wrongSecret0123456789abcdefghijklmnopqr"}, Dataset: chance, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Code: "jwt_verification", Status: 401}},
			{Name: "auth failed: unknown access key", Creds: map[string]string{"UPBIT_ACCESS_KEY": "wrongAccess0123456789abcdefghijklmnopq"}, Dataset: chance, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Code: "invalid_access_key", Status: 401}},
			{Name: "no data: before the market was listed", From: time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC),
				Want: connectortest.Expect{Class: connector.NoData, Status: 200}},
			{Name: "bad request: unknown market", From: jan,
				Dataset: func(*registry.Registry) *registry.Dataset {
					return &registry.Dataset{ID: "upbit-nope", Provider: "upbit", Request: registry.Request{Market: "KRW-NOPE"}}
				},
				Want: connectortest.Expect{Class: connector.BadRequest, Status: 404}},
			{Name: "rate limited: second call in the same second", From: jan, Before: connectortest.Succeed(1),
				Want: connectortest.Expect{Class: connector.RateLimited, Code: "too_many_requests", Status: 429}},
			{Name: "blocked: after five 429s", From: jan, Before: []connector.Class{0, limited, limited, limited, limited, limited},
				Want:  connectortest.Expect{Class: connector.Blocked, Status: 418},
				Stats: connectortest.Stats{"accepted": 1, "blocked": 1}},
		},
		Fetches: []connectortest.FetchCase{
			{Name: "a week of daily candles", From: day(1), To: day(7), MinRows: 7, MaxRows: 7,
				Oldest: "2024-01-01T00:00:00", Newest: "2024-01-07T00:00:00", Values: []string{"trade_price", "opening_price"},
				Check: func(t *testing.T, body []byte, resp *connector.Response) {
					var candles []struct {
						KST string `json:"candle_date_time_kst"`
					}
					if err := json.Unmarshal(body, &candles); err != nil || len(candles) == 0 || candles[0].KST != "2024-01-07T09:00:00" {
						t.Errorf("candles %+v: %v", candles, err)
					}
					if rr, err := upbit.ParseRemainingReq(resp.Header.Get("Remaining-Req")); err != nil || rr.Group != "candles" {
						t.Errorf("Remaining-Req %q: %+v %v", resp.Header.Get("Remaining-Req"), rr, err)
					}
				},
				Stats: connectortest.Stats{"accepted": 1, "violations": 0}},
		},
		Probes:     []string{connectortest.UPBITDataset},
		ProbeStats: connectortest.Stats{"accepted": 1, "violations": 0},
		// Today's (UTC) candle.
		ProbeNewest: map[string]string{connectortest.UPBITDataset: "2025-03-11T00:00:00"},
		Custom: []connectortest.CustomCase{
			{Name: "escalation to 418", RateScale: 0.01, Run: escalation}, // 10 calls per 100 s
			{Name: "exchange JWT", Run: exchange},
		},
	})
}

// escalation: over the limit the answers go 429 five times, then 418 (a
// block) with Remaining-Req falling to the last accepted call.
func escalation(t *testing.T, e *connectortest.Env) {
	c := e.Connector()
	req := e.Request(nil, day(1), day(1))
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
		var ce *connector.Error
		if !errors.As(err, &ce) {
			t.Fatalf("unclassified: %v", err)
		}
		if ce.Class == connector.Blocked && !ce.Until.After(e.Now()) {
			t.Errorf("blocked until %v, not after now", ce.Until)
		}
		classes = append(classes, ce.Class.String())
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
	e.AssertStats(connectortest.Stats{"blocked": 2})
}

// exchange: a signed exchange call verifies; an unknown market is a bad
// request.
func exchange(t *testing.T, e *connectortest.Env) {
	c := e.Connector()
	ds := &registry.Dataset{ID: "upbit-chance", Provider: "upbit", Request: registry.Request{Path: "/v1/orders/chance", Market: "KRW-BTC"}}
	if err := connector.Drain(c.Fetch(context.Background(), e.Request(ds, day(1), day(1)))); err != nil {
		t.Fatalf("signed exchange call: %v", err)
	}
	e.AssertStats(connectortest.Stats{"provider.auth_failures": 0})
	unknown := &registry.Dataset{ID: "upbit-nope", Provider: "upbit", Request: registry.Request{Market: "KRW-NOPE"}}
	_, err := c.Fetch(context.Background(), e.Request(unknown, day(1), day(1)))
	if cl, _ := connector.ClassOf(err); cl != connector.BadRequest {
		t.Errorf("unknown market: %v", err)
	}
}
