package fred

import (
	"net/http"
	"strconv"
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

// TestClassifyNotRegisteredNeedsConfirming: FRED's "api_key is not
// registered" also comes back, now and then, for a valid key under load,
// so it is AuthFailed only once confirmed (Confirm set); the answers about
// the form of the key sent are not disputed.
func TestClassifyNotRegisteredNeedsConfirming(t *testing.T) {
	for _, tc := range []struct {
		body    string
		confirm int
	}{
		{`{"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not registered.  Read https://fred.stlouisfed.org/docs/api/api_key.html for more information."}`, connector.DefaultConfirm},
		{`<?xml version="1.0" encoding="utf-8" ?><error code="400" message="Bad Request.  The value for variable api_key is not registered."/>`, connector.DefaultConfirm},
		{`<error code="400" message="Bad Request.  Variable api_key has not been set."/>`, 0},
		{`{"error_code":400,"error_message":"Bad Request.  The value for variable api_key is not a 32 character alpha-numeric lower-case string."}`, 0},
	} {
		v := Classify(connector.Head{Status: 400, Header: http.Header{}, Bytes: []byte(tc.body), Complete: true}, 10)
		if v.Err == nil || v.Err.Class != connector.AuthFailed || v.Err.Code != "400" || v.Err.Confirm != tc.confirm {
			t.Errorf("%s: %+v, want auth_failed (400) with Confirm %d", tc.body, v.Err, tc.confirm)
		}
	}
}

// TestClassifyStatusWithoutBody: a status FRED documents without an error
// body keeps the status's class: 423 Locked is Transient (it was the
// BadRequest of a plain 4xx), 500 and 504 Transient, 429 RateLimited.
func TestClassifyStatusWithoutBody(t *testing.T) {
	for status, want := range map[int]connector.Class{
		423: connector.Transient, 500: connector.Transient, 504: connector.Transient,
		429: connector.RateLimited, 404: connector.BadRequest,
	} {
		for _, body := range []string{"", "<html><body>Locked</body></html>"} {
			v := Classify(connector.Head{Status: status, Header: http.Header{}, Bytes: []byte(body), Complete: true}, 10)
			if v.Err == nil || v.Err.Class != want || v.Err.Code != strconv.Itoa(status) {
				t.Errorf("HTTP %d %q: %+v, want %s", status, body, v.Err, want)
			}
		}
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
