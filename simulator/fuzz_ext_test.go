package simulator_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// FuzzRequests sends arbitrary paths and queries through the handler:
// whatever arrives, the simulator answers and never panics.
func FuzzRequests(f *testing.F) {
	reg := simtest.Fixture(f)
	creds := simulator.TestCredentials(reg)
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 1e9, Now: func() time.Time { return simtest.Now }})
	if err != nil {
		f.Fatal(err)
	}
	key := url.QueryEscape(creds["DATAGO_SERVICE_KEY"])
	for _, s := range []string{
		"/api/StatisticSearch/" + creds["ECOS_API_KEY"] + "/json/kr/1/10/722Y001/D/20250101/20250131/0101000",
		"/api/StatisticSearch/" + creds["ECOS_API_KEY"] + "/xml/en/1/10/901Y009/SM/202401S1/202412S2/?/?/?/?",
		"/api/StatisticSearch/" + creds["ECOS_API_KEY"] + "/json/kr/5/1/200Y102/Q/2024Q5/2024Q1",
		"/fred/series/observations?series_id=DGS10&api_key=" + creds["FRED_API_KEY"] + "&limit=5&offset=99999999&sort_order=desc",
		"/v1/candles/minutes/240?market=KRW-BTC&count=200&to=2025-03-01T00:00:00%2B09:00",
		"/v1/candles/months?market=BTC-ETH&count=0",
		"/1160100/GetMarketIndexInfoService_V2/getStockMarketIndex_V2?serviceKey=" + key + "&basDt=20250310&pageNo=99&numOfRows=7",
		"/1160100/service/GetStockSecuritiesInfoService/getStockPriceInfo?serviceKey=" + key + "&beginBasDt=19000101&endBasDt=20991231",
		"/B551011/KorService2/areaBasedList2?serviceKey=" + key + "&_type=json&pageNo=1000000",
		"/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice?FID_INPUT_DATE_1=00010101&FID_INPUT_DATE_2=99991231",
		"/_sim/stats", "/_sim/nope",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req, err := http.NewRequest(http.MethodGet, "http://sim.test/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = u.Path, u.RawPath, u.RawQuery
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("%s: status %d", target, rec.Code)
		}
	})
}
