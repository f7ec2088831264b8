package datago

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func TestClassifyShapes(t *testing.T) {
	ok := []string{
		`{"response":{"header":{"resultCode":"0000","resultMsg":"OK"},"body":{"items":{"item":{"a":"1"}},"totalCount":1,"pageNo":1,"numOfRows":10}}}`,
		`{"header":{"resultCode":"000","resultMsg":"OK"},"body":{"items":[{"a":"1"}],"totalCount":1}}`,
		`<response><header><resultCode>00</resultCode></header><body><items><item><a>1</a></item></items><totalCount>1</totalCount></body></response>`,
	}
	for _, b := range ok {
		if v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte(b), Complete: true}); v.Err != nil {
			t.Errorf("%s: %v", b, v.Err)
		}
	}
	empty := []string{
		`{"response":{"header":{"resultCode":"00"},"body":{"items":{"item":[]},"totalCount":0}}}`,
		`{"response":{"header":{"resultCode":"00"},"body":{"items":null}}}`,
		`<response><header><resultCode>00</resultCode></header><body><items/><totalCount>0</totalCount></body></response>`,
	}
	for _, b := range empty {
		if v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte(b), Complete: true}); v.Err == nil || v.Err.Class != connector.NoData {
			t.Errorf("%s: %+v", b, v.Err)
		}
	}
	v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte("no envelope"), Complete: true})
	if v.Err == nil || v.Err.Class != connector.Transient {
		t.Errorf("text body: %+v", v.Err)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`<OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg><returnAuthMsg>LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR</returnAuthMsg><returnReasonCode>22</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`,
		`{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"items":{"item":[{"a":1}]},"numOfRows":10,"pageNo":1,"totalCount":1}}}`,
		`{"response":{"header":{"resultCode":"03","resultMsg":"NODATA_ERROR"}}}`,
		`<response><header><resultCode>`, `{"response":`, ``, `<?xml version="1.0" encoding="EUC-KR"?><a>`,
	} {
		f.Add(200, []byte(s))
		f.Add(403, []byte(s))
	}
	loc := time.FixedZone("KST", 9*3600)
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		now := time.Unix(1.7e9, 0)
		v := Classify(connector.Head{Status: status, Header: http.Header{}, Bytes: body, Complete: true, Now: now, Location: loc})
		if v.Err == nil {
			return
		}
		if v.Err.Class == 0 {
			t.Fatalf("unclassified error %+v", v.Err)
		}
		if v.Err.Class == connector.QuotaExhausted && !v.Err.ResetAt.After(now) {
			t.Fatalf("quota reset %v not after now", v.Err.ResetAt)
		}
	})
}

// TestClassifyMisreadAnswers holds the answers the classifier read wrong
// before issue 22: each failed on the old code (the old verdict beside it).
func TestClassifyMisreadAnswers(t *testing.T) {
	loc := time.FixedZone("KST", 9*3600)
	now := time.Date(2024, 1, 10, 16, 0, 0, 0, time.UTC) // 01:00 KST on the 11th
	midnight := time.Date(2024, 1, 12, 0, 0, 0, 0, loc)
	jsonGateway := func(code, errMsg, auth string) string {
		return `{"OpenAPI_ServiceResponse":{"cmmMsgHeader":{"errMsg":"` + errMsg + `","returnAuthMsg":"` + auth + `","returnReasonCode":"` + code + `"}}}`
	}
	cases := []struct {
		name    string
		status  int
		body    string
		class   connector.Class
		code    string
		msg     string
		confirm int
		reset   bool
	}{
		// old: success (no response wrapper, so no code was read)
		{"flat json 10", 200, `{"responseTime":"2026-07-13T21:00:01.773","resultCode":"10","resultMsg":"INVALID_REQUEST_PARAMETER_ERROR(areaCode)"}`,
			connector.BadRequest, "10", "INVALID_REQUEST_PARAMETER_ERROR(areaCode)", 0, false},
		// old: success
		{"flat json 11", 200, `{"responseTime":"2026-07-13T21:00:05.834","resultCode":"11","resultMsg":"NO_MANDATORY_REQUEST_PARAMETERS_ERROR1(areaCd)"}`,
			connector.BadRequest, "11", "NO_MANDATORY_REQUEST_PARAMETERS_ERROR", 0, false},
		// old: success
		{"json gateway 22 on 200", 200, jsonGateway("22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "서비스 요청제한횟수 초과에러"),
			connector.QuotaExhausted, "22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", 0, true},
		// old: rate_limited (429), retried after 1 s against a spent quota
		{"json gateway 22 on 429", 429, jsonGateway("22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "서비스 요청제한횟수 초과에러"),
			connector.QuotaExhausted, "22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", 0, true},
		// old: rate_limited (403 is auth_failed (403); the portal's code lost)
		{"json gateway 22 on 403", 403, jsonGateway("22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "서비스 요청제한횟수 초과에러"),
			connector.QuotaExhausted, "22", "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", 0, true},
		// old: auth_failed (401), the portal's code and message lost, no confirmation
		{"json gateway 30 on 401", 401, jsonGateway("30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", "등록되지 않은 서비스키"),
			connector.AuthFailed, "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", connector.DefaultConfirm, false},
		// old: auth_failed (403)
		{"json gateway 20 on 403", 403, jsonGateway("20", "SERVICE_ACCESS_DENIED_ERROR", "서비스 접근거부"),
			connector.AuthFailed, "20", "SERVICE_ACCESS_DENIED_ERROR", 0, false},
		// old: bad_request (paging) later, success here
		{"json gateway 12 on 200", 200, jsonGateway("12", "NO_OPENAPI_SERVICE_ERROR", "해당 오픈API서비스가 없거나 폐기됨"),
			connector.BadRequest, "12", "NO_OPENAPI_SERVICE_ERROR", 0, false},
		// old: auth_failed (30) held at once on one ambiguous answer
		{"xml gateway 30", 200, `<OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg><returnAuthMsg>SERVICE_KEY_IS_NOT_REGISTERED_ERROR</returnAuthMsg><returnReasonCode>30</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`,
			connector.AuthFailed, "30", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", connector.DefaultConfirm, false},
		// old: success (an HTML page is '<', read as an XML envelope with nothing in it)
		{"html maintenance page on 200", 200, `<!DOCTYPE html><html lang="ko"><head><title>공공데이터포털</title></head><body><p>시스템 점검 중입니다.</p></body></html>`,
			connector.Transient, "", "공공데이터포털", 0, false},
		// old: success
		{"json without envelope", 200, `{"message":"Unexpected errors"}`, connector.Transient, "", "Unexpected errors", 0, false},
		// old: transient (unknown code "3"); a one-digit spelling of 03
		{"one digit 3", 200, `{"response":{"header":{"resultCode":"3","resultMsg":"NODATA_ERROR"}}}`, connector.NoData, "3", "NODATA_ERROR", 0, false},
		// old: transient (unknown code "030"); three digits as the RTMS services write them
		{"three digits 030", 200, `{"response":{"header":{"resultCode":"030","resultMsg":"SERVICE_KEY_IS_NOT_REGISTERED_ERROR"},"body":{}}}`,
			connector.AuthFailed, "030", "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", connector.DefaultConfirm, false},
		// old: transient (unknown code "022")
		{"three digits 022", 200, `{"response":{"header":{"resultCode":"022","resultMsg":"LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR"},"body":{}}}`,
			connector.QuotaExhausted, "022", "LIMITED_NUMBER", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Classify(connector.Head{Status: tc.status, Header: http.Header{}, Bytes: []byte(tc.body), Complete: true, Format: "json", Now: now, Location: loc})
			if v.Err == nil {
				t.Fatalf("success, want %s (%s)", tc.class, tc.code)
			}
			e := v.Err
			if e.Class != tc.class || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) || e.Confirm != tc.confirm {
				t.Fatalf("got %s code %q confirm %d message %q; want %s code %q confirm %d message containing %q",
					e.Class, e.Code, e.Confirm, e.Message, tc.class, tc.code, tc.confirm, tc.msg)
			}
			if tc.reset && (!e.ResetAt.Equal(midnight) || e.RetryAfter != 0) {
				t.Errorf("ResetAt %v RetryAfter %v, want the next KST midnight %v and no retry", e.ResetAt, e.RetryAfter, midnight)
			}
		})
	}
}

// TestClassifyEmptyItems: every spelling of "no items" is NoData, and so
// paging ends.
func TestClassifyEmptyItems(t *testing.T) {
	for _, b := range []string{
		`{"response":{"header":{"resultCode":"0000","resultMsg":"OK"},"body":{"items":"","numOfRows":10,"pageNo":1,"totalCount":0}}}`,
		`{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"items":{},"numOfRows":10,"pageNo":1,"totalCount":0}}}`,
		`{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"items":{"item":[]},"numOfRows":10,"pageNo":1,"totalCount":0}}}`,
		`{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"items":"","numOfRows":10,"pageNo":3,"totalCount":25}}}`,
		`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><response><header><resultCode>00</resultCode><resultMsg>NORMAL SERVICE.</resultMsg></header><body><items/><numOfRows>10</numOfRows><pageNo>1</pageNo><totalCount>0</totalCount></body></response>`,
		`<response><header><resultCode>00</resultCode></header><body><items></items><totalCount>0</totalCount></body></response>`,
	} {
		v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte(b), Complete: true})
		if v.Err == nil || v.Err.Class != connector.NoData || v.More {
			t.Errorf("%s: %+v more %v", b, v.Err, v.More)
		}
	}
}

// TestClassifyXMLCountsAfterItems: an XML page writes its counts after the
// items; a head that holds them says whether more pages follow (the old
// walk stopped at the first item and never said so).
func TestClassifyXMLCountsAfterItems(t *testing.T) {
	page := func(total string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><response><header><resultCode>0000</resultCode><resultMsg>OK</resultMsg></header>` +
			`<body><items><item><code>1</code><name>서울</name></item></items><numOfRows>10</numOfRows><pageNo>1</pageNo><totalCount>` + total + `</totalCount></body></response>`)
	}
	if v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: page("17"), Complete: true}); v.Err != nil || !v.More {
		t.Errorf("totalCount 17 beyond 10 rows: err %v more %v, want more", v.Err, v.More)
	}
	if v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: page("1"), Complete: true}); v.Err != nil || v.More {
		t.Errorf("totalCount 1: err %v more %v, want the last page", v.Err, v.More)
	}
}
