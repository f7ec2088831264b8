package kis

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
)

func head(status int, body string, h http.Header) connector.Head {
	if h == nil {
		h = http.Header{}
	}
	return connector.Head{Status: status, Header: h, Bytes: []byte(body), Complete: len(body) < connector.HeadSize,
		Format: "json", Now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Location: time.UTC}
}

func TestClassify(t *testing.T) {
	big := `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"ok","output1":{},"output2":[` + strings.Repeat(`{"stck_bsop_date":"20250101"},`, 300) + `{}]}`
	cases := []struct {
		name   string
		status int
		body   string
		h      http.Header
		class  connector.Class // 0: success
		code   string
		more   bool
	}{
		{"success", 200, `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"정상처리 되었습니다.","output1":{"a":"1"},"output2":[{"b":"2"}]}`, nil, 0, "", false},
		{"success, big body cut by the head", 200, big[:connector.HeadSize], nil, 0, "", false},
		{"more pages", 200, `{"rt_cd":"0","output":[{"a":"1"}]}`, http.Header{"Tr_cont": {"F"}}, 0, "", true},
		{"rate limited 500", 500, `{"rt_cd":"1","msg_cd":"EGW00201","msg1":"초당 거래건수를 초과하였습니다."}`, nil, connector.RateLimited, "EGW00201", false},
		{"rate limited 200", 200, `{"rt_cd":"1","msg_cd":"EGW00201","msg1":"초당 거래건수를 초과하였습니다."}`, nil, connector.RateLimited, "EGW00201", false},
		{"expired token", 500, `{"rt_cd":"1","msg_cd":"EGW00123","msg1":"기간이 만료된 token 입니다."}`, nil, connector.AuthFailed, "EGW00123", false},
		{"invalid token 401", 401, `{"rt_cd":"1","msg_cd":"EGW00121","msg1":"유효하지 않은 token 입니다."}`, nil, connector.AuthFailed, "EGW00121", false},
		{"error_code shape", 403, `{"error_code":"EGW00105","error_description":"유효하지 않은 AppSecret입니다."}`, nil, connector.AuthFailed, "EGW00105", false},
		// rt_cd 7 saying nothing was found was BadRequest; it is NoData.
		{"nothing found, rt_cd 7", 200, `{"rt_cd":"7","msg_cd":"APBK0013","msg1":"조회할 자료가 없습니다"}`, nil, connector.NoData, "APBK0013", false},
		{"nothing found, rt_cd 1", 200, `{"rt_cd":"1","msg_cd":"KIOK0007","msg1":"조회할 자료가 없습니다."}`, nil, connector.NoData, "KIOK0007", false},
		{"refusal, rt_cd 7", 200, `{"rt_cd":"7","msg_cd":"APBK1359","msg1":"정정취소수량이 주문수량보다 많습니다"}`, nil, connector.BadRequest, "APBK1359", false},
		{"input error, rt_cd 2", 200, `{"rt_cd":"2","msg_cd":"OPSQ2001","msg1":"ERROR : INPUT INVALID_CHECK_INQR_DVSN"}`, nil, connector.BadRequest, "OPSQ2001", false},
		{"empty outputs", 200, `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"","output1":{},"output2":[]}`, nil, connector.NoData, "MCA00000", false},
		{"one empty one full", 200, `{"rt_cd":"0","output1":[],"output2":[{"a":"1"}]}`, nil, 0, "", false},
		{"html", 200, `<html>점검중</html>`, nil, connector.Transient, "", false},
		{"plain 503", 503, `Service Unavailable`, nil, connector.Transient, "503", false},
		{"empty body 500", 500, ``, nil, connector.Transient, "500", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := classify(head(c.status, c.body, c.h))
			if c.class == 0 {
				if v.Err != nil || v.More != c.more {
					t.Fatalf("verdict %+v (err %v), want success more=%v", v, v.Err, c.more)
				}
				return
			}
			if v.Err == nil || v.Err.Class != c.class || v.Err.Code != c.code {
				t.Fatalf("verdict err %+v, want %v %q", v.Err, c.class, c.code)
			}
		})
	}
}

func TestClassifyToken(t *testing.T) {
	if v := classifyToken(head(200, `{"access_token":"x","token_type":"Bearer","expires_in":86400}`, nil)); v.Err != nil {
		t.Errorf("good token answer: %v", v.Err)
	}
	v := classifyToken(head(403, `{"error_code":"EGW00133","error_description":"접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)"}`, nil))
	if v.Err == nil || v.Err.Class != connector.RateLimited || v.Err.RetryAfter != time.Minute {
		t.Errorf("EGW00133: %+v", v.Err)
	}
	v = classifyToken(head(500, `boom`, nil))
	if v.Err == nil || v.Err.Class != connector.Transient || strings.Contains(v.Err.Message, "boom") {
		t.Errorf("500: %+v", v.Err)
	}
	v = classifyToken(head(401, `{}`, nil))
	if v.Err == nil || v.Err.Class != connector.AuthFailed || v.Err.Code != "401" || v.Err.Confirm != connector.DefaultConfirm {
		t.Errorf("401 naming no code: %+v, want AuthFailed to be confirmed", v.Err)
	}
	v = classifyToken(head(403, `{"error_code":"EGW00103","error_description":"유효하지 않은 AppKey입니다."}`, nil))
	if v.Err == nil || v.Err.Class != connector.AuthFailed || v.Err.Confirm > 1 {
		t.Errorf("EGW00103: %+v, want AuthFailed at once", v.Err)
	}
	// A token handed back already expired used to be a success (and was
	// cached and sent); it is an AuthFailed to be confirmed, waiting for
	// the next token, and never quotes the token.
	for _, body := range []string{
		`{"access_token":"tok-secret","access_token_token_expired":"2024-12-31 23:00:00","token_type":"Bearer","expires_in":86400}`,
		`{"access_token":"tok-secret","token_type":"Bearer","expires_in":0}`,
		`{"access_token":"tok-secret","access_token_token_expired":"2099-01-01 00:00:00","expires_in":-60}`,
	} {
		v := classifyToken(head(200, body, nil))
		if v.Err == nil || v.Err.Class != connector.AuthFailed || v.Err.Confirm != connector.DefaultConfirm ||
			v.Err.RetryAfter != MinIssueInterval || strings.Contains(v.Err.Message, "tok-secret") {
			t.Errorf("expired token answer %s: %+v", body, v.Err)
		}
	}
}

func TestExpiry(t *testing.T) {
	now := time.Date(2024, 3, 11, 17, 18, 47, 0, time.UTC)
	got := expiry(tokenAnswer{Expired: "2024-03-12 02:18:47"}, now)
	if want := time.Date(2024, 3, 11, 17, 18, 47, 0, time.UTC); !got.Equal(want) {
		t.Errorf("KST expiry = %v, want %v", got, want)
	}
	if got := expiry(tokenAnswer{ExpiresIn: "3600"}, now); !got.Equal(now.Add(time.Hour)) {
		t.Errorf("expires_in expiry = %v", got)
	}
	if got := expiry(tokenAnswer{}, now); !got.Equal(now.Add(24 * time.Hour)) {
		t.Errorf("default expiry = %v", got)
	}
	// expires_in 0 or negative used to mean "unknown: a day"; it means
	// expired now.
	for _, in := range []json.Number{"0", "-5"} {
		if got := expiry(tokenAnswer{ExpiresIn: in}, now); got.After(now) {
			t.Errorf("expires_in %s: expiry %v, want not after now", in, got)
		}
	}
	// Both given: the earlier wins.
	if got := expiry(tokenAnswer{Expired: "2024-03-12 08:00:00", ExpiresIn: "600"}, now); !got.Equal(now.Add(10 * time.Minute)) {
		t.Errorf("both fields: expiry %v, want %v", got, now.Add(10*time.Minute))
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"rt_cd":"0","msg_cd":"MCA00000","msg1":"ok","output1":{},"output2":[]}`,
		`{"rt_cd":"1","msg_cd":"EGW00201","msg1":"초당 거래건수를 초과하였습니다."}`,
		`{"error_code":"EGW00133","error_description":"x"}`,
		`{"rt_cd":`, `<html>`, ``, `[]`, `{"output2":[[[[`,
	} {
		f.Add(200, []byte(s))
		f.Add(500, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		h := connector.Head{Status: status, Header: http.Header{}, Bytes: body, Complete: true}
		if v := classify(h); v.Err != nil && v.Err.Class == 0 {
			t.Fatalf("unclassified error %+v", v.Err)
		}
		if v := classifyToken(h); v.Err != nil && v.Err.Class == 0 {
			t.Fatalf("unclassified token error %+v", v.Err)
		}
		if status == 200 && len(body) > 0 {
			if v := classify(h); v.Err == nil && connector.Sniff(body) != "json" {
				t.Fatalf("a non-JSON 200 body passed: %q", body)
			}
		}
	})
}

// BenchmarkClassify measures the KIS classifier on a full head of rows.
func BenchmarkClassify(b *testing.B) {
	body := `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"정상처리 되었습니다.","output1":{"bstp_nmix_prpr":"2399.49"},"output2":[`
	for len(body) < connector.HeadSize {
		body += `{"stck_bsop_date":"20250131","bstp_nmix_prpr":"2517.37","mod_yn":"N"},`
	}
	h := head(200, body[:connector.HeadSize], nil)
	h.Complete = false
	b.ReportAllocs()
	for b.Loop() {
		if v := classify(h); v.Err != nil {
			b.Fatal(v.Err)
		}
	}
}
