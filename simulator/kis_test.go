package simulator

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/simulator/synth"
)

type kisEnvelope struct {
	RtCd    string              `json:"rt_cd"`
	MsgCd   string              `json:"msg_cd"`
	Msg1    string              `json:"msg1"`
	Output1 json.RawMessage     `json:"output1"`
	Output2 []map[string]string `json:"output2"`
}

var (
	kisIndexOutput1 = []string{"bstp_nmix_prpr", "bstp_nmix_prdy_vrss", "prdy_vrss_sign", "bstp_nmix_prdy_ctrt", "prdy_nmix",
		"acml_vol", "acml_tr_pbmn", "hts_kor_isnm", "bstp_cls_code", "prdy_vol", "bstp_nmix_oprc", "bstp_nmix_hgpr", "bstp_nmix_lwpr"}
	kisIndexOutput2 = []string{"stck_bsop_date", "bstp_nmix_prpr", "bstp_nmix_oprc", "bstp_nmix_hgpr", "bstp_nmix_lwpr", "acml_vol", "acml_tr_pbmn", "mod_yn"}
)

func TestKISTokenAndIndexChart(t *testing.T) {
	h := newHarness(t, nil)
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.creds["KIS_APP_KEY"], "appsecret": h.creds["KIS_APP_SECRET"]})
	r := h.post("/oauth2/tokenP", string(body))
	if r.status != http.StatusOK {
		t.Fatalf("tokenP: %d %s", r.status, r.body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		Expired     string `json:"access_token_token_expired"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	mustJSON(t, r.body, &tok)
	wantExpiry := testNow.Add(24 * time.Hour).Format("2006-01-02 15:04:05") // testNow is KST
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 86400 || tok.Expired != wantExpiry || len(tok.AccessToken) < 100 {
		t.Fatalf("token answer %+v; want Bearer, 86400, expiry %s", tok, wantExpiry)
	}
	if got := keysOf(t, r.body); !reflect.DeepEqual(got, []string{"access_token", "access_token_token_expired", "token_type", "expires_in"}) {
		t.Errorf("token keys %v", got)
	}

	r = h.get(kisIndexQuery("0001", "20250101", "20250331"), h.kisHeaders(tok.AccessToken, "FHKUP03500100"))
	if r.status != http.StatusOK {
		t.Fatalf("chart: %d %s", r.status, r.body)
	}
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	if env.RtCd != "0" || env.MsgCd != "MCA00000" || env.Msg1 != "정상처리 되었습니다." {
		t.Errorf("envelope %s %s %s", env.RtCd, env.MsgCd, env.Msg1)
	}
	if got := keysOf(t, env.Output1); !reflect.DeepEqual(got, kisIndexOutput1) {
		t.Errorf("output1 keys\n got %v\nwant %v", got, kisIndexOutput1)
	}
	var out1 map[string]string
	mustJSON(t, env.Output1, &out1)
	if out1["hts_kor_isnm"] != "코스피" || out1["bstp_cls_code"] != "0001" {
		t.Errorf("output1 name/code %q %q", out1["hts_kor_isnm"], out1["bstp_cls_code"])
	}
	// 2025-01-02 … 2025-03-11 (today, after 09:00 KST): KRX days only.
	var want []string
	for d := synth.Date(2025, 3, 11); d >= synth.Date(2025, 1, 1); d-- {
		if synth.KRX.Open(d) {
			want = append(want, d.YYYYMMDD())
		}
	}
	var got []string
	for _, row := range env.Output2 {
		got = append(got, row["stck_bsop_date"])
	}
	var rawRows struct {
		Output2 []json.RawMessage `json:"output2"`
	}
	mustJSON(t, r.body, &rawRows)
	for _, raw := range rawRows.Output2 {
		if keys := keysOf(t, raw); !reflect.DeepEqual(keys, kisIndexOutput2) {
			t.Fatalf("output2 row keys\n got %v\nwant %v", keys, kisIndexOutput2)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("output2 dates\n got %v\nwant %v", got, want)
	}
	if r.header.Get("tr_cont") != "D" || r.header.Get("tr_id") != "FHKUP03500100" {
		t.Errorf("headers tr_cont=%q tr_id=%q", r.header.Get("tr_cont"), r.header.Get("tr_id"))
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}
}

func TestKISPagingWithTrCont(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateScale = 1000 })
	tok := h.kisToken()
	q := kisIndexQuery("1001", "20230101", "20250311")
	var all []string
	var conts []string
	hdr := h.kisHeaders(tok, "FHKUP03500100")
	for page := 0; page < 20; page++ {
		h.clock.Advance(time.Second)
		r := h.get(q, hdr)
		var env kisEnvelope
		mustJSON(t, r.body, &env)
		if len(env.Output2) > kisPageRows {
			t.Fatalf("page %d has %d rows", page, len(env.Output2))
		}
		for _, row := range env.Output2 {
			all = append(all, row["stck_bsop_date"])
		}
		cont := r.header.Get("tr_cont")
		conts = append(conts, cont)
		if cont == "D" || cont == "E" {
			break
		}
		hdr["tr_cont"] = "N"
	}
	var want []string
	for d := synth.Date(2025, 3, 11); d >= synth.Date(2023, 1, 1); d-- {
		if synth.KRX.Open(d) {
			want = append(want, d.YYYYMMDD())
		}
	}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("paged dates: got %d rows (%v…), want %d", len(all), all[:min(3, len(all))], len(want))
	}
	if conts[0] != "F" || conts[len(conts)-1] != "E" {
		t.Errorf("tr_cont sequence %v", conts)
	}
	for _, c := range conts[1 : len(conts)-1] {
		if c != "M" {
			t.Errorf("tr_cont sequence %v", conts)
		}
	}

	// Stateless paging by narrowing FID_INPUT_DATE_2 gives the same rows.
	var stateless []string
	to := "20250311"
	for i := 0; i < 20; i++ {
		h.clock.Advance(time.Second)
		r := h.get(kisIndexQuery("1001", "20230101", to), h.kisHeaders(tok, "FHKUP03500100"))
		var env kisEnvelope
		mustJSON(t, r.body, &env)
		if len(env.Output2) == 0 {
			break
		}
		for _, row := range env.Output2 {
			stateless = append(stateless, row["stck_bsop_date"])
		}
		oldest, _ := synth.ParseYYYYMMDD(env.Output2[len(env.Output2)-1]["stck_bsop_date"])
		to = (oldest - 1).YYYYMMDD()
	}
	if !reflect.DeepEqual(stateless, want) {
		t.Errorf("stateless paging gave %d rows, want %d", len(stateless), len(want))
	}
}

func TestKISOverseasChartAndPublication(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.kisToken()
	r := h.get("/uapi/overseas-price/v1/quotations/inquire-daily-chartprice?FID_COND_MRKT_DIV_CODE=X&FID_INPUT_ISCD=FX@KRW&FID_INPUT_DATE_1=20250301&FID_INPUT_DATE_2=20250331&FID_PERIOD_DIV_CODE=D",
		h.kisHeaders(tok, "FHKST03030100"))
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	// Overseas data for a day appears the next day at 07:00 KST: on
	// Tuesday 11 March the newest row is Monday 10 March.
	if len(env.Output2) == 0 || env.Output2[0]["stck_bsop_date"] != "20250310" {
		t.Fatalf("newest overseas row %v", env.Output2[:min(1, len(env.Output2))])
	}
	for _, k := range []string{"stck_bsop_date", "ovrs_nmix_prpr", "ovrs_nmix_oprc", "ovrs_nmix_hgpr", "ovrs_nmix_lwpr", "acml_vol", "mod_yn"} {
		if _, ok := env.Output2[0][k]; !ok {
			t.Errorf("output2 lacks %s", k)
		}
	}
	var out1 map[string]string
	mustJSON(t, env.Output1, &out1)
	if out1["hts_kor_isnm"] != "원/달러" || out1["stck_shrn_iscd"] != "FX@KRW" {
		t.Errorf("output1 %v", out1)
	}
}

func TestKISTokenOncePerMinute(t *testing.T) {
	h := newHarness(t, nil)
	first := h.kisToken()
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.creds["KIS_APP_KEY"], "appsecret": h.creds["KIS_APP_SECRET"]})
	h.clock.Advance(59 * time.Second)
	r := h.post("/oauth2/tokenP", string(body))
	var e struct {
		Code string `json:"error_code"`
		Desc string `json:"error_description"`
	}
	mustJSON(t, r.body, &e)
	if r.status != http.StatusForbidden || e.Code != "EGW00133" || !strings.Contains(e.Desc, "1분당 1회") {
		t.Fatalf("second token within a minute: %d %s", r.status, r.body)
	}
	h.clock.Advance(time.Second) // 60 s after the first: a new window
	if again := h.kisToken(); again != first {
		t.Error("a token request within 6 h did not return the same token")
	}
	h.clock.Advance(7 * time.Hour)
	if fresh := h.kisToken(); fresh == first {
		t.Error("a token request after 6 h returned the old token")
	}
	st := h.stats().Scopes["kis/key"]
	if st.TokenRequests != 4 || st.TokensIssued != 2 || st.TokensReused != 1 || st.TokenRejected != 1 || st.Violations != 1 || st.MaxTokensInWindow != 2 {
		t.Errorf("token stats %+v", st)
	}
}

func TestKISAuthErrors(t *testing.T) {
	h := newHarness(t, nil)
	oauth := func(appKey, secret string) (int, string) {
		body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": appKey, "appsecret": secret})
		r := h.post("/oauth2/tokenP", string(body))
		var e struct {
			Code string `json:"error_code"`
		}
		mustJSON(t, r.body, &e)
		return r.status, e.Code
	}
	if s, c := oauth("PSnotakey", h.creds["KIS_APP_SECRET"]); s != 403 || c != "EGW00103" {
		t.Errorf("bad app key: %d %s", s, c)
	}
	if s, c := oauth(h.creds["KIS_APP_KEY"], "wrong"); s != 403 || c != "EGW00105" {
		t.Errorf("bad app secret: %d %s", s, c)
	}
	data := func(hdr map[string]string) (int, kisEnvelope) {
		r := h.get(kisIndexQuery("0001", "20250101", "20250131"), hdr)
		var env kisEnvelope
		mustJSON(t, r.body, &env)
		return r.status, env
	}
	if s, env := data(h.kisHeaders("not-a-token", "FHKUP03500100")); s != 500 || env.RtCd != "1" || env.MsgCd != "EGW00121" {
		t.Errorf("unknown token: %d %+v", s, env)
	}
	tok := h.kisToken()
	if s, env := data(h.kisHeaders(tok, "FHKUP03500100")); s != 200 || env.RtCd != "0" {
		t.Fatalf("valid token: %d %+v", s, env)
	}
	hdr := h.kisHeaders(tok, "FHKUP03500100")
	hdr["appsecret"] = "wrong"
	if s, env := data(hdr); s != 500 || env.MsgCd != "EGW00105" {
		t.Errorf("bad secret header: %d %+v", s, env)
	}
	if r := h.post("/_sim/kis/expire-tokens", ""); r.status != 200 {
		t.Fatalf("expire-tokens: %d %s", r.status, r.body)
	}
	if s, env := data(h.kisHeaders(tok, "FHKUP03500100")); s != 500 || env.MsgCd != "EGW00123" || env.Msg1 != "기간이 만료된 token 입니다." {
		t.Errorf("expired token: %d %+v", s, env)
	}
	h.clock.Advance(time.Minute)
	tok2 := h.kisToken()
	if tok2 == tok {
		t.Fatal("an expired token was handed out again")
	}
	// Revoke, then the token is unknown.
	body, _ := json.Marshal(map[string]string{"appkey": h.creds["KIS_APP_KEY"], "appsecret": h.creds["KIS_APP_SECRET"], "token": tok2})
	if r := h.post("/oauth2/revokeP", string(body)); r.status != 200 || !strings.Contains(string(r.body), `"code":200`) {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if s, env := data(h.kisHeaders(tok2, "FHKUP03500100")); s != 500 || env.MsgCd != "EGW00121" {
		t.Errorf("revoked token: %d %+v", s, env)
	}
	if got := h.stats().Providers["kis"].AuthFailures; got != 6 {
		t.Errorf("auth failures = %d, want 6", got)
	}
}

func TestKISUnknownTrIDAndBadInput(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateScale = 1000 })
	tok := h.kisToken()
	r := h.get(kisIndexQuery("0001", "20250101", "20250131"), h.kisHeaders(tok, "FHKUP99999999"))
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	if r.status != 200 || env.RtCd != "1" || env.MsgCd != "OPSQ0002" {
		t.Errorf("unknown tr_id: %d %s", r.status, r.body)
	}
	h.clock.Advance(time.Second)
	r = h.get(kisIndexQuery("0001", "2025-01-01", "20250131"), h.kisHeaders(tok, "FHKUP03500100"))
	mustJSON(t, r.body, &env)
	if env.RtCd != "1" || !strings.Contains(env.Msg1, "FID_INPUT_DATE_1") {
		t.Errorf("bad date: %s", r.body)
	}
	if r := h.get("/uapi/nowhere", h.kisHeaders(tok, "X")); r.status != 404 {
		t.Errorf("unknown path: %d", r.status)
	}
}

func TestKISRateLimit(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.kisToken()
	hdr := h.kisHeaders(tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	for i := 0; i < 5; i++ {
		if r := h.get(q, hdr); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	r := h.get(q, hdr)
	var env kisEnvelope
	mustJSON(t, r.body, &env)
	if r.status != 500 || env.RtCd != "1" || env.MsgCd != "EGW00201" || env.Msg1 != "초당 거래건수를 초과하였습니다." {
		t.Fatalf("6th call in a second: %d %s", r.status, r.body)
	}
	h.clock.Advance(999 * time.Millisecond)
	if r := h.get(q, hdr); r.status != 500 {
		t.Fatalf("call 999ms later: %d", r.status)
	}
	h.clock.Advance(time.Millisecond)
	if r := h.get(q, hdr); r.status != 200 {
		t.Fatalf("call 1s later: %d %s", r.status, r.body)
	}
	st := h.stats().Scopes["kis/key"]
	if st.Calls != 8 || st.Accepted != 6 || st.Rejected != 2 || st.Violations != 2 {
		t.Errorf("stats calls=%d accepted=%d rejected=%d violations=%d", st.Calls, st.Accepted, st.Rejected, st.Violations)
	}
	if st.MaxInWindow["requests_per_second"] != 7 || st.MaxAcceptedInWindow["requests_per_second"] != 5 {
		t.Errorf("max in window %v, accepted %v", st.MaxInWindow, st.MaxAcceptedInWindow)
	}
	if st.MinGapMS == nil || *st.MinGapMS != 0 || st.DailyUsed != 6 {
		t.Errorf("min gap %v daily %d", st.MinGapMS, st.DailyUsed)
	}
}
