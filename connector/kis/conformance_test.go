package kis_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/registry"
	simulators "github.com/sluicehq/sluice/simulator/all"
)

// TestConformance drives the connector against the simulator. Classes:
// every class KIS can produce, on the token call and on the data call. The
// limit is lowered to 1 call a second and both clocks are frozen, so
// EGW00201 comes on the second data call and EGW00133 on a second token
// request (from another machine, that is another token store) in the same
// minute. Faults on the data call name the dataset so that the token call
// still succeeds; "provider down" fails the token call itself. KIS
// answers its daily quota with EGW00201 too (RateLimited) and has no
// block, so QuotaExhausted and Blocked cannot occur. Fetches: four months
// of a daily index chart, paged with tr_cont, read with the declared row
// facts (at most 50 rows a page, newest first).
func TestConformance(t *testing.T) {
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	okEnvelope := func(t *testing.T, body []byte, _ *connector.Response) {
		var a struct {
			RtCd string `json:"rt_cd"`
		}
		if err := json.Unmarshal(body, &a); err != nil || a.RtCd != "0" {
			t.Errorf("rt_cd %q: %v", a.RtCd, err)
		}
	}
	tokens := &clock{t: connectortest.SimNow}
	connectortest.Run(t, connectortest.Suite{
		Provider: "kis", Simulator: simulators.Handler, Dataset: connectortest.KISDataset, Scope: "kis/key",
		Limits: []string{"requests_per_second: 5\n", "requests_per_second: 1\n"},
		Classes: []connectortest.ClassCase{
			{Name: "auth failed: unknown app key", Creds: map[string]string{"KIS_APP_KEY": "PSwrongAppKey0123456789abcdefghijkl"}, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Code: "EGW00103", Status: 403}},
			{Name: "auth failed: wrong app secret", Creds: map[string]string{"KIS_APP_SECRET": "wrongSecret+/0123456789"}, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Code: "EGW00105", Status: 403}},
			{Name: "no data: a weekend", From: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC),
				Want: connectortest.Expect{Class: connector.NoData, Status: 200}},
			{Name: "bad request: unknown tr_id", From: jan,
				Dataset: func(reg *registry.Registry) *registry.Dataset {
					ds := *reg.Dataset(connectortest.KISDataset)
					ds.Request.TrID = "FHKUP99999999"
					return &ds
				},
				Want: connectortest.Expect{Class: connector.BadRequest, Code: "OPSQ0002", Status: 200}},
			{Name: "rate limited: second data call in the same second", From: jan, Before: connectortest.Succeed(1),
				Want:  connectortest.Expect{Class: connector.RateLimited, Code: kis.CodeRateLimited, Status: 500},
				Stats: connectortest.Stats{"accepted": 1, "rejected": 1}},
			{Name: "rate limited: second token request in the same minute", From: jan, Before: connectortest.Succeed(1), OtherHost: true,
				Want:  connectortest.Expect{Class: connector.RateLimited, Code: kis.CodeTokenThrottle, Status: 403},
				Stats: connectortest.Stats{"tokens_issued": 1, "token_rejected": 1}},
			{Name: "transient: provider down at the token call", From: jan, Faults: []string{"provider=kis,down"},
				Want: connectortest.Expect{Class: connector.Transient, Status: 503}},
		},
		Fetches: []connectortest.FetchCase{
			{Name: "four months in pages", From: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC),
				Pages: true, More: connectortest.No, Check: okEnvelope, MinRows: 70, MaxRows: 90,
				Oldest: "20240102", Newest: "20240430", Values: []string{"bstp_nmix_prpr", "bstp_nmix_hgpr"},
				Stats: connectortest.Stats{"tokens_issued": 1, "violations": 0}},
		},
		Probes:     []string{connectortest.KISDataset},
		ProbeStats: connectortest.Stats{"accepted": 1, "tokens_issued": 1, "violations": 0},
		// Tuesday 11 March 2025, 14:30 KST: the day's row is there.
		ProbeNewest: map[string]string{connectortest.KISDataset: "20250311"},
		// 5 calls per 100 s.
		Throttle: &connectortest.ThrottleCase{RateScale: 0.01, Calls: 8, Accepted: 5, RetryAfter: true,
			Want: connectortest.Expect{Class: connector.RateLimited, Code: kis.CodeRateLimited}},
		Custom: []connectortest.CustomCase{
			{Name: "concurrent callers share one token", Run: oneToken},
			{Name: "expired and forgotten tokens are replaced once", Clock: tokens.Now, Run: func(t *testing.T, e *connectortest.Env) {
				replacedOnce(t, e, tokens)
			}},
		},
	})
}

// oneToken: ten calls at once ask tokenP once.
func oneToken(t *testing.T, e *connectortest.Env) {
	c := e.Connector()
	req := e.Request(nil, time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Fetch(context.Background(), req)
			if err != nil {
				// Ten calls at once exceed the data limit (pacing is the
				// global limiter's job); they must still be classified.
				if cl, _ := connector.ClassOf(err); cl != connector.RateLimited {
					t.Error(err)
				}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	e.AssertStats(connectortest.Stats{"token_requests": 1, "token_rejected": 0})
}

// replacedOnce: after the simulator expires, then forgets, every token,
// the next call replaces its token exactly once.
func replacedOnce(t *testing.T, e *connectortest.Env, clk *clock) {
	c := e.Connector()
	req := e.Request(nil, time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC))
	fetch := func() error { return connector.Drain(c.Fetch(context.Background(), req)) }
	if err := fetch(); err != nil {
		t.Fatal(err)
	}
	for i, force := range []string{"/_sim/kis/expire-tokens", "/_sim/kis/expire-tokens?invalidate=1"} {
		if code, body := e.Control(http.MethodPost, force, ""); code != http.StatusOK {
			t.Fatalf("%s: %d %s", force, code, body)
		}
		clk.Add(2 * time.Minute) // past the once-a-minute rule
		if err := fetch(); err != nil {
			t.Fatalf("after %s: %v", force, err)
		}
		e.AssertStats(connectortest.Stats{"token_requests": int64(i + 2), "token_rejected": 0, "violations": 0})
	}
}
