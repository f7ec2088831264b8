package ecos

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func TestClassifyXMLAndPaging(t *testing.T) {
	h := func(body string) connector.Head {
		return connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte(body), Complete: true, Now: time.Now()}
	}
	v := Classify(h(`<?xml version="1.0" encoding="UTF-8"?><RESULT><CODE>INFO-200</CODE><MESSAGE>해당하는 데이터가 없습니다.</MESSAGE></RESULT>`), 10)
	if v.Err == nil || v.Err.Class != connector.NoData || v.Err.Code != "INFO-200" {
		t.Errorf("XML INFO-200: %+v", v.Err)
	}
	v = Classify(h(`<StatisticSearch><list_total_count>25</list_total_count><row><STAT_CODE>722Y001</STAT_CODE></row></StatisticSearch>`), 10)
	if v.Err != nil || !v.More {
		t.Errorf("XML 25 rows, page ends at 10: %+v", v)
	}
	v = Classify(h(`{"StatisticSearch":{"list_total_count":25,"row":[{"A":1}]}}`), 25)
	if v.Err != nil || v.More {
		t.Errorf("JSON 25 rows, page ends at 25: %+v", v)
	}
	v = Classify(h(`{"RESULT":{"CODE":"ERROR-999","MESSAGE":"?"}}`), 10)
	if v.Err == nil || v.Err.Class != connector.Transient {
		t.Errorf("unknown code: %+v", v.Err)
	}
	v = Classify(connector.Head{Status: 502, Header: http.Header{}, Bytes: []byte("bad gateway"), Complete: true}, 10)
	if v.Err == nil || v.Err.Class != connector.Transient || v.Err.Code != "502" {
		t.Errorf("502: %+v", v.Err)
	}
	v = Classify(h(`<html>점검</html>`), 10)
	if v.Err == nil || v.Err.Class != connector.Transient {
		t.Errorf("an HTML page: %+v", v.Err)
	}
	v = Classify(h(`점검 중`), 10)
	if v.Err == nil || v.Err.Class != connector.Transient {
		t.Errorf("text body: %+v", v.Err)
	}
}

// TestClassifyParameterCodes: every ECOS code that says the request is
// wrong is BadRequest with ECOS's code and message; ERROR-200 (file type)
// and the request-index codes issue 22 names used to fall to Transient and
// be retried for ever.
func TestClassifyParameterCodes(t *testing.T) {
	for _, code := range []string{"ERROR-100", "ERROR-101", "ERROR-200", "ERROR-300", "ERROR-301",
		"ERROR-310", "ERROR-331", "ERROR-332", "ERROR-333", "ERROR-400"} {
		for _, body := range []string{
			`{"RESULT":{"CODE":"` + code + `","MESSAGE":"요청 변수를 참고 하십시오!"}}`,
			`<?xml version="1.0" encoding="UTF-8"?><RESULT><CODE>` + code + `</CODE><MESSAGE>요청 변수를 참고 하십시오!</MESSAGE></RESULT>`,
		} {
			v := Classify(connector.Head{Status: 200, Header: http.Header{}, Bytes: []byte(body), Complete: true}, 10)
			if v.Err == nil || v.Err.Class != connector.BadRequest || v.Err.Code != code || v.Err.Message != "요청 변수를 참고 하십시오!" {
				t.Errorf("%s: %+v, want bad_request with ECOS's code and message", body, v.Err)
			}
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"RESULT":{"CODE":"INFO-200","MESSAGE":"해당하는 데이터가 없습니다."}}`,
		`{"StatisticSearch":{"list_total_count":4,"row":[{"STAT_CODE":"722Y001"}]}}`,
		`<RESULT><CODE>ERROR-602</CODE><MESSAGE>x</MESSAGE></RESULT>`,
		`{"StatisticSearch":{"list_total_count":"x"`, `<`, ``, `{"RESULT":[]}`,
	} {
		f.Add(200, []byte(s), 10)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, end int) {
		v := Classify(connector.Head{Status: status, Header: http.Header{}, Bytes: body, Complete: true}, end)
		if v.Err != nil && v.Err.Class == 0 {
			t.Fatalf("unclassified error %+v", v.Err)
		}
	})
}
