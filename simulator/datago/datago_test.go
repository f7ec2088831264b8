package datago

import (
	"encoding/json"
	"encoding/xml"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
	"github.com/sluicehq/sluice/simulator/synth"
)

const fscIndexPath = "/1160100/GetMarketIndexInfoService_V2/getStockMarketIndex_V2"

type datagoAnswer struct {
	Response struct {
		Header struct {
			ResultCode string `json:"resultCode"`
			ResultMsg  string `json:"resultMsg"`
		} `json:"header"`
		Body struct {
			Items      json.RawMessage `json:"items"`
			NumOfRows  int             `json:"numOfRows"`
			PageNo     int             `json:"pageNo"`
			TotalCount int             `json:"totalCount"`
		} `json:"body"`
	} `json:"response"`
}

// items decodes items.item whether it is an array or a single object.
func (a datagoAnswer) items(t *testing.T) []map[string]string {
	t.Helper()
	var wrap struct {
		Item json.RawMessage `json:"item"`
	}
	if string(a.Response.Body.Items) == `""` {
		return nil
	}
	simtest.MustJSON(t, a.Response.Body.Items, &wrap)
	if strings.HasPrefix(string(wrap.Item), "{") {
		var one map[string]string
		simtest.MustJSON(t, wrap.Item, &one)
		return []map[string]string{one}
	}
	var many []map[string]string
	simtest.MustJSON(t, wrap.Item, &many)
	return many
}

type gatewayAnswer struct {
	XMLName xml.Name `xml:"OpenAPI_ServiceResponse"`
	ErrMsg  string   `xml:"cmmMsgHeader>errMsg"`
	AuthMsg string   `xml:"cmmMsgHeader>returnAuthMsg"`
	Code    string   `xml:"cmmMsgHeader>returnReasonCode"`
}

func datagoGet(h *simtest.Harness, path, query string) simtest.Response {
	h.T.Helper()
	return h.Get(path+"?serviceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&"+query, nil)
}

func isSuccessCode(c string) bool { return c == "00" || c == "000" || c == "0000" }

func TestDatagoStockIndex(t *testing.T) {
	h := simtest.New(t, nil)
	r := datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310&numOfRows=1000&pageNo=1")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var a datagoAnswer
	simtest.MustJSON(t, r.Body, &a)
	items := a.items(t)
	if !isSuccessCode(a.Response.Header.ResultCode) || a.Response.Header.ResultMsg != "NORMAL SERVICE." {
		t.Errorf("header %+v", a.Response.Header)
	}
	if a.Response.Body.TotalCount != len(items) || len(items) < 100 || a.Response.Body.NumOfRows != 1000 || a.Response.Body.PageNo != 1 {
		t.Errorf("body: total %d items %d", a.Response.Body.TotalCount, len(items))
	}
	for _, k := range []string{"basDt", "idxNm", "idxCsf", "clpr", "vs", "fltRt", "mkp", "hipr", "lopr", "trqu", "trPrc", "lstgMrktTotAmt", "basPntm", "basIdx"} {
		if items[0][k] == "" {
			t.Errorf("item lacks %s: %v", k, items[0])
		}
	}
	if items[0]["basDt"] != "20250310" || items[0]["idxNm"] != "코스피" {
		t.Errorf("first item %v", items[0])
	}

	// One item per page comes as an object; idxNm filters.
	h.Clock.Advance(2 * time.Second)
	r = datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310&idxNm="+url.QueryEscape("코스닥"))
	simtest.MustJSON(t, r.Body, &a)
	if !strings.HasPrefix(string(a.Response.Body.Items), `{"item":{`) || a.Response.Body.TotalCount != 1 {
		t.Errorf("single item: %s", a.Response.Body.Items)
	}

	// A Sunday has no data: resultCode 03 and items "".
	h.Clock.Advance(2 * time.Second)
	r = datagoGet(h, fscIndexPath, "resultType=json&basDt=20250309")
	simtest.MustJSON(t, r.Body, &a)
	if a.Response.Header.ResultCode != "03" || string(a.Response.Body.Items) != `""` || a.Response.Body.TotalCount != 0 {
		t.Errorf("no data: %s", r.Body)
	}

	// The day before yesterday's rows are out; today's are not.
	h.Clock.Advance(2 * time.Second)
	r = datagoGet(h, fscIndexPath, "resultType=json&basDt=20250311")
	simtest.MustJSON(t, r.Body, &a)
	if a.Response.Header.ResultCode != "03" {
		t.Errorf("today's data before publication: %s", a.Response.Header.ResultCode)
	}

	// Without a JSON switch the answer is XML.
	h.Clock.Advance(2 * time.Second)
	r = datagoGet(h, fscIndexPath, "basDt=20250310&numOfRows=2")
	var x struct {
		XMLName    xml.Name `xml:"response"`
		ResultCode string   `xml:"header>resultCode"`
		Items      []struct {
			IdxNm string `xml:"idxNm"`
		} `xml:"body>items>item"`
		Total int `xml:"body>totalCount"`
	}
	if err := xml.Unmarshal(r.Body, &x); err != nil || !isSuccessCode(x.ResultCode) || len(x.Items) != 2 || x.Total < 100 {
		t.Errorf("xml: %v %s", err, simtest.Truncate(r.Body))
	}
}

func TestDatagoDateRangeAndTour(t *testing.T) {
	h := simtest.New(t, nil)
	r := datagoGet(h, "/1160100/service/GetStockSecuritiesInfoService/getStockPriceInfo", "resultType=json&beginBasDt=20250303&endBasDt=20250307&numOfRows=100")
	var a datagoAnswer
	simtest.MustJSON(t, r.Body, &a)
	days := map[string]bool{}
	for _, it := range a.items(t) {
		days[it["basDt"]] = true
	}
	// endBasDt is exclusive: 3..6 March (KRX days), five entities each.
	if len(days) != 4 || days["20250307"] || !days["20250303"] || a.Response.Body.TotalCount != 20 {
		t.Errorf("days %v total %d", days, a.Response.Body.TotalCount)
	}

	h.Clock.Advance(2 * time.Second)
	r = h.Get("/B551011/KorService2/areaBasedList2?ServiceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&_type=json&numOfRows=5&pageNo=1&MobileOS=ETC&MobileApp=Sluice&arrange=C", nil)
	simtest.MustJSON(t, r.Body, &a)
	items := a.items(t)
	if len(items) != 5 || a.Response.Body.TotalCount < 48000 {
		t.Fatalf("tour: %s", simtest.Truncate(r.Body))
	}
	for i := 1; i < len(items); i++ {
		if items[i]["modifiedtime"] > items[i-1]["modifiedtime"] {
			t.Errorf("not sorted by modification time: %s after %s", items[i]["modifiedtime"], items[i-1]["modifiedtime"])
		}
	}
	if items[0]["title"] == "" || items[0]["contentid"] == "" || items[0]["mapx"] == "" {
		t.Errorf("tour item %v", items[0])
	}
	first := items[0]["contentid"]
	// The list moves as entries are modified.
	h.Clock.Advance(time.Hour)
	r = h.Get("/B551011/KorService2/areaBasedList2?ServiceKey="+url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"])+"&_type=json&numOfRows=5&pageNo=1&MobileOS=ETC&MobileApp=Sluice&arrange=C", nil)
	simtest.MustJSON(t, r.Body, &a)
	if a.items(t)[0]["contentid"] == first {
		t.Error("the recently-modified list did not change in an hour")
	}
}

func TestDatagoGatewayErrors(t *testing.T) {
	h := simtest.New(t, nil)
	check := func(r simtest.Response, code, msg string) {
		t.Helper()
		var g gatewayAnswer
		if r.Status != 200 {
			t.Errorf("status %d, want 200", r.Status)
		}
		if err := xml.Unmarshal(r.Body, &g); err != nil || g.Code != code || g.AuthMsg != msg || g.ErrMsg != "SERVICE ERROR" {
			t.Errorf("want %s %s: %v %s", code, msg, err, r.Body)
		}
	}
	check(h.Get(fscIndexPath+"?serviceKey=wrong&resultType=json&basDt=20250310", nil), "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR")
	// Encoded twice: the portal sees %2B… and does not know the key.
	twice := url.QueryEscape(url.QueryEscape(h.Creds["DATAGO_SERVICE_KEY"]))
	check(h.Get(fscIndexPath+"?serviceKey="+twice+"&resultType=json&basDt=20250310", nil), "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR")
	// Not encoded: '+' becomes a space.
	check(h.Get(fscIndexPath+"?serviceKey="+h.Creds["DATAGO_SERVICE_KEY"]+"&resultType=json&basDt=20250310", nil), "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR")
	check(datagoGet(h, "/1160100/GetMarketIndexInfoService_V2/getNoSuchThing_V2", "resultType=json"), "12", "NO_OPENAPI_SERVICE_ERROR")

	if r := datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310"); r.Status != 200 || !strings.HasPrefix(string(r.Body), `{"response"`) {
		t.Fatalf("first call: %s", simtest.Truncate(r.Body))
	}
	// The service allows one call every 2 s: 1.999 s later is too soon.
	h.Clock.Advance(1999 * time.Millisecond)
	check(datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310"), "23", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_PER_SECOND_EXCEEDS_ERROR")
	check(datagoGet(h, fscIndexPath, "resultType=json&basDt=2025-03-10"), "23", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_PER_SECOND_EXCEEDS_ERROR")
	h.Clock.Advance(time.Millisecond)
	check(datagoGet(h, fscIndexPath, "resultType=json&basDt=2025-03-10"), "10", "INVALID_REQUEST_PARAMETER_ERROR")
	st := h.Stats()
	if s := st.Scopes["datago/service/15094807"]; s.Rejected != 2 || s.Accepted != 2 || s.MinGapMS == nil || *s.MinGapMS != 2000 || *s.MinGapAllMS != 0 {
		t.Errorf("scope stats %+v", s)
	}
	// The report names the first violation's two calls: the accepted call
	// 1.999 s before it and the rejected one, when each was counted and
	// from which connection.
	s := st.Scopes["datago/service/15094807"]
	if v := s.FirstViolation; v == nil || v.Reason != "over_interval" || v.Field != "min_interval_seconds" || v.Previous == nil ||
		v.Call.Stamped.Sub(v.Previous.Stamped) != 1999*time.Millisecond || v.Call.Remote == "" || v.Previous.Remote == "" ||
		v.Call.Dataset != "fsc-stock-market-index" {
		t.Errorf("first violation %+v", v)
	}
	if len(s.MinGapCalls) != 2 || s.MinGapCalls[1].Stamped != s.MinGapCalls[0].Stamped {
		t.Errorf("the smallest gap's calls %+v, want the two rejected calls at one instant", s.MinGapCalls)
	}
	if st.Providers["datago"].AuthFailures != 3 {
		t.Errorf("auth failures %d", st.Providers["datago"].AuthFailures)
	}
}

func TestDatagoDailyQuotaResetsAtSeoulMidnight(t *testing.T) {
	h := simtest.New(t, nil)
	seoul := time.FixedZone("KST", 9*3600)
	h.Clock.Set(time.Date(2025, 3, 11, 22, 0, 0, 0, seoul))
	for i := 0; i < 50; i++ {
		if r := datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310"); !strings.HasPrefix(string(r.Body), `{"response"`) {
			t.Fatalf("call %d: %s", i, r.Body)
		}
		h.Clock.Advance(2 * time.Second)
	}
	var g gatewayAnswer
	h.Clock.Set(time.Date(2025, 3, 11, 23, 59, 59, 0, seoul))
	r := datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310")
	if err := xml.Unmarshal(r.Body, &g); err != nil || g.Code != "22" || g.AuthMsg != "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR" {
		t.Fatalf("51st call of the day: %s", r.Body)
	}
	h.Clock.Set(time.Date(2025, 3, 12, 0, 0, 0, 0, seoul))
	if r := datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310"); !strings.HasPrefix(string(r.Body), `{"response"`) {
		t.Fatalf("first call after Seoul midnight: %s", r.Body)
	}
	s := h.Stats().Scopes["datago/service/15094807"]
	if s.MaxInWindow["requests_per_day"] != 51 || s.MaxAcceptedInWindow["requests_per_day"] != 50 || s.DailyUsed != 1 || s.Rejected != 1 {
		t.Errorf("stats %+v", s)
	}
	// The quota is a calendar day in the provider's timezone, not scaled.
	if d := synth.DayOf(h.Clock.Now().In(seoul)); d != synth.Date(2025, 3, 12) {
		t.Fatal(d)
	}
}

// TestEveryDefaultDataset asks for every data.go.kr dataset of the
// default registry the way the connector would: each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	from := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC) // a Monday, published by 11 March 14:30 KST
	simtest.EveryDefaultDataset(t, "datago", 4, func(h *simtest.Harness, ds *registry.Dataset) (bool, simtest.Response) {
		q := url.Values{}
		for _, prm := range ds.Request.ExpandParams(from, from) { // basDt={from} must be a business day
			q.Set(prm.Name, prm.Value)
		}
		q.Set("serviceKey", h.Creds["DATAGO_SERVICE_KEY"])
		r := h.Get(ds.Request.Path+"?"+q.Encode(), nil)
		if ds.Request.Format == "json" && strings.HasPrefix(string(r.Body), "{") {
			var ans datagoAnswer
			simtest.MustJSON(t, r.Body, &ans)
			return isSuccessCode(ans.Response.Header.ResultCode) && ans.Response.Body.TotalCount > 0, r
		}
		return strings.Contains(string(r.Body), "<resultCode>") && !strings.Contains(string(r.Body), "OpenAPI_ServiceResponse"), r
	})
}

func TestTestCredentialsShapes(t *testing.T) {
	simtest.AssertCredentialShapes(t, map[string]string{"DATAGO_SERVICE_KEY": `^[A-Za-z0-9+/]{86}==$`})
	if k := simulator.TestCredentials(simtest.Fixture(t))["DATAGO_SERVICE_KEY"]; !strings.Contains(k, "+") || !strings.Contains(k, "/") {
		t.Errorf("service key %q lacks + or /: it would not exercise encoding", k)
	}
}

func TestSameRequestSameBytes(t *testing.T) {
	simtest.AssertDeterministic(t, func(h *simtest.Harness) map[string][]byte {
		out := map[string][]byte{"datago": datagoGet(h, fscIndexPath, "resultType=json&basDt=20250310&numOfRows=1000").Body}
		h.Clock.Advance(2 * time.Second)
		out["tour"] = datagoGet(h, "/B551011/KorService2/areaBasedList2", "_type=json&numOfRows=100&MobileOS=ETC&MobileApp=x").Body
		return out
	}, "datago")
}
