package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// benchRequest is one request of the benchmark mix.
type benchRequest struct {
	name   string
	path   string
	header map[string]string
}

// BenchmarkSimulatorThroughput measures how many requests a second the
// simulator serves over real loopback HTTP with keep-alive from parallel
// clients, no limit binding (rate scale 1e6 with a clock that moves 1 ms
// a call, daily quotas of 2e9). Each
// sub-benchmark asks one provider for a realistic page (KIS 46 rows,
// ECOS 47, FRED 64, UPBIT 50 candles, data.go.kr 100 items); "mixed"
// rotates through all five; "health" is the HTTP ceiling of this machine
// (client and server share its cores).
func BenchmarkSimulatorThroughput(b *testing.B) {
	reg, err := registry.LoadDir("testdata/bench", registry.Options{Now: func() time.Time { return simtest.Now }})
	if err != nil {
		b.Fatal(err)
	}
	// A clock that moves 1 ms a call, with every window scaled to a few
	// microseconds: no limit binds, whatever the machine's clock
	// resolution, and the data is that of simtest.Now.
	var ticks atomic.Int64
	now := func() time.Time { return simtest.Now.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 1e6, Seed: 1, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	base, err := sim.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	creds := sim.Credentials()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

	tokBody, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": creds["KIS_APP_KEY"], "appsecret": creds["KIS_APP_SECRET"]})
	resp, err := client.Post(base+"/oauth2/tokenP", "application/json", bytes.NewReader(tokBody))
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		b.Fatalf("token: %v", err)
	}
	resp.Body.Close()

	reqs := []benchRequest{
		{"kis", "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice?FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=0001&FID_INPUT_DATE_1=20250101&FID_INPUT_DATE_2=20250311&FID_PERIOD_DIV_CODE=D", map[string]string{
			"authorization": "Bearer " + tok.AccessToken, "appkey": creds["KIS_APP_KEY"], "appsecret": creds["KIS_APP_SECRET"],
			"tr_id": "FHKUP03500100", "custtype": "P"}},
		{"ecos", "/api/StatisticSearch/" + creds["ECOS_API_KEY"] + "/json/kr/1/100/722Y001/D/20250101/20250311/0101000", nil},
		{"fred", "/fred/series/observations?series_id=DGS10&file_type=json&observation_start=2025-01-01&observation_end=2025-03-31&api_key=" + creds["FRED_API_KEY"], nil},
		{"upbit", "/v1/candles/days?market=KRW-BTC&count=50&to=2025-03-01T00:00:00Z", nil},
		{"datago", "/1160100/GetMarketIndexInfoService_V2/getStockMarketIndex_V2?serviceKey=" + url.QueryEscape(creds["DATAGO_SERVICE_KEY"]) + "&resultType=json&basDt=20250310&numOfRows=100", nil},
	}
	run := func(b *testing.B, mix []benchRequest) {
		var failed, nbytes atomic.Int64
		b.SetParallelism(4)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				r := mix[i%len(mix)]
				i++
				req, _ := http.NewRequest(http.MethodGet, base+r.path, nil)
				for k, v := range r.header {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				nbytes.Add(n)
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		})
		elapsed := time.Since(start)
		b.StopTimer()
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d of %d requests failed", f, b.N)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(nbytes.Load())/float64(b.N), "bytes/req")
	}
	// The HTTP ceiling: a trivial control endpoint.
	b.Run("health", func(b *testing.B) { run(b, []benchRequest{{"health", "/_sim/health", nil}}) })
	b.Run("mixed", func(b *testing.B) { run(b, reqs) })
	for _, r := range reqs {
		b.Run(r.name, func(b *testing.B) { run(b, []benchRequest{r}) })
	}
	b.Logf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0))
}
