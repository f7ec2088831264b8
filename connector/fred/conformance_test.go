package fred_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	_ "github.com/sluicehq/sluice/connector/fred"
	"github.com/sluicehq/sluice/registry"
	simulators "github.com/sluicehq/sluice/simulator/all"
)

// TestConformance drives the connector against the simulator. Classes:
// every class FRED can produce, the simulator's clock frozen
// (connectortest.SimNow), so the declared 2 calls a second bind on the
// third call exactly; FRED has no daily quota and no block, so
// QuotaExhausted and Blocked cannot occur. Fetches: observations as JSON
// and XML, and paged by limit/offset, read with the declared row facts.
func TestConformance(t *testing.T) {
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	jan1, jan31 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	asXML := func(reg *registry.Registry) *registry.Dataset {
		ds := *reg.Dataset(connectortest.FREDDataset)
		ds.Request.Format = "xml"
		return &ds
	}
	// Unpaged, the count FRED reports is the number of observations it
	// sends.
	counted := func(t *testing.T, body []byte, _ *connector.Response) {
		var a struct {
			Count        int               `json:"count"`
			Observations []json.RawMessage `json:"observations"`
		}
		if err := json.Unmarshal(body, &a); err != nil || a.Count != len(a.Observations) {
			t.Errorf("count %d, %d observations: %v", a.Count, len(a.Observations), err)
		}
	}
	connectortest.Run(t, connectortest.Suite{
		Provider: "fred", Simulator: simulators.Handler, Dataset: connectortest.FREDDataset, Scope: "fred/key",
		Classes: []connectortest.ClassCase{
			// "api_key is not registered" also comes back now and then for a
			// valid key under load: the key is broken only once
			// connector.DefaultConfirm such answers came in a row.
			{Name: "transient: unregistered key, unconfirmed", Creds: map[string]string{"FRED_API_KEY": "0123456789abcdef0123456789abcdef"}, From: jan,
				Want: connectortest.Expect{Class: connector.Transient, Status: 400, Message: "unconfirmed auth_failed (1 of 3)"}},
			{Name: "auth failed: unregistered key, confirmed", Creds: map[string]string{"FRED_API_KEY": "0123456789abcdef0123456789abcdef"}, From: jan,
				Before: []connector.Class{connector.Transient, connector.Transient},
				Want:   connectortest.Expect{Class: connector.AuthFailed, Status: 400, Message: "api_key"}},
			{Name: "no data: a weekend", From: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC),
				Want: connectortest.Expect{Class: connector.NoData}},
			{Name: "bad request: unknown series", From: jan,
				Dataset: func(*registry.Registry) *registry.Dataset {
					return &registry.Dataset{ID: "fred-nope", Provider: "fred", Request: registry.Request{SeriesID: "NOSUCHSERIES"}}
				},
				Want: connectortest.Expect{Class: connector.BadRequest, Status: 400}},
			{Name: "rate limited: third call in the same second", From: jan, Before: connectortest.Succeed(2),
				Want:  connectortest.Expect{Class: connector.RateLimited, Code: "429", Status: 429},
				Stats: connectortest.Stats{"accepted": 2, "rejected": 1}},
		},
		Fetches: []connectortest.FetchCase{
			{Name: "january, json", From: jan1, To: jan31, More: connectortest.No, Check: counted,
				MinRows: 23, MaxRows: 23, Oldest: "2024-01-01", Newest: "2024-01-31", Values: []string{"value"},
				Stats: connectortest.Stats{"accepted": 1, "violations": 0}},
			{Name: "january, xml", Dataset: asXML, From: jan1, To: jan31, More: connectortest.No,
				MinRows: 23, MaxRows: 23, Oldest: "2024-01-01", Newest: "2024-01-31", Values: []string{"value"}},
			{Name: "january, five a page", From: jan1, To: jan31, Limit: 5, Pages: true, More: connectortest.No,
				MinRows: 23, MaxRows: 23, Oldest: "2024-01-01", Newest: "2024-01-31",
				Stats: connectortest.Stats{"accepted": 5, "violations": 0}},
		},
		Probes:     []string{connectortest.FREDDataset},
		ProbeStats: connectortest.Stats{"accepted": 1, "violations": 0},
		// Monday 10 March 2025, 00:30 in Chicago: Friday's yield is the
		// newest.
		ProbeNewest: map[string]string{connectortest.FREDDataset: "2025-03-07"},
		// 2 calls per 100 s.
		Throttle: &connectortest.ThrottleCase{RateScale: 0.01, Calls: 4, Accepted: 2, RetryAfter: true,
			Want: connectortest.Expect{Class: connector.RateLimited, Status: 429}},
	})
}
