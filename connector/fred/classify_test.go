package fred

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/connector"
)

func TestClassifyXML(t *testing.T) {
	v := Classify(connector.Head{Status: 400, Header: http.Header{}, Complete: true,
		Bytes: []byte(`<?xml version="1.0" encoding="utf-8" ?><error code="400" message="Bad Request.  The value for variable api_key is not registered."/>`)}, 10)
	if v.Err == nil || v.Err.Class != connector.AuthFailed {
		t.Errorf("XML api_key error: %+v", v.Err)
	}
	v = Classify(connector.Head{Status: 200, Header: http.Header{}, Complete: true,
		Bytes: []byte(`<?xml version="1.0" encoding="utf-8" ?><observations realtime_start="2024-02-01" count="0" offset="0" limit="100000"></observations>`)}, 10)
	if v.Err == nil || v.Err.Class != connector.NoData {
		t.Errorf("XML count 0: %+v", v.Err)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not registered."}`,
		`{"count":0,"observations":[]}`, `{"count":3,"observations":[{"date":"2024-01-02","value":"."}]}`,
		`<error code="429" message="x"/>`, `<observations count="5">`, `{`, ``,
	} {
		f.Add(200, []byte(s), 10)
		f.Add(400, []byte(s), 10)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, last int) {
		v := Classify(connector.Head{Status: status, Header: http.Header{}, Bytes: body, Complete: true}, last)
		if v.Err != nil && v.Err.Class == 0 {
			t.Fatalf("unclassified error %+v", v.Err)
		}
	})
}
