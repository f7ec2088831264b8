package wire_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
	"github.com/sluicehq/sluice/simulator/simtest"
	"github.com/sluicehq/sluice/wire"
)

// simulatorAnswers asks the simulator one answer of each shape the
// connectors read — KIS output2, ECOS rows in JSON and XML, FRED
// observations in JSON and XML (attributes), UPBIT's top-level array,
// data.go.kr items in JSON and XML and a single item as an object — and
// returns each with the connector's declared row facts.
func simulatorAnswers(t testing.TB) map[string]struct {
	body []byte
	rows wire.Rows
} {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e9 })
	facts := func(connector string, format wire.Format) wire.Rows {
		s, ok := wire.Lookup(connector)
		if !ok {
			t.Fatalf("no spec for %s", connector)
		}
		r := s.Rows
		if r.PeriodFormat == "" {
			r.PeriodFormat = format
		}
		return r
	}
	tokBody, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"]})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	simtest.MustJSON(t, h.Post("/oauth2/tokenP", string(tokBody)).Body, &tok)
	kis := h.Get("/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice?FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=0001&FID_INPUT_DATE_1=20250101&FID_INPUT_DATE_2=20250311&FID_PERIOD_DIV_CODE=D",
		map[string]string{"authorization": "Bearer " + tok.AccessToken, "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"], "tr_id": "FHKUP03500100"}).Body
	ecos := func(rest string) []byte {
		h.Clock.Advance(3 * time.Second)
		return h.Get("/api/StatisticSearch/"+h.Creds["ECOS_API_KEY"]+"/"+rest, nil).Body
	}
	fred := func(fileType string) []byte {
		h.Clock.Advance(3 * time.Second)
		return h.Get("/fred/series/observations?series_id=DGS10&observation_start=2025-01-01&file_type="+fileType+"&api_key="+h.Creds["FRED_API_KEY"], nil).Body
	}
	datago := func(query string) []byte {
		h.Clock.Advance(3 * time.Second)
		return h.Get("/1160100/GetMarketIndexInfoService_V2/getStockMarketIndex_V2?serviceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&basDt=20250310&"+query, nil).Body
	}
	type answer = struct {
		body []byte
		rows wire.Rows
	}
	return map[string]answer{
		"kis":           {kis, facts("kis", "")},
		"ecos json D":   {ecos("json/kr/1/100/722Y001/D/20250101/20250310/0101000"), facts("ecos", wire.YYYYMMDD)},
		"ecos xml M":    {ecos("xml/kr/1/100/901Y009/M/202001/202412/0"), facts("ecos", wire.YYYYMM)},
		"ecos json SM":  {ecos("json/kr/1/100/901Y009/SM/202401S1/202412S2/0"), facts("ecos", wire.YYYYMMSn)},
		"ecos xml Q":    {ecos("xml/kr/1/100/200Y102/Q/2020Q1/2024Q4/10111"), facts("ecos", wire.YYYYQn)},
		"ecos json A":   {ecos("json/kr/1/100/901Y009/A/2015/2024/0"), facts("ecos", wire.YYYY)},
		"ecos json S":   {ecos("json/kr/1/100/901Y009/S/2020S1/2024S2/0"), facts("ecos", wire.YYYYSn)},
		"fred json":     {fred("json"), facts("fred", "")},
		"fred xml":      {fred("xml"), facts("fred", "")},
		"upbit":         {h.Get("/v1/candles/days?market=KRW-BTC&count=30", nil).Body, facts("upbit", "")},
		"datago json":   {datago("resultType=json&numOfRows=50"), facts("datago", "")},
		"datago xml":    {datago("numOfRows=50"), facts("datago", "")},
		"datago single": {datago("resultType=json&numOfRows=1"), facts("datago", "")},
	}
}

// TestExtractSimulatorAnswers reads every shape of answer with the
// declared row facts: rows with a period in its format and a value.
func TestExtractSimulatorAnswers(t *testing.T) {
	for name, a := range simulatorAnswers(t) {
		rows, err := wire.Extract(a.body, a.rows)
		if err != nil || len(rows) == 0 {
			t.Errorf("%s: %d rows, %v\n%.300s", name, len(rows), err, a.body)
			continue
		}
		for i, r := range rows {
			if r.Start.IsZero() || len(r.Values) == 0 {
				t.Errorf("%s: row %d incomplete: %+v", name, i, r)
			}
		}
	}
}

// FuzzExtractSimulatorAnswers mutates the simulator's answers under the
// connectors' real row facts: Extract never panics, and every row it
// returns has its period.
func FuzzExtractSimulatorAnswers(f *testing.F) {
	answers := simulatorAnswers(f)
	var specs []wire.Rows
	for _, a := range answers {
		f.Add(a.body, uint8(len(specs)))
		specs = append(specs, a.rows)
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		rows, err := wire.Extract(body, specs[int(which)%len(specs)])
		if err != nil && rows != nil {
			t.Fatalf("rows with an error: %v", err)
		}
		for i, r := range rows {
			if r.Period == "" {
				t.Fatalf("row %d without a period", i)
			}
		}
	})
}
