package upbit

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/simtest"
)

var upbitDayKeys = []string{"market", "candle_date_time_utc", "candle_date_time_kst", "opening_price", "high_price", "low_price",
	"trade_price", "timestamp", "candle_acc_trade_price", "candle_acc_trade_volume", "prev_closing_price", "change_price", "change_rate"}

type upbitCandle struct {
	Market    string  `json:"market"`
	UTC       string  `json:"candle_date_time_utc"`
	KST       string  `json:"candle_date_time_kst"`
	Open      float64 `json:"opening_price"`
	High      float64 `json:"high_price"`
	Low       float64 `json:"low_price"`
	Trade     float64 `json:"trade_price"`
	Timestamp int64   `json:"timestamp"`
	Prev      float64 `json:"prev_closing_price"`
	Change    float64 `json:"change_price"`
}

func TestUpbitDayCandles(t *testing.T) {
	h := simtest.New(t, nil)
	r := h.Get("/v1/candles/days?market=KRW-BTC&to=2025-03-05T00:00:00Z&count=7", nil)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if got := r.Header.Get("Remaining-Req"); got != "group=candles; min=1800; sec=9" {
		t.Errorf("Remaining-Req %q", got)
	}
	var raw []json.RawMessage
	simtest.MustJSON(t, r.Body, &raw)
	if len(raw) != 7 {
		t.Fatalf("%d candles", len(raw))
	}
	if got := simtest.KeysOf(t, raw[0]); !reflect.DeepEqual(got, upbitDayKeys) {
		t.Errorf("keys\n got %v\nwant %v", got, upbitDayKeys)
	}
	var cs []upbitCandle
	simtest.MustJSON(t, r.Body, &cs)
	// to is exclusive, newest first, weekends included (1 and 2 March 2025).
	want := []string{"2025-03-04", "2025-03-03", "2025-03-02", "2025-03-01", "2025-02-28", "2025-02-27", "2025-02-26"}
	for i, c := range cs {
		if c.UTC != want[i]+"T00:00:00" || c.KST != want[i]+"T09:00:00" || c.Market != "KRW-BTC" {
			t.Errorf("candle %d: %s / %s", i, c.UTC, c.KST)
		}
		if !(c.Low <= c.Open && c.Low <= c.Trade && c.High >= c.Open && c.High >= c.Trade) || c.Trade < 1e6 {
			t.Errorf("candle %d prices %+v", i, c)
		}
		if c.Trade != float64(int64(c.Trade)/1000*1000) {
			t.Errorf("candle %d trade price %v is not on the 1,000 KRW tick", i, c.Trade)
		}
		if i+1 < len(cs) && c.Prev != cs[i+1].Trade {
			t.Errorf("candle %d prev_closing_price %v != previous trade price %v", i, c.Prev, cs[i+1].Trade)
		}
		day, _ := time.Parse("2006-01-02", want[i])
		if c.Timestamp <= day.UnixMilli() || c.Timestamp >= day.Add(24*time.Hour).UnixMilli() {
			t.Errorf("candle %d timestamp %d outside its day", i, c.Timestamp)
		}
	}

	// Without to: the current (forming) candle comes first.
	r = h.Get("/v1/candles/days?market=KRW-BTC", nil)
	simtest.MustJSON(t, r.Body, &cs)
	if len(cs) != 1 || cs[0].UTC != "2025-03-11T00:00:00" {
		t.Errorf("latest candle %+v", cs)
	}
	if got := r.Header.Get("Remaining-Req"); got != "group=candles; min=1800; sec=8" {
		t.Errorf("second call Remaining-Req %q", got)
	}

	// Minute candles carry unit; an unknown market is 404 with the header.
	r = h.Get("/v1/candles/minutes/15?market=KRW-BTC&count=2&to=2025-03-10T10:07:00Z", nil)
	var mins []map[string]any
	simtest.MustJSON(t, r.Body, &mins)
	if len(mins) != 2 || mins[0]["candle_date_time_utc"] != "2025-03-10T10:00:00" || mins[0]["unit"] != float64(15) {
		t.Errorf("minute candles %v", mins)
	}
	r = h.Get("/v1/candles/days?market=KRW-NOPE", nil)
	if r.Status != 404 || !strings.Contains(string(r.Body), `"name":"404"`) || r.Header.Get("Remaining-Req") == "" {
		t.Errorf("unknown market: %d %s %q", r.Status, r.Body, r.Header.Get("Remaining-Req"))
	}
	r = h.Get("/v1/candles/weeks?market=KRW-BTC&count=2&to=2025-03-05T00:00:00Z", nil)
	var weeks []map[string]any
	simtest.MustJSON(t, r.Body, &weeks)
	if len(weeks) != 2 || weeks[0]["first_day_of_period"] != "2025-03-03" || weeks[1]["first_day_of_period"] != "2025-02-24" {
		t.Errorf("weeks %v", weeks)
	}
}

func TestUpbitEscalatesTo418(t *testing.T) {
	h := simtest.New(t, nil)
	call := func() simtest.Response { return h.Get("/v1/candles/days?market=KRW-BTC&count=1", nil) }
	for i := 0; i < 10; i++ {
		if r := call(); r.Status != 200 {
			t.Fatalf("call %d: %d", i, r.Status)
		}
	}
	for i := 0; i < BlockRule.Strikes; i++ {
		r := call()
		if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), `"name":"too_many_requests"`) || r.Header.Get("Remaining-Req") != "group=candles; min=1800; sec=0" {
			t.Fatalf("strike %d: %d %s %q", i, r.Status, r.Body, r.Header.Get("Remaining-Req"))
		}
	}
	h.Clock.Advance(5 * time.Second) // the window is free, but the IP is blocked
	r := call()
	if r.Status != http.StatusTeapot {
		t.Fatalf("after %d strikes: %d %s", BlockRule.Strikes, r.Status, r.Body)
	}
	h.Clock.Advance(5 * time.Second) // the 10 s block is over
	if r := call(); r.Status != 200 {
		t.Fatalf("after the block: %d %s", r.Status, r.Body)
	}
	// A second block lasts twice as long.
	for i := 0; i < 9+BlockRule.Strikes; i++ {
		call()
	}
	h.Clock.Advance(19 * time.Second)
	if r := call(); r.Status != http.StatusTeapot {
		t.Fatalf("19 s into the second block: %d", r.Status)
	}
	h.Clock.Advance(time.Second)
	if r := call(); r.Status != 200 {
		t.Fatalf("after the second block: %d", r.Status)
	}
	st := h.Stats().Scopes["upbit/ip"]
	if st.Blocked != 2 || st.Rejected != int64(2*BlockRule.Strikes+2) || st.Accepted != 21 {
		t.Errorf("stats blocked=%d rejected=%d accepted=%d", st.Blocked, st.Rejected, st.Accepted)
	}
}

// upbitJWT builds an UPBIT exchange token.
func upbitJWT(access, secret, nonce, query string, corruptHash bool) string {
	enc := base64.RawURLEncoding
	claims := map[string]string{"access_key": access, "nonce": nonce}
	if query != "" {
		sum := sha512.Sum512([]byte(query))
		claims["query_hash"] = hex.EncodeToString(sum[:])
		if corruptHash {
			claims["query_hash"] = strings.Repeat("0", 128)
		}
		claims["query_hash_alg"] = "SHA512"
	}
	payload, _ := json.Marshal(claims)
	body := enc.EncodeToString([]byte(`{"alg":"HS512","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha512.New, []byte(secret))
	mac.Write([]byte(body))
	return body + "." + enc.EncodeToString(mac.Sum(nil))
}

func TestUpbitExchangeJWT(t *testing.T) {
	h := simtest.New(t, nil)
	access, secret := h.Creds["UPBIT_ACCESS_KEY"], h.Creds["UPBIT_SECRET_KEY"]
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	errName := func(r simtest.Response) string {
		var e struct {
			Error struct {
				Name string `json:"name"`
			} `json:"error"`
		}
		simtest.MustJSON(t, r.Body, &e)
		return e.Error.Name
	}
	r := h.Get("/v1/accounts", auth(upbitJWT(access, secret, "nonce-1", "", false)))
	if r.Status != 200 || r.Header.Get("Remaining-Req") != "group=default; min=1800; sec=29" {
		t.Fatalf("accounts: %d %s %q", r.Status, r.Body, r.Header.Get("Remaining-Req"))
	}
	var accounts []map[string]any
	simtest.MustJSON(t, r.Body, &accounts)
	if len(accounts) == 0 || accounts[0]["currency"] != "KRW" {
		t.Errorf("accounts %v", accounts)
	}
	cases := []struct {
		tok, path, name string
	}{
		{upbitJWT(access, secret, "nonce-1", "", false), "/v1/accounts", "nonce_used"},
		{upbitJWT(access, "wrong-secret", "nonce-2", "", false), "/v1/accounts", "jwt_verification"},
		{upbitJWT("unknown-access-key", secret, "nonce-3", "", false), "/v1/accounts", "invalid_access_key"},
		{upbitJWT(access, secret, "nonce-4", "market=KRW-BTC", true), "/v1/orders/chance?market=KRW-BTC", "invalid_query_payload"},
		{upbitJWT(access, secret, "", "", false), "/v1/accounts", "jwt_verification"},
		{"not.a.jwt", "/v1/accounts", "jwt_verification"},
	}
	for _, c := range cases {
		r := h.Get(c.path, auth(c.tok))
		if r.Status != http.StatusUnauthorized || errName(r) != c.name {
			t.Errorf("%s want %s: %d %s", c.path, c.name, r.Status, r.Body)
		}
	}
	r = h.Get("/v1/orders/chance?market=KRW-BTC", auth(upbitJWT(access, secret, "nonce-5", "market=KRW-BTC", false)))
	if r.Status != 200 || !strings.Contains(string(r.Body), `"id":"KRW-BTC"`) {
		t.Errorf("orders/chance: %d %s", r.Status, r.Body)
	}
	st := h.Stats()
	if st.Scopes["upbit/account"].Accepted != 2 || st.Scopes["upbit/ip"].Calls != 0 || st.Providers["upbit"].AuthFailures != int64(len(cases)) {
		t.Errorf("account %+v ip %+v", st.Scopes["upbit/account"], st.Scopes["upbit/ip"])
	}
}

// TestEveryDefaultDataset asks for every UPBIT dataset of the default
// registry the way the connector would: each answers with data.
func TestEveryDefaultDataset(t *testing.T) {
	simtest.EveryDefaultDataset(t, "upbit", 5, func(h *simtest.Harness, ds *registry.Dataset) (bool, simtest.Response) {
		path := ds.Request.Path
		if path == "" {
			path = "/v1/candles/days"
		}
		r := h.Get(path+"?count=10&market="+ds.Request.Market, nil)
		var cs []json.RawMessage
		simtest.MustJSON(t, r.Body, &cs)
		return len(cs) == 10, r
	})
}

func TestTestCredentialsShapes(t *testing.T) {
	simtest.AssertCredentialShapes(t, map[string]string{"UPBIT_ACCESS_KEY": `^[A-Za-z0-9]{40}$`, "UPBIT_SECRET_KEY": `^[A-Za-z0-9]{40}$`})
	if creds := simulator.TestCredentials(simtest.Fixture(t)); creds["UPBIT_ACCESS_KEY"] == creds["UPBIT_SECRET_KEY"] {
		t.Error("access and secret key are equal")
	}
}

func TestSameRequestSameBytes(t *testing.T) {
	simtest.AssertDeterministic(t, func(h *simtest.Harness) map[string][]byte {
		return map[string][]byte{"upbit": h.Get("/v1/candles/days?market=KRW-BTC&count=200", nil).Body}
	}, "upbit")
}
