package ecos_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/registry"
	simulators "github.com/sluicehq/sluice/simulator/all"
)

// TestConformance drives the connector against the simulator. Classes:
// every class ECOS can produce, in JSON and XML; the registry's limit is
// lowered to 2 calls a second and the clock frozen, so ERROR-602 comes on
// the third call exactly. ECOS answers its daily quota with ERROR-602 too
// (RateLimited) and has no block, so QuotaExhausted and Blocked cannot
// occur. Fetches: daily and monthly statistics, JSON and XML, paged by
// start/end rows, read with the declared row facts (TIME in the cycle's
// format).
func TestConformance(t *testing.T) {
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	jan1, jan31 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	unknown := func(format string) func(*registry.Registry) *registry.Dataset {
		return func(*registry.Registry) *registry.Dataset {
			return &registry.Dataset{ID: "ecos-unknown", Provider: "ecos",
				Request: registry.Request{StatCode: "999Y999", Cycle: "D", Items: []string{"0"}, Format: format}}
		}
	}
	monthly := func(format string) func(*registry.Registry) *registry.Dataset {
		return func(reg *registry.Registry) *registry.Dataset {
			ds := *reg.Dataset(connectortest.ECOSMonthly)
			ds.Request.Format = format
			return &ds
		}
	}
	// list_total_count counts every row of the range, beyond this page.
	total := func(atLeast int) func(*testing.T, []byte, *connector.Response) {
		return func(t *testing.T, body []byte, _ *connector.Response) {
			var a struct {
				StatisticSearch struct {
					Total int `json:"list_total_count"`
				}
			}
			if err := json.Unmarshal(body, &a); err != nil || a.StatisticSearch.Total < atLeast {
				t.Errorf("list_total_count %d, want at least %d: %v", a.StatisticSearch.Total, atLeast, err)
			}
		}
	}
	connectortest.Run(t, connectortest.Suite{
		Provider: "ecos", Simulator: simulators.Handler, Dataset: connectortest.ECOSDataset, Scope: "ecos/key",
		Limits: []string{"requests_per_second: 20\n", "requests_per_second: 2\n"},
		Classes: []connectortest.ClassCase{
			{Name: "auth failed: unregistered key", Creds: map[string]string{"ECOS_API_KEY": "NOTAKEY0000000000000"}, From: jan,
				Want: connectortest.Expect{Class: connector.AuthFailed, Code: "INFO-100", Status: 200}},
			{Name: "no data: unknown statistic", Dataset: unknown(""), From: jan,
				Want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
			{Name: "no data: unknown statistic, xml", Dataset: unknown("xml"), From: jan,
				Want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
			{Name: "no data: a weekend", From: time.Date(2024, 1, 6, 0, 0, 0, 0, time.UTC),
				Want: connectortest.Expect{Class: connector.NoData, Code: "INFO-200"}},
			{Name: "bad request: more rows than one call may ask", From: jan, Limit: 100001,
				Want: connectortest.Expect{Class: connector.BadRequest, Code: "ERROR-400"}},
			{Name: "rate limited: third call in the same second", From: jan, Before: connectortest.Succeed(2),
				Want:  connectortest.Expect{Class: connector.RateLimited, Code: "ERROR-602", Status: 200},
				Stats: connectortest.Stats{"accepted": 2, "rejected": 1}},
		},
		Fetches: []connectortest.FetchCase{
			{Name: "daily, five rows of a month", From: jan1, To: jan31, Limit: 5, More: connectortest.Yes, Check: total(15),
				MinRows: 5, MaxRows: 5, Oldest: "20240102", Newest: "20240108", Values: []string{"DATA_VALUE"},
				Stats: connectortest.Stats{"accepted": 1, "violations": 0}},
			{Name: "daily, the month in pages of five", From: jan1, To: jan31, Limit: 5, Pages: true, More: connectortest.No,
				MinRows: 22, MaxRows: 22, Oldest: "20240102", Newest: "20240131"},
			{Name: "monthly, json", Dataset: monthly("json"), From: jan1, To: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC),
				MinRows: 12, MaxRows: 12, Oldest: "202401", Newest: "202412", Values: []string{"DATA_VALUE"}},
			{Name: "monthly, xml", Dataset: monthly("xml"), From: jan1, To: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC),
				MinRows: 12, MaxRows: 12, Oldest: "202401", Newest: "202412", Values: []string{"DATA_VALUE"}},
		},
		Probes:     []string{connectortest.ECOSDataset, connectortest.ECOSMonthly},
		ProbeStats: connectortest.Stats{"accepted": 2, "violations": 0},
		// Tuesday 11 March 2025, 14:30 KST: the daily series holds
		// Monday's rate; February's CPI came out at the start of March.
		ProbeNewest: map[string]string{connectortest.ECOSDataset: "20250310", connectortest.ECOSMonthly: "202502"},
		// 20 calls per 100 s.
		Throttle: &connectortest.ThrottleCase{RateScale: 0.01, Calls: 25, Accepted: 20, RetryAfter: true,
			Want: connectortest.Expect{Class: connector.RateLimited, Code: "ERROR-602"}},
	})
}
