package simulator

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// ecosRange returns a from/to pair in a cycle's date format.
func ecosRange(cycle string) (string, string) {
	switch cycle {
	case "A":
		return "2015", "2024"
	case "S":
		return "2022S1", "2024S2"
	case "Q":
		return "2022Q1", "2024Q4"
	case "M":
		return "202301", "202412"
	case "SM":
		return "202401S1", "202412S2"
	}
	return "20250101", "20250310"
}

// TestEveryDefaultDataset asks the simulator, loaded with the embedded
// default registry, for every dataset the way a connector would and
// checks that each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatalf("loading default registry: %v", err)
	}
	h := newHarness(t, func(o *Options) { o.Registry = reg; o.RateScale = 1e9 })
	tok := h.kisToken()
	from := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC) // a Monday, published by 11 March 14:30 KST
	to := from
	counts := map[string]int{}
	for _, ds := range reg.Datasets {
		h.clock.Advance(3 * time.Second) // data.go.kr's 2 s minimum interval is not scaled away entirely
		p := reg.Provider(ds.Provider)
		q := url.Values{}
		start := from.AddDate(0, 0, -30)
		if p.Connector == "datago" {
			start = from // basDt={from} must be a business day
		}
		for _, prm := range ds.Request.ExpandParams(start, to) {
			q.Set(prm.Name, prm.Value)
		}
		var r response
		ok := false
		switch p.Connector {
		case "kis":
			r = h.get(ds.Request.Path+"?"+q.Encode(), h.kisHeaders(tok, ds.Request.TrID))
			var env kisEnvelope
			mustJSON(t, r.body, &env)
			ok = env.RtCd == "0" && len(env.Output2) > 0
		case "ecos":
			a, b := ecosRange(ds.Request.Cycle)
			items := strings.Join(ds.Request.Items, "/")
			r = h.ecos("json/kr/1/1000/" + ds.Request.StatCode + "/" + ds.Request.Cycle + "/" + a + "/" + b + "/" + items)
			var ans ecosAnswer
			mustJSON(t, r.body, &ans)
			ok = len(ans.StatisticSearch.Row) > 0
		case "fred":
			r = h.get("/fred/series/observations?file_type=json&observation_start=2024-01-01&series_id="+ds.Request.SeriesID+"&api_key="+h.creds[p.Auth.Credentials["api_key"]], nil)
			var ans fredAnswer
			mustJSON(t, r.body, &ans)
			ok = len(ans.Observations) > 0
		case "upbit":
			path := ds.Request.Path
			if path == "" {
				path = "/v1/candles/days"
			}
			r = h.get(path+"?count=10&market="+ds.Request.Market, nil)
			var cs []json.RawMessage
			mustJSON(t, r.body, &cs)
			ok = len(cs) == 10
		case "datago":
			q.Set(p.Auth.Param, h.creds[p.Auth.Credentials["service_key"]])
			r = h.get(ds.Request.Path+"?"+q.Encode(), nil)
			var ans datagoAnswer
			if ds.Request.Format == "json" && strings.HasPrefix(string(r.body), "{") {
				mustJSON(t, r.body, &ans)
				ok = isSuccessCode(ans.Response.Header.ResultCode) && ans.Response.Body.TotalCount > 0
			} else {
				ok = strings.Contains(string(r.body), "<resultCode>") && !strings.Contains(string(r.body), "OpenAPI_ServiceResponse")
			}
		default:
			t.Errorf("%s: connector %q not served", ds.ID, p.Connector)
			continue
		}
		if !ok {
			t.Errorf("%s (%s): %d %s", ds.ID, p.Connector, r.status, truncateForLog(r.body))
		}
		counts[p.Connector]++
	}
	st := h.stats()
	for id, s := range st.Scopes {
		if s.Violations != 0 {
			t.Errorf("%s: %d violations", id, s.Violations)
		}
	}
	t.Logf("datasets served per connector: %v", counts)
}
