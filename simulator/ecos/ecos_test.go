package ecos

import (
	"encoding/json"
	"encoding/xml"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
	"github.com/sluicehq/sluice/simulator/synth"
)

func ecosGet(h *simtest.Harness, rest string) simtest.Response {
	h.T.Helper()
	return h.Get("/api/StatisticSearch/"+h.Creds["ECOS_API_KEY"]+"/"+rest, nil)
}

var ecosRowKeys = []string{"STAT_CODE", "STAT_NAME", "ITEM_CODE1", "ITEM_NAME1", "ITEM_CODE2", "ITEM_NAME2", "ITEM_CODE3", "ITEM_NAME3",
	"ITEM_CODE4", "ITEM_NAME4", "UNIT_NAME", "WGT", "TIME", "DATA_VALUE"}

type ecosAnswer struct {
	StatisticSearch struct {
		Total int                          `json:"list_total_count"`
		Row   []map[string]json.RawMessage `json:"row"`
	} `json:"StatisticSearch"`
	Result *struct {
		Code    string `json:"CODE"`
		Message string `json:"MESSAGE"`
	} `json:"RESULT"`
}

func ecosString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s *string
	simtest.MustJSON(t, raw, &s)
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestECOSStatisticSearch(t *testing.T) {
	h := simtest.New(t, nil)
	r := ecosGet(h, "json/kr/1/100/722Y001/D/20250101/20250331/0101000")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var a ecosAnswer
	simtest.MustJSON(t, r.Body, &a)
	// Daily data is published the next business day at 09:00 KST: on
	// 11 March at 14:30 the newest day is 10 March.
	var want []string
	for d := synth.Date(2025, 1, 1); d <= synth.Date(2025, 3, 10); d++ {
		if synth.KRX.Open(d) {
			want = append(want, d.YYYYMMDD())
		}
	}
	if a.StatisticSearch.Total != len(want) || len(a.StatisticSearch.Row) != len(want) {
		t.Fatalf("total %d rows %d, want %d", a.StatisticSearch.Total, len(a.StatisticSearch.Row), len(want))
	}
	var raw struct {
		StatisticSearch struct {
			Row []json.RawMessage `json:"row"`
		} `json:"StatisticSearch"`
	}
	simtest.MustJSON(t, r.Body, &raw)
	if got := simtest.KeysOf(t, raw.StatisticSearch.Row[0]); !reflect.DeepEqual(got, ecosRowKeys) {
		t.Errorf("row keys\n got %v\nwant %v", got, ecosRowKeys)
	}
	for i, row := range a.StatisticSearch.Row {
		if got := ecosString(t, row["TIME"]); got != want[i] {
			t.Fatalf("row %d TIME %s, want %s", i, got, want[i])
		}
		v, err := strconv.ParseFloat(ecosString(t, row["DATA_VALUE"]), 64)
		if err != nil || v < 0.5 || v > 10 {
			t.Fatalf("row %d DATA_VALUE %s", i, row["DATA_VALUE"])
		}
	}
	row := a.StatisticSearch.Row[0]
	if ecosString(t, row["ITEM_NAME1"]) != "한국은행 기준금리" || ecosString(t, row["UNIT_NAME"]) != "연%" ||
		ecosString(t, row["ITEM_CODE2"]) != "<null>" || ecosString(t, row["WGT"]) != "<null>" {
		t.Errorf("row %v", row)
	}

	// Row paging: rows 3..5 of the same query.
	r = ecosGet(h, "json/kr/3/5/722Y001/D/20250101/20250331/0101000")
	var page ecosAnswer
	simtest.MustJSON(t, r.Body, &page)
	if page.StatisticSearch.Total != len(want) || len(page.StatisticSearch.Row) != 3 || ecosString(t, page.StatisticSearch.Row[0]["TIME"]) != want[2] {
		t.Errorf("rows 3..5: total %d, %d rows", page.StatisticSearch.Total, len(page.StatisticSearch.Row))
	}

	// Monthly and quarterly periods.
	r = ecosGet(h, "json/kr/1/10/901Y009/M/202401/202412/0")
	simtest.MustJSON(t, r.Body, &a)
	if len(a.StatisticSearch.Row) != 10 || ecosString(t, a.StatisticSearch.Row[0]["TIME"]) != "202401" || ecosString(t, a.StatisticSearch.Row[9]["TIME"]) != "202410" {
		t.Errorf("monthly rows %d", len(a.StatisticSearch.Row))
	}
	r = ecosGet(h, "json/kr/1/10/200Y102/Q/2024Q1/2025Q4/10111")
	simtest.MustJSON(t, r.Body, &a)
	if a.StatisticSearch.Total != 4 || ecosString(t, a.StatisticSearch.Row[3]["TIME"]) != "2024Q4" {
		t.Errorf("quarterly: total %d (want 4: 2025Q1 is not yet published)", a.StatisticSearch.Total)
	}

	// XML.
	r = ecosGet(h, "xml/kr/1/2/722Y001/D/20250101/20250131/0101000")
	var x struct {
		XMLName xml.Name `xml:"StatisticSearch"`
		Total   int      `xml:"list_total_count"`
		Rows    []struct {
			Time  string `xml:"TIME"`
			Value string `xml:"DATA_VALUE"`
		} `xml:"row"`
	}
	if err := xml.Unmarshal(r.Body, &x); err != nil || len(x.Rows) != 2 || x.Rows[0].Time != "20250102" {
		t.Errorf("xml: %v %+v", err, x)
	}
}

func TestECOSErrors(t *testing.T) {
	h := simtest.New(t, nil)
	cases := []struct {
		path, code string
	}{
		{"/api/StatisticSearch/WRONGKEY/json/kr/1/10/722Y001/D/20250101/20250131/0101000", "INFO-100"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/10/722Y001/D/202501/202501/0101000", "ERROR-101"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/10/901Y009/M/20250101/20250131/0", "ERROR-101"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/10/722Y001/D/20300101/20300131/0101000", "INFO-200"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/10/999Y999/D/20250101/20250131", "INFO-200"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/a/10/722Y001/D/20250101/20250131", "ERROR-301"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr", "ERROR-300"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/10/722Y001", "ERROR-100"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/csv/kr/1/10/722Y001/D/20250101/20250131", "ERROR-200"},
		{"/api/StatisticSearch/" + h.Creds["ECOS_API_KEY"] + "/json/kr/1/200000/722Y001/D/20250101/20250131", "ERROR-400"},
	}
	for _, c := range cases {
		r := h.Get(c.path, nil)
		var a ecosAnswer
		simtest.MustJSON(t, r.Body, &a)
		if r.Status != 200 || a.Result == nil || a.Result.Code != c.code || a.Result.Message == "" {
			t.Errorf("%s: %d %s, want %s in HTTP 200", c.path, r.Status, r.Body, c.code)
		}
	}
	r := h.Get("/api/StatisticSearch/WRONGKEY/xml/kr/1/10/722Y001/D/20250101/20250131", nil)
	var x struct {
		Code string `xml:"CODE"`
	}
	if err := xml.Unmarshal(r.Body, &x); err != nil || x.Code != "INFO-100" {
		t.Errorf("xml bad key: %v %s", err, r.Body)
	}
	if got := h.Stats().Providers["ecos"].AuthFailures; got != 2 {
		t.Errorf("auth failures %d, want 2", got)
	}
}

func TestECOSThrottled(t *testing.T) {
	h := simtest.New(t, nil)
	for i := 0; i < 20; i++ {
		if r := ecosGet(h, "json/kr/1/1/722Y001/D/20250101/20250131/0101000"); r.Status != 200 || !strings.HasPrefix(string(r.Body), `{"StatisticSearch"`) {
			t.Fatalf("call %d: %s", i, r.Body)
		}
	}
	r := ecosGet(h, "json/kr/1/1/722Y001/D/20250101/20250131/0101000")
	var a ecosAnswer
	simtest.MustJSON(t, r.Body, &a)
	if r.Status != 200 || a.Result == nil || a.Result.Code != "ERROR-602" || a.Result.Message != "과도한 OpenAPI호출로 이용이 제한되었습니다. 잠시후 이용해주시기 바랍니다." {
		t.Fatalf("21st call: %d %s", r.Status, r.Body)
	}
	if st := h.Stats().Scopes["ecos/key"]; st.Rejected != 1 || st.Accepted != 20 {
		t.Errorf("stats %+v", st)
	}
}

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

// TestEveryDefaultDataset asks for every ECOS dataset of the default
// registry the way the connector would: each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	simtest.EveryDefaultDataset(t, "ecos", 80, func(h *simtest.Harness, ds *registry.Dataset) (bool, simtest.Response) {
		a, b := ecosRange(ds.Request.Cycle)
		r := ecosGet(h, "json/kr/1/1000/"+ds.Request.StatCode+"/"+ds.Request.Cycle+"/"+a+"/"+b+"/"+strings.Join(ds.Request.Items, "/"))
		var ans ecosAnswer
		simtest.MustJSON(t, r.Body, &ans)
		return len(ans.StatisticSearch.Row) > 0, r
	})
}

func TestTestCredentialsShapes(t *testing.T) {
	simtest.AssertCredentialShapes(t, map[string]string{"ECOS_API_KEY": `^[A-Z0-9]{20}$`})
}

func TestSameRequestSameBytes(t *testing.T) {
	simtest.AssertDeterministic(t, func(h *simtest.Harness) map[string][]byte {
		return map[string][]byte{
			"ecos":     ecosGet(h, "json/kr/1/100/722Y001/D/20250101/20250331/0101000").Body,
			"ecos-xml": ecosGet(h, "xml/kr/1/100/901Y009/M/202001/202503/0").Body,
		}
	})
}

// TestECOSPublication: when each kind of statistic is out. Daily values
// appear the next business day at 09:00 KST (Friday's on Monday); a
// month's money supply some 45 days after it, its CPI two days after, its
// consumer survey in its own last week, other monthly statistics 25 days
// after.
func TestECOSPublication(t *testing.T) {
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := simtest.New(t, func(o *simulator.Options) { o.Registry = reg; o.RateScale = 1e6 })
	kst := time.FixedZone("KST", 9*3600)
	newest := func(rest string) string {
		t.Helper()
		h.Clock.Advance(time.Second)
		var a ecosAnswer
		simtest.MustJSON(t, ecosGet(h, rest).Body, &a)
		if len(a.StatisticSearch.Row) == 0 {
			return ""
		}
		return ecosString(t, a.StatisticSearch.Row[len(a.StatisticSearch.Row)-1]["TIME"])
	}
	for _, tc := range []struct {
		now        time.Time
		rest, want string
	}{
		{time.Date(2026, 11, 28, 10, 0, 0, 0, kst), "json/kr/1/100/722Y001/D/20261101/20261130/0101000", "20261126"}, // Saturday: Thursday's
		{time.Date(2026, 11, 30, 8, 0, 0, 0, kst), "json/kr/1/100/722Y001/D/20261101/20261130/0101000", "20261126"},  // Monday before 09:00
		{time.Date(2026, 11, 30, 10, 0, 0, 0, kst), "json/kr/1/100/722Y001/D/20261101/20261130/0101000", "20261127"}, // Monday 10:00: Friday's
		{time.Date(2026, 12, 1, 10, 0, 0, 0, kst), "json/kr/1/100/161Y005/M/202601/202612/BBHS00", "202609"},
		{time.Date(2026, 12, 16, 10, 0, 0, 0, kst), "json/kr/1/100/161Y005/M/202601/202612/BBHS00", "202610"},
		{time.Date(2026, 12, 1, 10, 0, 0, 0, kst), "json/kr/1/100/901Y009/M/202601/202612/0", "202610"},
		{time.Date(2026, 12, 3, 10, 0, 0, 0, kst), "json/kr/1/100/901Y009/M/202601/202612/0", "202611"},
		{time.Date(2026, 12, 3, 10, 0, 0, 0, kst), "json/kr/1/100/404Y014/M/202601/202612/*AA", "202610"},
		{time.Date(2026, 12, 27, 10, 0, 0, 0, kst), "json/kr/1/100/511Y002/M/202601/202612/FME/99988", "202612"},
	} {
		h.Clock.Set(tc.now)
		if got := newest(tc.rest); got != tc.want {
			t.Errorf("%s at %s: newest period %q, want %s", tc.rest, tc.now.Format(time.DateTime), got, tc.want)
		}
	}
}
