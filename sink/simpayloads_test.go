package sink

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	_ "github.com/sluicehq/sluice/simulator/all"
)

// simNow is the simulator's clock for the benchmark payloads: every 2024
// date asked for is published.
var simNow = time.Date(2025, 3, 11, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))

// simPayload is one provider answer as the simulator serves it.
type simPayload struct {
	name string // provider_format_rows…, and the dataset id
	body []byte
}

// simulatorPayloads asks the simulator for one realistic answer per
// provider of the default registry, each the size of one real call: a KIS
// daily index chart page (50 rows), a year of an ECOS daily statistic in
// JSON and in XML, a year of a FRED daily series, 200 UPBIT daily candles
// (a full page) and one day of a data.go.kr index service in JSON and in
// XML. The requests are built from the datasets' own declarations, with
// the simulator's test credentials; each answer must be a success.
func simulatorPayloads(tb testing.TB) []simPayload {
	tb.Helper()
	reg, err := registry.Default(registry.Options{Now: func() time.Time { return simNow }})
	if err != nil {
		tb.Fatalf("loading the default registry: %v", err)
	}
	creds := simulator.TestCredentials(reg)
	cred := func(provider, role string) string {
		p := reg.Provider(provider)
		if p == nil {
			tb.Fatalf("the default registry has no provider %s", provider)
		}
		return creds[p.Auth.Credentials[role]]
	}
	pick := func(provider string, want func(*registry.Dataset) bool) *registry.Dataset {
		all := reg.DatasetsOf(provider)
		for _, ds := range all {
			if want(ds) {
				return ds
			}
		}
		if len(all) == 0 {
			tb.Fatalf("the default registry has no %s dataset", provider)
		}
		return all[0]
	}
	day := func(m time.Month, d int) time.Time { return time.Date(2024, m, d, 0, 0, 0, 0, time.UTC) }
	query := func(params []registry.Param) url.Values {
		q := url.Values{}
		for _, p := range params {
			q.Set(p.Name, p.Value)
		}
		return q
	}
	var out []simPayload
	add := func(name string, ds *registry.Dataset, marker string, body []byte) {
		if !bytes.Contains(body, []byte(marker)) {
			tb.Fatalf("%s (%s): the simulator's answer lacks %q:\n%.400s", name, ds.ID, marker, body)
		}
		out = append(out, simPayload{name: name + "/" + ds.ID, body: body})
	}

	// KIS: a token, then the first page of a quarter of a domestic index.
	kis := pick("kis", func(ds *registry.Dataset) bool { return ds.Request.TrID == "FHKUP03500100" })
	sim := newBenchSimulator(tb, reg)
	tokenBody, _ := json.Marshal(map[string]string{"grant_type": "client_credentials",
		"appkey": cred("kis", "app_key"), "appsecret": cred("kis", "app_secret")})
	tok := serveSim(tb, sim, httptest.NewRequest(http.MethodPost, "/oauth2/tokenP", bytes.NewReader(tokenBody)))
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(tok, &answer); err != nil || answer.AccessToken == "" {
		tb.Fatalf("kis token: %v %s", err, tok)
	}
	r := httptest.NewRequest(http.MethodGet, kis.Request.Path+"?"+query(kis.Request.ExpandParams(day(1, 2), day(3, 29))).Encode(), nil)
	r.Header.Set("authorization", "Bearer "+answer.AccessToken)
	r.Header.Set("appkey", cred("kis", "app_key"))
	r.Header.Set("appsecret", cred("kis", "app_secret"))
	r.Header.Set("tr_id", kis.Request.TrID)
	r.Header.Set("custtype", "P")
	add("kis_json_50rows", kis, `"rt_cd":"0"`, serveSim(tb, sim, r))

	// ECOS: a year of a daily statistic (an exchange rate), JSON and XML.
	ecos := pick("ecos", func(ds *registry.Dataset) bool { return ds.Request.StatCode == "731Y001" && ds.Request.Cycle == "D" })
	for _, format := range []string{"json", "xml"} {
		segs := []string{"", "api", "StatisticSearch", cred("ecos", "api_key"), format, "kr", "1", "1000",
			ecos.Request.StatCode, ecos.Request.Cycle, "20240101", "20241231"}
		for _, it := range ecos.Request.Items {
			segs = append(segs, url.PathEscape(it))
		}
		marker := `"row"`
		if format == "xml" {
			marker = "<row>"
		}
		body := serveSim(tb, newBenchSimulator(tb, reg), httptest.NewRequest(http.MethodGet, strings.Join(segs, "/"), nil))
		add("ecos_"+format+"_1year", ecos, marker, body)
	}

	// FRED: a year of a daily series.
	fred := pick("fred", func(ds *registry.Dataset) bool { return ds.Request.SeriesID == "DGS10" })
	q := url.Values{"series_id": {fred.Request.SeriesID}, "api_key": {cred("fred", "api_key")}, "file_type": {"json"},
		"observation_start": {"2024-01-01"}, "observation_end": {"2024-12-31"}}
	add("fred_json_1year", fred, `"observations"`,
		serveSim(tb, newBenchSimulator(tb, reg), httptest.NewRequest(http.MethodGet, "/fred/series/observations?"+q.Encode(), nil)))

	// UPBIT: a full page of daily candles.
	upbit := pick("upbit", func(ds *registry.Dataset) bool { return ds.Request.Market == "KRW-BTC" })
	q = url.Values{"market": {upbit.Request.Market}, "to": {"2024-07-01T00:00:00Z"}, "count": {"200"}}
	add("upbit_json_200candles", upbit, `"candle_date_time_utc"`,
		serveSim(tb, newBenchSimulator(tb, reg), httptest.NewRequest(http.MethodGet, "/v1/candles/days?"+q.Encode(), nil)))

	// data.go.kr: one business day of an index service, as declared
	// (JSON) and without its JSON switch (XML, the portal's default).
	datago := pick("datago", func(ds *registry.Dataset) bool { return strings.Contains(ds.Request.Path, "getStockMarketIndex") })
	for _, format := range []string{"json", "xml"} {
		q := query(datago.Request.ExpandParams(day(3, 4), day(3, 4)))
		q.Set(reg.Provider("datago").Auth.Param, cred("datago", "service_key"))
		marker := `"item"`
		if format == "xml" {
			for _, name := range []string{"_type", "type", "resultType", "dataType", "returnType"} {
				q.Del(name)
			}
			marker = "<item>"
		}
		body := serveSim(tb, newBenchSimulator(tb, reg), httptest.NewRequest(http.MethodGet, datago.Request.Path+"?"+q.Encode(), nil))
		add("datago_"+format+"_1day", datago, marker, body)
	}
	return out
}

// newBenchSimulator returns a simulator of reg at simNow; each answer
// gets its own, so that no limit binds between them.
func newBenchSimulator(tb testing.TB, reg *registry.Registry) *simulator.Simulator {
	tb.Helper()
	sim, err := simulator.New(simulator.Options{Registry: reg, Seed: 7, Now: func() time.Time { return simNow }})
	if err != nil {
		tb.Fatalf("creating the simulator: %v", err)
	}
	return sim
}

// serveSim runs one request through the simulator's handler and returns
// the body of its 200 answer.
func serveSim(tb testing.TB, sim *simulator.Simulator, r *http.Request) []byte {
	tb.Helper()
	w := httptest.NewRecorder()
	sim.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		tb.Fatalf("%s %s: HTTP %d: %.400s", r.Method, r.URL.Path, w.Code, w.Body.Bytes())
	}
	return w.Body.Bytes()
}

// TestSimulatorPayloads checks the benchmark's payload source: one
// success per provider shape, each of a realistic size.
func TestSimulatorPayloads(t *testing.T) {
	ps := simulatorPayloads(t)
	if len(ps) != 7 {
		t.Fatalf("%d payloads, want 7", len(ps))
	}
	for _, p := range ps {
		if len(p.body) < 2<<10 {
			t.Errorf("%s: %d bytes, smaller than one real answer", p.name, len(p.body))
		}
		t.Logf("%s: %d bytes", p.name, len(p.body))
	}
}
