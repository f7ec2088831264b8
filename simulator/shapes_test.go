package simulator_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

// The answer shapes of the recorded corpus, served as faults: each test
// checks the exact status, headers and bytes.

const (
	tourPath     = "/B551011/KorService2/areaBasedList2"
	fscIndexPath = "/1160100/GetMarketIndexInfoService_V2/getStockMarketIndex_V2"
)

func tourGet(h *simtest.Harness) simtest.Response {
	h.T.Helper()
	return h.Get(tourPath+"?ServiceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&_type=json&numOfRows=5&pageNo=1&MobileOS=ETC&MobileApp=Sluice&arrange=C", nil)
}

func fscGet(h *simtest.Harness) simtest.Response {
	h.T.Helper()
	return h.Get(fscIndexPath+"?serviceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&resultType=json&basDt=20250310&numOfRows=10&pageNo=1", nil)
}

// setFaults replaces the faults with --fault specs over POST /_sim/faults.
func setFaults(h *simtest.Harness, specs ...string) {
	h.T.Helper()
	if r := h.Post("/_sim/faults", strings.Join(specs, "\n")); r.Status != http.StatusOK {
		h.T.Fatalf("setting faults %q: %d %s", specs, r.Status, r.Body)
	}
}

func wantAnswer(t *testing.T, what string, r simtest.Response, status int, contentType, body string) {
	t.Helper()
	if r.Status != status || r.Header.Get("Content-Type") != contentType || string(r.Body) != body {
		t.Errorf("%s: HTTP %d, Content-Type %q, body %q;\nwant HTTP %d, %q, %q", what, r.Status, r.Header.Get("Content-Type"), r.Body, status, contentType, body)
	}
}

func TestShapeDatagoQuotaSpentUntilMidnight(t *testing.T) {
	h := simtest.New(t, nil)
	setFaults(h, "provider=datago,dataset=visitkorea-tourism,shape=gateway-json,code=22,status=429")
	const quotaJSON = `{"OpenAPI_ServiceResponse":{"cmmMsgHeader":{"errMsg":"SERVICE ERROR","returnAuthMsg":"LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR","returnReasonCode":"22"}}}`
	wantAnswer(t, "quota shape", tourGet(h), 429, "application/json;charset=UTF-8", quotaJSON)
	const scope = "datago/service/15073861"
	st := h.Stats().Scopes[scope]
	if st.Calls != 1 || st.RejectedByFault != 1 || !st.QuotaSpent || st.CallsAgainstSpentQuota != 0 || st.Violations != 0 {
		t.Errorf("after the first 22: %+v", st)
	}
	// A call after "quota spent" is a call against a spent quota.
	h.Clock.Advance(time.Minute)
	wantAnswer(t, "quota shape again", tourGet(h), 429, "application/json;charset=UTF-8", quotaJSON)
	// The fault gone, the quota stays spent: the provider's own 22, XML in
	// HTTP 200.
	setFaults(h)
	h.Clock.Advance(time.Minute)
	wantAnswer(t, "spent quota after the fault", tourGet(h), 200, "text/xml;charset=UTF-8",
		"<OpenAPI_ServiceResponse>\n\t<cmmMsgHeader>\n\t\t<errMsg>SERVICE ERROR</errMsg>\n\t\t<returnAuthMsg>LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR</returnAuthMsg>\n\t\t<returnReasonCode>22</returnReasonCode>\n\t</cmmMsgHeader>\n</OpenAPI_ServiceResponse>")
	// Another service's quota is untouched.
	if r := fscGet(h); r.Status != 200 || !strings.Contains(string(r.Body), `"response"`) {
		t.Errorf("another service: %d %s", r.Status, simtest.Truncate(r.Body))
	}
	st = h.Stats().Scopes[scope]
	if st.Calls != 3 || st.RejectedByFault != 3 || st.CallsAgainstSpentQuota != 2 || st.Violations != 0 || st.Rejected != 0 {
		t.Errorf("after three calls on a spent quota: %+v", st)
	}
	if other := h.Stats().Scopes["datago/service/15094807"]; other.CallsAgainstSpentQuota != 0 || other.QuotaSpent {
		t.Errorf("the other service: %+v", other)
	}
	// Local midnight (KST) resets it.
	next := time.Date(2025, 3, 12, 0, 0, 1, 0, simtest.Now.Location())
	h.Clock.Set(next)
	if r := tourGet(h); r.Status != 200 || !strings.Contains(string(r.Body), `"response"`) {
		t.Errorf("after midnight: %d %s", r.Status, simtest.Truncate(r.Body))
	}
	st = h.Stats().Scopes[scope]
	if st.CallsAgainstSpentQuota != 2 || st.QuotaSpent || st.Accepted != 1 {
		t.Errorf("after midnight: %+v", st)
	}
	if got := h.Stats().Providers["datago"].Faults.Shaped; got != 2 {
		t.Errorf("shaped %d answers, want 2", got)
	}
}

// TestShapeQuotaCountsRealSpending: the provider's own 22 (a quota used
// up by calls) counts later calls as calls against a spent quota too.
func TestShapeQuotaCountsRealSpending(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	const scope = "datago/service/15073861"
	limit := h.Stats().Scopes[scope].Limits["requests_per_day"]
	for i := 0; i < limit+3; i++ {
		h.Clock.Advance(time.Second)
		tourGet(h)
	}
	st := h.Stats().Scopes[scope]
	if st.Accepted != int64(limit) || st.Rejected != 3 || st.CallsAgainstSpentQuota != 2 || !st.QuotaSpent {
		t.Errorf("quota %d, %d calls: %+v", limit, limit+3, st)
	}
}

func TestShapeDatagoGatewayXMLAndFlatJSON(t *testing.T) {
	h := simtest.New(t, nil)
	setFaults(h, "provider=datago,dataset=fsc-stock-market-index,shape=gateway-xml,code=30,status=401")
	wantAnswer(t, "gateway xml 30", fscGet(h), 401, "text/xml;charset=UTF-8",
		"<OpenAPI_ServiceResponse>\n\t<cmmMsgHeader>\n\t\t<errMsg>SERVICE ERROR</errMsg>\n\t\t<returnAuthMsg>SERVICE_KEY_IS_NOT_REGISTERED_ERROR</returnAuthMsg>\n\t\t<returnReasonCode>30</returnReasonCode>\n\t</cmmMsgHeader>\n</OpenAPI_ServiceResponse>")
	// Not charged: the gateway answered before the service counted.
	if st := h.Stats().Scopes["datago/service/15094807"]; st.Calls != 0 {
		t.Errorf("a shaped 30 was charged: %+v", st)
	}
	// Other datasets of the provider are unaffected.
	if r := tourGet(h); r.Status != 200 || !strings.Contains(string(r.Body), `"response"`) {
		t.Errorf("tour under an fsc fault: %d %s", r.Status, simtest.Truncate(r.Body))
	}
	setFaults(h, "provider=datago,shape=gateway-json,code=30,status=403")
	wantAnswer(t, "gateway json 30", fscGet(h), 403, "application/json;charset=UTF-8",
		`{"OpenAPI_ServiceResponse":{"cmmMsgHeader":{"errMsg":"SERVICE ERROR","returnAuthMsg":"SERVICE_KEY_IS_NOT_REGISTERED_ERROR","returnReasonCode":"30"}}}`)
	setFaults(h, "provider=datago,shape=flat-json")
	wantAnswer(t, "flat json", fscGet(h), 200, "application/json;charset=UTF-8", `{"resultCode":"10","resultMsg":"INVALID_REQUEST_PARAMETER_ERROR"}`)
	setFaults(h, "provider=datago,shape=gateway-xml")
	if r := fscGet(h); r.Status != 200 || !strings.Contains(string(r.Body), "<returnReasonCode>22</returnReasonCode>") {
		t.Errorf("gateway-xml's default: %d %s", r.Status, r.Body)
	}
	if st := h.Stats().Scopes["datago/service/15094807"]; !st.QuotaSpent || st.RejectedByFault != 1 {
		t.Errorf("gateway-xml's default code 22 did not spend the quota: %+v", st)
	}
}

func TestShapeUpbit429Text(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	setFaults(h, "provider=upbit,shape=429-text,times=1")
	const candles = "/v1/candles/days?market=KRW-BTC&to=2025-03-05T00:00:00Z&count=2"
	wantAnswer(t, "429 text", h.Get(candles, nil), 429, "text/plain;charset=UTF-8", "Too many API requests.")
	if r := h.Get(candles, nil); r.Status != 200 {
		t.Errorf("after times=1: %d %s", r.Status, r.Body)
	}
	st := h.Stats()
	if st.Providers["upbit"].Faults.Shaped != 1 || st.Scopes["upbit/ip"].Calls != 1 || st.Scopes["upbit/ip"].Violations != 0 {
		t.Errorf("stats: %+v %+v", st.Providers["upbit"].Faults, st.Scopes["upbit/ip"])
	}
}

func TestShapeKIS(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	setFaults(h, "provider=kis,shape=token-expired,times=1")
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"]})
	r := h.Post("/oauth2/tokenP", string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
		Expired     string `json:"access_token_token_expired"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	simtest.MustJSON(t, r.Body, &tok)
	wantExpired := simtest.Now.Add(-time.Second).In(simtest.Now.Location()).Format("2006-01-02 15:04:05")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json; charset=utf-8" || tok.ExpiresIn != 0 || tok.Expired != wantExpired || tok.AccessToken == "" {
		t.Fatalf("token-expired: %d %s", r.Status, r.Body)
	}
	const query = "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice?FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=0001&FID_INPUT_DATE_1=20250303&FID_INPUT_DATE_2=20250307&FID_PERIOD_DIV_CODE=D"
	headers := func(token string) map[string]string {
		return map[string]string{"authorization": "Bearer " + token, "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"], "tr_id": "FHKUP03500100", "custtype": "P"}
	}
	wantAnswer(t, "a data call with the expired token", h.Get(query, headers(tok.AccessToken)), 500, "application/json; charset=utf-8",
		`{"rt_cd":"1","msg_cd":"EGW00123","msg1":"기간이 만료된 token 입니다."}`)
	// times=1: a minute later tokenP issues a good token again.
	h.Clock.Advance(time.Minute)
	r = h.Post("/oauth2/tokenP", string(body))
	simtest.MustJSON(t, r.Body, &tok)
	if r.Status != 200 || tok.ExpiresIn != 86400 {
		t.Fatalf("tokenP after the fault: %d %s", r.Status, r.Body)
	}
	if st := h.Stats().Scopes["kis/key"]; st.TokensIssued != 2 || st.TokenRejected != 0 {
		t.Errorf("token stats %+v", st)
	}

	// rt-cd answers data calls only: tokenP is unaffected.
	setFaults(h, "provider=kis,shape=rt-cd", "provider=kis,dataset=kis-index-0001-kospi,shape=rt-cd,code=2")
	r = h.Get(query, headers(tok.AccessToken))
	wantAnswer(t, "the first matching fault in order (rt_cd 7 by default)", r, 200, "application/json; charset=utf-8",
		`{"rt_cd":"7","msg_cd":"KIOK0007","msg1":"조회할 자료가 없습니다"}`)
	if r.Header.Get("tr_id") != "FHKUP03500100" {
		t.Errorf("rt-cd answer's tr_id header %q", r.Header.Get("tr_id"))
	}
	setFaults(h, "provider=kis,dataset=kis-index-0001-kospi,shape=rt-cd,code=2")
	wantAnswer(t, "rt_cd 2", h.Get(query, headers(tok.AccessToken)), 200, "application/json; charset=utf-8",
		`{"rt_cd":"2","msg_cd":"OPSQ2001","msg1":"ERROR : INPUT INVALID_CHECK_INQR_DVSN"}`)
	setFaults(h, "provider=kis,shape=rt-cd,code=7,msg-cd=APBK1359,message=정정취소수량이 주문수량보다 많습니다")
	wantAnswer(t, "rt_cd 7 with its own msg_cd", h.Get(query, headers(tok.AccessToken)), 200, "application/json; charset=utf-8",
		`{"rt_cd":"7","msg_cd":"APBK1359","msg1":"정정취소수량이 주문수량보다 많습니다"}`)
	h.Clock.Advance(time.Minute)
	if r := h.Post("/oauth2/tokenP", string(body)); r.Status != 200 || !strings.Contains(string(r.Body), "access_token") {
		t.Errorf("tokenP under rt-cd: %d %s", r.Status, r.Body)
	}
}

func TestShapeFredKeyNotRegistered(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	setFaults(h, "provider=fred,dataset=fred-dgs10,shape=key-not-registered")
	wantAnswer(t, "json", fredGet(h, ""), 400, "application/json; charset=UTF-8",
		`{"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not registered.  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information."}`)
	r := h.Get("/fred/series/observations?series_id=DGS10&api_key="+h.Creds["FRED_API_KEY"], nil)
	wantAnswer(t, "xml", r, 400, "text/xml; charset=UTF-8",
		"<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n<error code=\"400\" message=\"Bad Request.  The value for variable api_key is not registered.  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information.\"/>\n")
	if st := h.Stats(); st.Scopes["fred/key"].Calls != 0 || st.Providers["fred"].AuthFailures != 0 || st.Providers["fred"].Faults.Shaped != 2 {
		t.Errorf("stats: %+v %+v", st.Scopes["fred/key"], st.Providers["fred"])
	}
}

func TestShapeHTMLAndEmptyBody(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	const ecos = "json/kr/1/1/722Y001/D/20250101/20250131/0101000"
	setFaults(h, "provider=ecos,shape=html-maintenance")
	wantAnswer(t, "html", ecosGet(h, ecos), 200, "text/html;charset=UTF-8", simulator.MaintenancePage)
	setFaults(h, "shape=html-maintenance,status=502")
	wantAnswer(t, "html 502 everywhere", fredGet(h, ""), 502, "text/html;charset=UTF-8", simulator.MaintenancePage)
	setFaults(h, "provider=ecos,shape=empty-body")
	r := ecosGet(h, ecos)
	wantAnswer(t, "empty", r, 200, "application/json;charset=UTF-8", "")
	if r.Header.Get("Content-Length") != "0" {
		t.Errorf("empty body's Content-Length %q", r.Header.Get("Content-Length"))
	}
	if st := h.Stats(); st.Scopes["ecos/key"].Calls != 0 || st.Providers["ecos"].Faults.Shaped != 2 {
		t.Errorf("stats: %+v", st.Providers["ecos"].Faults)
	}
}

func TestFaultTimeWindow(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1e6 })
	// Relative times count from the simulator's clock.
	setFaults(h, "provider=fred,shape=empty-body,from=+1m,until=+2m")
	got := h.Sim.Faults()
	if len(got) != 1 || !got[0].From.Equal(simtest.Now.Add(time.Minute)) || !got[0].Until.Equal(simtest.Now.Add(2*time.Minute)) {
		t.Fatalf("relative window: %+v", got)
	}
	for _, step := range []struct {
		at    time.Duration
		empty bool
	}{{0, false}, {59 * time.Second, false}, {time.Minute, true}, {119 * time.Second, true}, {2 * time.Minute, false}} {
		h.Clock.Set(simtest.Now.Add(step.at))
		r := fredGet(h, "")
		if (len(r.Body) == 0) != step.empty {
			t.Errorf("at +%s: %d bytes, want empty %v", step.at, len(r.Body), step.empty)
		}
	}
	// A window applies to every kind of fault.
	until := simtest.Now.Add(3 * time.Minute)
	if err := h.Sim.SetFaults([]simulator.Fault{{Provider: "fred", Down: true, Until: until}}); err != nil {
		t.Fatal(err)
	}
	if r := fredGet(h, ""); r.Status != 503 {
		t.Errorf("down within its window: %d", r.Status)
	}
	h.Clock.Set(until)
	if r := fredGet(h, ""); r.Status != 200 {
		t.Errorf("down after its window: %d", r.Status)
	}
	// JSON carries the window as RFC 3339.
	b, _ := json.Marshal(h.Sim.Faults())
	if !strings.Contains(string(b), `"until":"2025-03-11T14:33:00+09:00"`) {
		t.Errorf("JSON %s", b)
	}
}

func TestShapeFaultsValidated(t *testing.T) {
	h := simtest.New(t, nil)
	for _, c := range []struct{ spec, want string }{
		{"provider=fred,shape=nope", `shape "nope" is not one fred speaks (known: html-maintenance, empty-body, key-not-registered)`},
		{"provider=fred,shape=gateway-json", `shape "gateway-json" is not one fred speaks`},
		{"shape=429-text", `shape "429-text" is not one every provider speaks (html-maintenance, empty-body)`},
		{"provider=datago,shape=gateway-xml,code=77", `code "77" is not one shape gateway-xml knows`},
		{"provider=upbit,shape=429-text,code=1", `shape 429-text takes no code, but code is "1"`},
		{"provider=kis,shape=rt-cd,code=x7", `code "x7" of shape rt-cd is not one to four digits`},
		{"provider=datago,shape=flat-json,msg-cd=A1", `shape flat-json takes no msg_cd, but msg_cd is "A1"`},
		{"provider=ecos,shape=empty-body,message=hi", `shape empty-body takes no message, but message is "hi"`},
		{"provider=ecos,shape=empty-body,status=700", `status 700 is not an HTTP status from 200 to 599`},
		{"provider=ecos,times=2", `times 2 is set but the fault has no shape`},
		{"provider=ecos,code=22", `code 22 is set but the fault has no shape`},
		{"provider=ecos,shape=empty-body,times=-1", `times -1 must not be negative`},
		{"provider=ecos,shape=empty-body,shape-rate=2", `shape_rate 2 is not between 0 and 1`},
		{"provider=ecos,down,from=2026-12-04T16:00:00Z,until=2026-12-04T15:00:00Z", `until 2026-12-04T15:00:00Z is not after from 2026-12-04T16:00:00Z`},
		{"provider=ecos,down,until=tomorrow", `until: "tomorrow" is neither RFC 3339`},
		{"provider=ecos,down,from=+-5s", `from: "+-5s": a relative time must not be negative`},
	} {
		r := h.Post("/_sim/faults", c.spec)
		var e struct{ Error string }
		_ = json.Unmarshal(r.Body, &e)
		if r.Status != 400 || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: %d %q; want 400 with %q", c.spec, r.Status, e.Error, c.want)
		}
	}
	// New checks shapes too.
	_, err := simulator.New(simulator.Options{Registry: simtest.Fixture(t), Faults: []simulator.Fault{{Provider: "ecos", Shape: "rt-cd"}}})
	if err == nil || !strings.Contains(err.Error(), `shape "rt-cd" is not one ecos speaks`) {
		t.Errorf("New with a KIS shape on ECOS: %v", err)
	}
}
