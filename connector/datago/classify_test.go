package datago

import (
	"net/http"
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
