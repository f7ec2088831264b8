package kis_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector/connectortest"
)

// fakeKIS is a KIS server written from the wire facts: tokenP issuing
// tokens valid 24 h (EGW00133 when asked twice within a minute of its own
// clock) and the daily index chart endpoint checking the KIS headers.
type fakeKIS struct {
	t  testing.TB
	mu sync.Mutex

	now        time.Time // the server's clock; tests move it
	tokenCalls int
	lastIssue  time.Time
	issued     []string

	// tokenAnswer, when set, overrides the token answer.
	tokenAnswer func() (int, string)
	// reject maps a token to the msg_cd and status its data calls get.
	reject map[string]rejection
	// dataAnswer, when set, overrides the data answer for valid tokens.
	dataAnswer func(w http.ResponseWriter, r *http.Request)

	dataCalls   int
	usedTokens  []string
	lastHeader  http.Header
	lastQuery   url.Values
	lastRawPath string
}

type rejection struct {
	status int
	code   string
}

func newFakeKIS(t testing.TB, now time.Time) (*fakeKIS, *httptest.Server) {
	f := &fakeKIS{t: t, now: now, reject: map[string]rejection{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeKIS) setNow(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

func (f *fakeKIS) counts() (tokens, data int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls, f.dataCalls
}

func (f *fakeKIS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch r.URL.Path {
	case "/oauth2/tokenP":
		f.serveToken(w, r)
	case "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice":
		f.serveData(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"OPSQ0002","msg1":"없는 서비스 코드 입니다"}`)
	}
}

func (f *fakeKIS) serveToken(w http.ResponseWriter, r *http.Request) {
	f.tokenCalls++
	var req map[string]string
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil ||
		req["grant_type"] != "client_credentials" || req["appkey"] != connectortest.Secrets["KIS_APP_KEY"] ||
		req["appsecret"] != connectortest.Secrets["KIS_APP_SECRET"] {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error_code":"EGW00103","error_description":"유효하지 않은 AppKey입니다."}`)
		return
	}
	if f.tokenAnswer != nil {
		status, body := f.tokenAnswer()
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return
	}
	if !f.lastIssue.IsZero() && f.now.Sub(f.lastIssue) < time.Minute {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error_code":"EGW00133","error_description":"접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)"}`)
		return
	}
	f.lastIssue = f.now
	tok := fmt.Sprintf("eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.fake-token-%d-%d", len(f.issued)+1, f.now.UnixNano())
	f.issued = append(f.issued, tok)
	kst := time.FixedZone("KST", 9*3600)
	fmt.Fprintf(w, `{"access_token":%q,"access_token_token_expired":%q,"token_type":"Bearer","expires_in":86400}`,
		tok, f.now.Add(24*time.Hour).In(kst).Format(time.DateTime))
}

func (f *fakeKIS) serveData(w http.ResponseWriter, r *http.Request) {
	f.dataCalls++
	f.lastHeader, f.lastQuery, f.lastRawPath = r.Header.Clone(), r.URL.Query(), r.URL.RawQuery
	auth := r.Header.Get("authorization")
	tok := auth[min(len(auth), len("Bearer ")):]
	f.usedTokens = append(f.usedTokens, tok)
	known := false
	for _, t := range f.issued {
		known = known || t == tok
	}
	if rej, ok := f.reject[tok]; ok {
		w.WriteHeader(rej.status)
		fmt.Fprintf(w, `{"rt_cd":"1","msg_cd":%q,"msg1":"기간이 만료된 token 입니다."}`, rej.code)
		return
	}
	if !known || r.Header.Get("appkey") != connectortest.Secrets["KIS_APP_KEY"] ||
		r.Header.Get("appsecret") != connectortest.Secrets["KIS_APP_SECRET"] {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"EGW00121","msg1":"유효하지 않은 token 입니다."}`)
		return
	}
	if f.dataAnswer != nil {
		f.dataAnswer(w, r)
		return
	}
	fmt.Fprint(w, sampleAnswer)
}

const sampleAnswer = `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"정상처리 되었습니다.",` +
	`"output1":{"bstp_nmix_prpr":"2399.49","bstp_nmix_prdy_vrss":"0.00","prdy_vrss_sign":"3","bstp_nmix_prdy_ctrt":"0.00","prdy_nmix":"2399.49","acml_vol":"0","acml_tr_pbmn":"0","hts_kor_isnm":"종합","bstp_cls_code":"0001","prdy_vol":"0","bstp_nmix_oprc":"0.00","bstp_nmix_hgpr":"0.00","bstp_nmix_lwpr":"0.00"},` +
	`"output2":[{"stck_bsop_date":"20250131","bstp_nmix_prpr":"2517.37","bstp_nmix_oprc":"2525.10","bstp_nmix_hgpr":"2532.33","bstp_nmix_lwpr":"2508.92","acml_vol":"397000","acml_tr_pbmn":"9100000","mod_yn":"N"}]}`
