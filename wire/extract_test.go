package wire

import (
	"strings"
	"testing"
)

var (
	ecosRows   = Rows{JSON: "StatisticSearch.row", XML: "StatisticSearch.row", Period: "TIME", PeriodFormat: YYYYMM, Keys: []string{"ITEM_CODE1"}, Values: []string{"DATA_VALUE"}}
	fredRows   = Rows{JSON: "observations", XML: "observations.observation", Period: "date", PeriodFormat: ISODate, Values: []string{"value"}}
	datagoRows = Rows{JSON: "response.body.items.item", XML: "response.body.items.item", Period: "basDt", PeriodFormat: YYYYMMDD, Keys: []string{"idxNm"}, Values: []string{"clpr", "vs"}}
	upbitRows  = Rows{Period: "candle_date_time_utc", PeriodFormat: ISODateTime, Values: []string{"trade_price"}}
)

func TestExtractJSON(t *testing.T) {
	rows, err := Extract([]byte(`{"StatisticSearch":{"list_total_count":2,"row":[
		{"TIME":"202401","ITEM_CODE1":"0","ITEM_CODE2":null,"DATA_VALUE":"113.15"},
		{"TIME":"202402","ITEM_CODE1":"0","DATA_VALUE":"113.8","WGT":null}]}}`), ecosRows)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %v", rows, err)
	}
	if r := rows[1]; r.Period != "202402" || !r.Start.Equal(date(2024, 2, 1)) || r.Values["DATA_VALUE"] != "113.8" || r.Keys[0] != "0" || r.ID() != "202402\x1f0" {
		t.Errorf("row %+v", r)
	}
	if n, ok := Newest(rows); !ok || n.Period != "202402" {
		t.Errorf("newest %+v", n)
	}
	// A top-level array with numbers kept as written; a missing value
	// field is absent, not empty.
	rows, err = Extract([]byte(` [{"candle_date_time_utc":"2024-01-07T00:00:00","trade_price":90000000.00000000},{"candle_date_time_utc":"2024-01-06T00:00:00"}]`), upbitRows)
	if err != nil || len(rows) != 2 || rows[0].Values["trade_price"] != "90000000.00000000" {
		t.Fatalf("%+v %v", rows, err)
	}
	if _, ok := rows[1].Values["trade_price"]; ok {
		t.Error("an absent field has a value")
	}
	// data.go.kr: one item as an object; no data as items "".
	rows, err = Extract([]byte(`{"response":{"header":{"resultCode":"00"},"body":{"items":{"item":{"basDt":"20250310","idxNm":"코스피","clpr":"2500.12"}},"totalCount":1}}}`), datagoRows)
	if err != nil || len(rows) != 1 || rows[0].Keys[0] != "코스피" || rows[0].Values["clpr"] != "2500.12" {
		t.Fatalf("single item: %+v %v", rows, err)
	}
	for _, body := range []string{
		`{"response":{"header":{"resultCode":"03"},"body":{"items":"","totalCount":0}}}`,
		`{"response":{"body":{"items":null}}}`,
		`{"observations":[]}`,
	} {
		spec := datagoRows
		if strings.Contains(body, "observations") {
			spec = fredRows
		}
		if rows, err := Extract([]byte(body), spec); err != nil || len(rows) != 0 {
			t.Errorf("%s: %v %v", body, rows, err)
		}
	}
}

func TestExtractXML(t *testing.T) {
	rows, err := Extract([]byte(`<?xml version="1.0" encoding="utf-8" ?>
<observations realtime_start="2025-03-11" count="2">
  <observation realtime_start="2025-03-11" date="2025-03-06" value="4.28"/>
  <observation realtime_start="2025-03-11" date="2025-03-07" value="."/>
</observations>`), fredRows)
	if err != nil || len(rows) != 2 || rows[0].Values["value"] != "4.28" || rows[1].Values["value"] != "." || !rows[1].Start.Equal(date(2025, 3, 7)) {
		t.Fatalf("fred xml: %+v %v", rows, err)
	}
	rows, err = Extract([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<StatisticSearch><list_total_count>1</list_total_count>
<row><STAT_CODE>901Y009</STAT_CODE><ITEM_CODE1>0</ITEM_CODE1><TIME>202401</TIME><DATA_VALUE>113.15</DATA_VALUE><WGT></WGT></row>
</StatisticSearch>`), ecosRows)
	if err != nil || len(rows) != 1 || rows[0].Values["DATA_VALUE"] != "113.15" || rows[0].Period != "202401" {
		t.Fatalf("ecos xml: %+v %v", rows, err)
	}
	rows, err = Extract([]byte(`<response><header><resultCode>00</resultCode></header><body><items><item><basDt>20250310</basDt><idxNm>A &amp; B</idxNm><clpr>1.5</clpr><x><clpr>nested</clpr></x></item></items></body></response>`), datagoRows)
	if err != nil || len(rows) != 1 || rows[0].Keys[0] != "A & B" || rows[0].Values["clpr"] != "1.5" {
		t.Fatalf("datago xml: %+v %v", rows, err)
	}
	rows, err = Extract([]byte(`<response><header><resultCode>03</resultCode></header><body><items/><totalCount>0</totalCount></body></response>`), datagoRows)
	if err != nil || len(rows) != 0 {
		t.Errorf("empty page: %v %v", rows, err)
	}
}

func TestExtractErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		rows Rows
		want string
	}{
		{"empty", "  \n", ecosRows, "empty answer"},
		{"text", "404 page not found", ecosRows, "neither JSON nor XML"},
		{"html error page as xml", "<html><body>503</body></html>", ecosRows, "root element is <html>, not <StatisticSearch>"},
		{"ecos error envelope", `{"RESULT":{"CODE":"INFO-200","MESSAGE":"해당하는 데이터가 없습니다."}}`, ecosRows, `no "StatisticSearch" in the answer`},
		{"ecos error envelope, xml", `<RESULT><CODE>INFO-200</CODE></RESULT>`, ecosRows, "root element is <RESULT>"},
		{"datago gateway error", `<OpenAPI_ServiceResponse><cmmMsgHeader><returnReasonCode>22</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`, datagoRows, "root element is <OpenAPI_ServiceResponse>"},
		{"missing parent", `<response><header/></response>`, datagoRows, "no <items> in the answer"},
		{"invalid json", `{"observations":[`, fredRows, "not valid JSON"},
		{"invalid xml", `<observations><observation date="2025-01-01"></observations>`, fredRows, "not valid XML"},
		{"not an object on the way", `{"StatisticSearch":[1,2]}`, ecosRows, "StatisticSearch is not an object"},
		{"rows are a number", `{"observations":5}`, fredRows, "neither an array nor an object"},
		{"row not an object", `{"observations":[1]}`, fredRows, "row 0 is not an object"},
		{"no period", `{"observations":[{"date":"2025-01-01"},{"value":"1"}]}`, fredRows, `row 1: no period field "date"`},
		{"bad period", `{"observations":[{"date":"2025-02-30","value":"1"}]}`, fredRows, `row 0: field "date": "2025-02-30" is not a YYYY-MM-DD period`},
		{"xml declared elsewhere", `<?xml version="1.0" encoding="EUC-KR"?><observations/>`, fredRows, `unsupported XML encoding "EUC-KR"`},
		{"xml rows not declared", `<x/>`, upbitRows, "declares no XML rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := Extract([]byte(tc.body), tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "extracting rows: ") {
				t.Errorf("got %v, %v; want an error containing %q", rows, err, tc.want)
			}
		})
	}
}

func TestNewestByTextWithoutFormat(t *testing.T) {
	rows := []Row{{Period: "2024Q1"}, {Period: "2024Q3"}, {Period: "2024Q2"}}
	if n, _ := Newest(rows); n.Period != "2024Q3" {
		t.Errorf("newest %q", n.Period)
	}
	if _, ok := Newest(nil); ok {
		t.Error("newest of nothing")
	}
}
