package kis

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
	"github.com/sluicehq/sluice/simulator/synth"
)

// kisToken issues a KIS token with the test credentials.
func kisToken(h *simtest.Harness) string {
	h.T.Helper()
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"]})
	r := h.Post("/oauth2/tokenP", string(body))
	if r.Status != http.StatusOK {
		h.T.Fatalf("tokenP: %d %s", r.Status, r.Body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	simtest.MustJSON(h.T, r.Body, &tok)
	return tok.AccessToken
}

func kisHeaders(h *simtest.Harness, token, trID string) map[string]string {
	return map[string]string{
		"content-type":  "application/json; charset=utf-8",
		"authorization": "Bearer " + token,
		"appkey":        h.Creds["KIS_APP_KEY"],
		"appsecret":     h.Creds["KIS_APP_SECRET"],
		"tr_id":         trID,
		"custtype":      "P",
	}
}

const kisIndexPath = "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice"

func kisIndexQuery(iscd, from, to string) string {
	return kisIndexPath + "?FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=" + iscd + "&FID_INPUT_DATE_1=" + from + "&FID_INPUT_DATE_2=" + to + "&FID_PERIOD_DIV_CODE=D"
}

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
	h := simtest.New(t, nil)
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"]})
	r := h.Post("/oauth2/tokenP", string(body))
	if r.Status != http.StatusOK {
		t.Fatalf("tokenP: %d %s", r.Status, r.Body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		Expired     string `json:"access_token_token_expired"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	simtest.MustJSON(t, r.Body, &tok)
	wantExpiry := simtest.Now.Add(24 * time.Hour).Format("2006-01-02 15:04:05") // simtest.Now is KST
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 86400 || tok.Expired != wantExpiry || len(tok.AccessToken) < 100 {
		t.Fatalf("token answer %+v; want Bearer, 86400, expiry %s", tok, wantExpiry)
	}
	if got := simtest.KeysOf(t, r.Body); !reflect.DeepEqual(got, []string{"access_token", "access_token_token_expired", "token_type", "expires_in"}) {
		t.Errorf("token keys %v", got)
	}

	r = h.Get(kisIndexQuery("0001", "20250101", "20250331"), kisHeaders(h, tok.AccessToken, "FHKUP03500100"))
	if r.Status != http.StatusOK {
		t.Fatalf("chart: %d %s", r.Status, r.Body)
	}
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
	if env.RtCd != "0" || env.MsgCd != "MCA00000" || env.Msg1 != "정상처리 되었습니다." {
		t.Errorf("envelope %s %s %s", env.RtCd, env.MsgCd, env.Msg1)
	}
	if got := simtest.KeysOf(t, env.Output1); !reflect.DeepEqual(got, kisIndexOutput1) {
		t.Errorf("output1 keys\n got %v\nwant %v", got, kisIndexOutput1)
	}
	var out1 map[string]string
	simtest.MustJSON(t, env.Output1, &out1)
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
	simtest.MustJSON(t, r.Body, &rawRows)
	for _, raw := range rawRows.Output2 {
		if keys := simtest.KeysOf(t, raw); !reflect.DeepEqual(keys, kisIndexOutput2) {
			t.Fatalf("output2 row keys\n got %v\nwant %v", keys, kisIndexOutput2)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("output2 dates\n got %v\nwant %v", got, want)
	}
	if r.Header.Get("tr_cont") != "D" || r.Header.Get("tr_id") != "FHKUP03500100" {
		t.Errorf("headers tr_cont=%q tr_id=%q", r.Header.Get("tr_cont"), r.Header.Get("tr_id"))
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
}

func TestKISPagingWithTrCont(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1000 })
	tok := kisToken(h)
	q := kisIndexQuery("1001", "20230101", "20250311")
	var all []string
	var conts []string
	hdr := kisHeaders(h, tok, "FHKUP03500100")
	for page := 0; page < 20; page++ {
		h.Clock.Advance(time.Second)
		r := h.Get(q, hdr)
		var env kisEnvelope
		simtest.MustJSON(t, r.Body, &env)
		if len(env.Output2) > pageRows {
			t.Fatalf("page %d has %d rows", page, len(env.Output2))
		}
		for _, row := range env.Output2 {
			all = append(all, row["stck_bsop_date"])
		}
		cont := r.Header.Get("tr_cont")
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
		h.Clock.Advance(time.Second)
		r := h.Get(kisIndexQuery("1001", "20230101", to), kisHeaders(h, tok, "FHKUP03500100"))
		var env kisEnvelope
		simtest.MustJSON(t, r.Body, &env)
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
	h := simtest.New(t, nil)
	tok := kisToken(h)
	r := h.Get("/uapi/overseas-price/v1/quotations/inquire-daily-chartprice?FID_COND_MRKT_DIV_CODE=X&FID_INPUT_ISCD=FX@KRW&FID_INPUT_DATE_1=20250301&FID_INPUT_DATE_2=20250331&FID_PERIOD_DIV_CODE=D",
		kisHeaders(h, tok, "FHKST03030100"))
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
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
	simtest.MustJSON(t, env.Output1, &out1)
	if out1["hts_kor_isnm"] != "원/달러" || out1["stck_shrn_iscd"] != "FX@KRW" {
		t.Errorf("output1 %v", out1)
	}
}

func TestKISTokenOncePerMinute(t *testing.T) {
	h := simtest.New(t, nil)
	first := kisToken(h)
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"]})
	h.Clock.Advance(59 * time.Second)
	r := h.Post("/oauth2/tokenP", string(body))
	var e struct {
		Code string `json:"error_code"`
		Desc string `json:"error_description"`
	}
	simtest.MustJSON(t, r.Body, &e)
	if r.Status != http.StatusForbidden || e.Code != "EGW00133" || !strings.Contains(e.Desc, "1분당 1회") {
		t.Fatalf("second token within a minute: %d %s", r.Status, r.Body)
	}
	h.Clock.Advance(time.Second) // 60 s after the first: a new window
	if again := kisToken(h); again != first {
		t.Error("a token request within 6 h did not return the same token")
	}
	h.Clock.Advance(7 * time.Hour)
	if fresh := kisToken(h); fresh == first {
		t.Error("a token request after 6 h returned the old token")
	}
	st := h.Stats().Scopes["kis/key"]
	if st.TokenRequests != 4 || st.TokensIssued != 2 || st.TokensReused != 1 || st.TokenRejected != 1 || st.Violations != 1 || st.MaxTokensInWindow != 2 {
		t.Errorf("token stats %+v", st)
	}
}

func TestKISAuthErrors(t *testing.T) {
	h := simtest.New(t, nil)
	oauth := func(appKey, secret string) (int, string) {
		body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": appKey, "appsecret": secret})
		r := h.Post("/oauth2/tokenP", string(body))
		var e struct {
			Code string `json:"error_code"`
		}
		simtest.MustJSON(t, r.Body, &e)
		return r.Status, e.Code
	}
	if s, c := oauth("PSnotakey", h.Creds["KIS_APP_SECRET"]); s != 403 || c != "EGW00103" {
		t.Errorf("bad app key: %d %s", s, c)
	}
	if s, c := oauth(h.Creds["KIS_APP_KEY"], "wrong"); s != 403 || c != "EGW00105" {
		t.Errorf("bad app secret: %d %s", s, c)
	}
	data := func(hdr map[string]string) (int, kisEnvelope) {
		r := h.Get(kisIndexQuery("0001", "20250101", "20250131"), hdr)
		var env kisEnvelope
		simtest.MustJSON(t, r.Body, &env)
		return r.Status, env
	}
	if s, env := data(kisHeaders(h, "not-a-token", "FHKUP03500100")); s != 500 || env.RtCd != "1" || env.MsgCd != "EGW00121" {
		t.Errorf("unknown token: %d %+v", s, env)
	}
	tok := kisToken(h)
	if s, env := data(kisHeaders(h, tok, "FHKUP03500100")); s != 200 || env.RtCd != "0" {
		t.Fatalf("valid token: %d %+v", s, env)
	}
	hdr := kisHeaders(h, tok, "FHKUP03500100")
	hdr["appsecret"] = "wrong"
	if s, env := data(hdr); s != 500 || env.MsgCd != "EGW00105" {
		t.Errorf("bad secret header: %d %+v", s, env)
	}
	if r := h.Post("/_sim/kis/expire-tokens", ""); r.Status != 200 {
		t.Fatalf("expire-tokens: %d %s", r.Status, r.Body)
	}
	if s, env := data(kisHeaders(h, tok, "FHKUP03500100")); s != 500 || env.MsgCd != "EGW00123" || env.Msg1 != "기간이 만료된 token 입니다." {
		t.Errorf("expired token: %d %+v", s, env)
	}
	h.Clock.Advance(time.Minute)
	tok2 := kisToken(h)
	if tok2 == tok {
		t.Fatal("an expired token was handed out again")
	}
	// Revoke, then the token is unknown.
	body, _ := json.Marshal(map[string]string{"appkey": h.Creds["KIS_APP_KEY"], "appsecret": h.Creds["KIS_APP_SECRET"], "token": tok2})
	if r := h.Post("/oauth2/revokeP", string(body)); r.Status != 200 || !strings.Contains(string(r.Body), `"code":200`) {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if s, env := data(kisHeaders(h, tok2, "FHKUP03500100")); s != 500 || env.MsgCd != "EGW00121" {
		t.Errorf("revoked token: %d %+v", s, env)
	}
	if got := h.Stats().Providers["kis"].AuthFailures; got != 6 {
		t.Errorf("auth failures = %d, want 6", got)
	}
}

func TestKISUnknownTrIDAndBadInput(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 1000 })
	tok := kisToken(h)
	r := h.Get(kisIndexQuery("0001", "20250101", "20250131"), kisHeaders(h, tok, "FHKUP99999999"))
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
	if r.Status != 200 || env.RtCd != "1" || env.MsgCd != "OPSQ0002" {
		t.Errorf("unknown tr_id: %d %s", r.Status, r.Body)
	}
	h.Clock.Advance(time.Second)
	r = h.Get(kisIndexQuery("0001", "2025-01-01", "20250131"), kisHeaders(h, tok, "FHKUP03500100"))
	simtest.MustJSON(t, r.Body, &env)
	if env.RtCd != "1" || !strings.Contains(env.Msg1, "FID_INPUT_DATE_1") {
		t.Errorf("bad date: %s", r.Body)
	}
	if r := h.Get("/uapi/nowhere", kisHeaders(h, tok, "X")); r.Status != 404 {
		t.Errorf("unknown path: %d", r.Status)
	}
}

func TestKISRateLimit(t *testing.T) {
	h := simtest.New(t, nil)
	tok := kisToken(h)
	hdr := kisHeaders(h, tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	for i := 0; i < 5; i++ {
		if r := h.Get(q, hdr); r.Status != 200 {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := h.Get(q, hdr)
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
	if r.Status != 500 || env.RtCd != "1" || env.MsgCd != "EGW00201" || env.Msg1 != "초당 거래건수를 초과하였습니다." {
		t.Fatalf("6th call in a second: %d %s", r.Status, r.Body)
	}
	h.Clock.Advance(999 * time.Millisecond)
	if r := h.Get(q, hdr); r.Status != 500 {
		t.Fatalf("call 999ms later: %d", r.Status)
	}
	h.Clock.Advance(time.Millisecond)
	if r := h.Get(q, hdr); r.Status != 200 {
		t.Fatalf("call 1s later: %d %s", r.Status, r.Body)
	}
	st := h.Stats().Scopes["kis/key"]
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

func TestRateScaleOverHTTP(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.RateScale = 10 })
	tok := kisToken(h)
	hdr := kisHeaders(h, tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	for i := 0; i < 5; i++ {
		if r := h.Get(q, hdr); r.Status != 200 {
			t.Fatalf("call %d: %d", i, r.Status)
		}
	}
	if r := h.Get(q, hdr); r.Status != http.StatusInternalServerError {
		t.Fatalf("6th call: %d", r.Status)
	}
	h.Clock.Advance(100 * time.Millisecond) // 1 s ÷ 10
	if r := h.Get(q, hdr); r.Status != 200 {
		t.Fatalf("after 100 ms at scale 10: %d", r.Status)
	}
	// The token interval scales too: 60 s ÷ 10.
	h.Clock.Advance(6 * time.Second)
	kisToken(h)
	st := h.Stats()
	if st.RateScale != 10 || st.Scopes["kis/key"].WindowMS["requests_per_second"] != 100 || st.Scopes["kis/key"].WindowMS["requests_per_day"] != 86400000 {
		t.Errorf("stats scale %v windows %v", st.RateScale, st.Scopes["kis/key"].WindowMS)
	}
}

func TestFaultRejectAtFraction(t *testing.T) {
	h := simtest.New(t, func(o *simulator.Options) { o.Faults = []simulator.Fault{{Provider: "kis", RejectAtFraction: 0.5}} })
	tok := kisToken(h)
	hdr := kisHeaders(h, tok, "FHKUP03500100")
	q := kisIndexQuery("0001", "20250301", "20250311")
	// 5/s declared; the provider now rejects above ⌊5 × 0.5⌋ = 2.
	for i := 0; i < 2; i++ {
		if r := h.Get(q, hdr); r.Status != 200 {
			t.Fatalf("call %d: %d", i, r.Status)
		}
	}
	r := h.Get(q, hdr)
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
	if r.Status != 500 || env.MsgCd != "EGW00201" {
		t.Fatalf("third call: %d %s", r.Status, r.Body)
	}
	st := h.Stats()
	if s := st.Scopes["kis/key"]; s.Rejected != 0 || s.RejectedByFault != 1 || s.Violations != 0 || st.Providers["kis"].Faults.RejectedAtFraction != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestKISMonthlyChart(t *testing.T) {
	h := simtest.New(t, nil)
	tok := kisToken(h)
	q := strings.Replace(kisIndexQuery("0001", "20240101", "20250311"), "FID_PERIOD_DIV_CODE=D", "FID_PERIOD_DIV_CODE=M", 1)
	r := h.Get(q, kisHeaders(h, tok, "FHKUP03500100"))
	var env kisEnvelope
	simtest.MustJSON(t, r.Body, &env)
	if len(env.Output2) != 15 {
		t.Fatalf("%d monthly rows, want 15 (Jan 2024 … Mar 2025)", len(env.Output2))
	}
	// Each row is dated on the month's last KRX day (up to today).
	if env.Output2[0]["stck_bsop_date"] != "20250311" || env.Output2[3]["stck_bsop_date"] != "20241230" || env.Output2[14]["stck_bsop_date"] != "20240131" {
		t.Errorf("dates %s %s %s", env.Output2[0]["stck_bsop_date"], env.Output2[3]["stck_bsop_date"], env.Output2[14]["stck_bsop_date"])
	}
	for _, row := range env.Output2 {
		d, ok := synth.ParseYYYYMMDD(row["stck_bsop_date"])
		if !ok || !synth.KRX.Open(d) {
			t.Errorf("row date %s is not a KRX day", row["stck_bsop_date"])
		}
	}
}

// TestCompressionIsRealistic checks that synthetic payloads compress like
// real ones (the seed pipeline saw about 6× with zstd level 3 on a KIS
// index page), so lake size figures mean something.
func TestCompressionIsRealistic(t *testing.T) {
	h := simtest.New(t, nil)
	tok := kisToken(h)
	body := h.Get(kisIndexQuery("0001", "20241201", "20250311"), kisHeaders(h, tok, "FHKUP03500100")).Body
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	compressed := enc.EncodeAll(body, nil)
	ratio := float64(len(body)) / float64(len(compressed))
	t.Logf("KIS 50-row page: %d bytes, zstd %d bytes, %.1f×", len(body), len(compressed), ratio)
	if len(body) < 5000 || len(body) > 20000 {
		t.Errorf("a 50-row KIS page is %d bytes; real ones are about 10 KB", len(body))
	}
	if ratio < 3 || ratio > 12 {
		t.Errorf("compression ratio %.1f× is far from the ~6× of real KIS pages", ratio)
	}
}

// TestEveryDefaultDataset asks for every KIS dataset of the default
// registry the way the connector would: each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	from := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC) // a Monday, published by 11 March 14:30 KST
	var tok string
	simtest.EveryDefaultDataset(t, "kis", 100, func(h *simtest.Harness, ds *registry.Dataset) (bool, simtest.Response) {
		if tok == "" {
			tok = kisToken(h)
		}
		q := url.Values{}
		for _, prm := range ds.Request.ExpandParams(from.AddDate(0, 0, -30), from) {
			q.Set(prm.Name, prm.Value)
		}
		r := h.Get(ds.Request.Path+"?"+q.Encode(), kisHeaders(h, tok, ds.Request.TrID))
		var env kisEnvelope
		simtest.MustJSON(t, r.Body, &env)
		return env.RtCd == "0" && len(env.Output2) > 0, r
	})
}

func TestTestCredentialsShapes(t *testing.T) {
	simtest.AssertCredentialShapes(t, map[string]string{"KIS_APP_KEY": `^PS[A-Za-z0-9]{34}$`, "KIS_APP_SECRET": `^[A-Za-z0-9+/]{180}$`})
}

func TestSameRequestSameBytes(t *testing.T) {
	simtest.AssertDeterministic(t, func(h *simtest.Harness) map[string][]byte {
		tok := kisToken(h)
		return map[string][]byte{"kis": h.Get(kisIndexQuery("0001", "20240101", "20250311"), kisHeaders(h, tok, "FHKUP03500100")).Body}
	}, "kis")
}

// TestControlExpireTokens: POST /_sim/kis/expire-tokens expires every
// issued token (EGW00123 on use), ?invalidate=1 forgets them (EGW00121);
// ExpireTokens and InvalidateTokens do the same from Go.
func TestControlExpireTokens(t *testing.T) {
	h := simtest.New(t, nil)
	code := func(tok string) string {
		t.Helper()
		h.Clock.Advance(time.Second)
		var env kisEnvelope
		simtest.MustJSON(t, h.Get(kisIndexQuery("0001", "20250301", "20250311"), kisHeaders(h, tok, "FHKUP03500100")).Body, &env)
		return env.MsgCd
	}
	tok := kisToken(h)
	if c := code(tok); c != "MCA00000" {
		t.Fatalf("fresh token: %s", c)
	}
	if r := h.Post("/_sim/kis/expire-tokens", ""); r.Status != 200 || string(r.Body) != "{\n  \"tokens\": 1\n}\n" {
		t.Fatalf("expire: %d %s", r.Status, r.Body)
	}
	if c := code(tok); c != "EGW00123" {
		t.Errorf("expired token: %s", c)
	}
	h.Clock.Advance(2 * time.Minute)
	tok = kisToken(h)
	if r := h.Post("/_sim/kis/expire-tokens?invalidate=1", ""); r.Status != 200 || !strings.Contains(string(r.Body), `"tokens": 2`) {
		t.Fatalf("invalidate: %d %s", r.Status, r.Body)
	}
	if c := code(tok); c != "EGW00121" {
		t.Errorf("forgotten token: %s", c)
	}
	h.Clock.Advance(2 * time.Minute)
	tok = kisToken(h)
	if n := ExpireTokens(h.Sim); n != 1 || code(tok) != "EGW00123" {
		t.Errorf("ExpireTokens = %d", n)
	}
	if n := InvalidateTokens(h.Sim); n != 1 {
		t.Errorf("InvalidateTokens = %d", n)
	}
	if r := h.Post("/_sim/kis/nope", ""); r.Status != 404 {
		t.Errorf("unknown KIS control endpoint: %d", r.Status)
	}
	if got := strings.Join(h.Sim.ControlPaths(), " "); got != "/_sim/stats /_sim/faults /_sim/reset /_sim/kis/expire-tokens" {
		t.Errorf("control paths %s", got)
	}
}
