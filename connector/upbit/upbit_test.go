package upbit_test

import (
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/upbit"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

const candle = `{"market":"KRW-BTC","candle_date_time_utc":"2024-01-02T00:00:00","candle_date_time_kst":"2024-01-02T09:00:00",` +
	`"opening_price":58000000.0,"high_price":59000000.0,"low_price":57000000.0,"trade_price":58500000.0,"timestamp":1704239999000,` +
	`"candle_acc_trade_price":123456789.0,"candle_acc_trade_volume":2.5,"prev_closing_price":58000000.0,"change_price":500000.0,"change_rate":0.0086}`

// fakeUPBIT serves daily candles from the wire facts: Remaining-Req on
// every answer, allow requests a "second", then 429, and after block429
// 429s, 418 with a block time that doubles each time.
type fakeUPBIT struct {
	mu       sync.Mutex
	allow    int
	block429 int
	calls    int
	n429     int
	n418     int
	queries  []url.Values
	auths    []string
	answer   string
	status   int
	group    string
}

func (f *fakeUPBIT) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.queries = append(f.queries, r.URL.Query())
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	group := f.group
	if group == "" {
		group = "candles"
	}
	left := max(f.allow-f.calls, 0)
	w.Header().Set("Remaining-Req", fmt.Sprintf("group=%s; min=1800; sec=%d", group, left))
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	switch {
	case f.allow > 0 && f.calls > f.allow && f.n429 < f.block429:
		f.n429++
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"name":"too_many_requests","message":"Too many API requests."}}`)
		return
	case f.allow > 0 && f.calls > f.allow:
		f.n418++
		w.Header().Set("Retry-After", fmt.Sprint(1<<f.n418))
		w.WriteHeader(418)
		fmt.Fprint(w, `{"error":{"name":"blocked","message":"too many 429s"}}`)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
	}
	if f.answer != "" {
		fmt.Fprint(w, f.answer)
		return
	}
	fmt.Fprint(w, "["+candle+"]")
}

var now = time.Date(2024, 1, 10, 3, 0, 0, 0, time.UTC)

func setup(t *testing.T, f *fakeUPBIT, mod func(*connector.Options)) (*upbit.Connector, *registry.Registry, *connectortest.Log) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	reg := connectortest.Registry(t)
	log, lg := connectortest.NewLog()
	opts := connector.Options{BaseURL: srv.URL, Credentials: connectortest.Credentials(), Logger: lg, Now: func() time.Time { return now }}
	if mod != nil {
		mod(&opts)
	}
	c, err := upbit.New(reg.Provider("upbit"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg, log
}

func day(d int) time.Time { return time.Date(2024, 1, d, 0, 0, 0, 0, time.UTC) }

func TestCandleWindow(t *testing.T) {
	to, n, err := upbit.CandleWindow(day(2), day(2))
	if err != nil || to != "2024-01-03T00:00:00Z" || n != 1 {
		t.Errorf("one day: %q %d %v", to, n, err)
	}
	to, n, err = upbit.CandleWindow(day(1), day(31))
	if err != nil || to != "2024-02-01T00:00:00Z" || n != 31 {
		t.Errorf("January: %q %d %v", to, n, err)
	}
	// A KST evening is still the UTC civil date it is given as.
	kst := time.FixedZone("KST", 9*3600)
	to, _, _ = upbit.CandleWindow(time.Date(2024, 1, 2, 23, 0, 0, 0, kst), time.Date(2024, 1, 2, 23, 0, 0, 0, kst))
	if to != "2024-01-03T00:00:00Z" {
		t.Errorf("civil date in KST: %q", to)
	}
	// A longer range starts with its newest MaxCount days; the rest are
	// further pages (Response.Next).
	if to, n, err := upbit.CandleWindow(day(1), day(1).AddDate(0, 0, 200)); err != nil || n != upbit.MaxCount || to != "2024-07-20T00:00:00Z" {
		t.Errorf("201 days: %q %d %v", to, n, err)
	}
	if _, n, err := upbit.CandleWindow(day(1), day(1).AddDate(0, 0, 199)); err != nil || n != 200 {
		t.Errorf("200 days: %d %v", n, err)
	}
	if _, _, err := upbit.CandleWindow(day(2), day(1)); err == nil {
		t.Error("reversed range accepted")
	}
}

func TestFetchCandles(t *testing.T) {
	f := &fakeUPBIT{}
	var observed []*permit.Remaining
	c, reg, _ := setup(t, f, func(o *connector.Options) {
		o.Limiter = permit.Funcs{ObserveFunc: func(_ context.Context, ob permit.Observation) { observed = append(observed, ob.Remaining) }}
	})
	resp, err := c.Fetch(context.Background(), connector.Request{Dataset: reg.Dataset(connectortest.UPBITDataset), From: day(1), To: day(7)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "["+candle+"]" {
		t.Error("body changed")
	}
	q := f.queries[0]
	if q.Get("market") != "KRW-BTC" || q.Get("to") != "2024-01-08T00:00:00Z" || q.Get("count") != "7" {
		t.Errorf("query %v", q)
	}
	if f.auths[0] != "" {
		t.Error("a public candle call was signed")
	}
	rr, err := upbit.ParseRemainingReq(resp.Header.Get("Remaining-Req"))
	if err != nil || rr.Group != "candles" {
		t.Errorf("Remaining-Req in Response: %+v %v", rr, err)
	}
	if len(observed) != 1 || observed[0] == nil || observed[0].Group != "candles" || observed[0].Window != time.Second {
		t.Errorf("Observe did not get Remaining-Req as a signal: %+v", observed)
	}
}

func TestEscalationTo418(t *testing.T) {
	f := &fakeUPBIT{allow: 3, block429: 2}
	c, reg, _ := setup(t, f, nil)
	req := connector.Request{Dataset: reg.Dataset(connectortest.UPBITDataset), From: day(1), To: day(1)}
	var classes []string
	var untils []time.Time
	for range 8 {
		resp, err := c.Fetch(context.Background(), req)
		if err == nil {
			resp.Body.Close()
			classes = append(classes, "ok")
			continue
		}
		var e *connector.Error
		if !errors.As(err, &e) {
			t.Fatalf("unclassified: %v", err)
		}
		classes = append(classes, e.Class.String())
		switch e.Class {
		case connector.RateLimited:
			if e.RetryAfter != upbit.RateLimitWait || e.Code != "too_many_requests" || e.Status != 429 {
				t.Errorf("429: %#v", e)
			}
		case connector.Blocked:
			untils = append(untils, e.Until)
		}
	}
	want := "ok,ok,ok,rate_limited,rate_limited,blocked,blocked,blocked"
	if got := strings.Join(classes, ","); got != want {
		t.Errorf("classes %s\nwant    %s", got, want)
	}
	for i, u := range untils {
		if want := now.Add(time.Duration(2<<i) * time.Second); !u.Equal(want) {
			t.Errorf("block %d until %v, want %v (growing)", i, u, want)
		}
	}
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		name   string
		status int
		answer string
		class  connector.Class
		code   string
	}{
		{"empty", 200, `[]`, connector.NoData, ""},
		// A wrong market's real answer names the error with a number.
		{"bad market", 404, `{"error":{"name":404,"message":"Code not found"}}`, connector.BadRequest, "404"},
		{"400", 400, `{"error":{"name":"invalid_parameter_count","message":"count"}}`, connector.BadRequest, "invalid_parameter_count"},
		{"401", 401, `{"error":{"name":"jwt_verification","message":"Jwt 토큰 검증에 실패했습니다."}}`, connector.AuthFailed, "jwt_verification"},
		{"500", 500, `oops`, connector.Transient, "500"},
		{"html 200", 200, `<html>`, connector.Transient, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, reg, _ := setup(t, &fakeUPBIT{status: tc.status, answer: tc.answer}, nil)
			_, err := c.Fetch(context.Background(), connector.Request{Dataset: reg.Dataset(connectortest.UPBITDataset), From: day(1), To: day(1)})
			var e *connector.Error
			if !errors.As(err, &e) || e.Class != tc.class || e.Code != tc.code {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestExchangeCallsAreSigned(t *testing.T) {
	f := &fakeUPBIT{answer: `{"bid_fee":"0.0005"}`, group: "default"}
	c, _, log := setup(t, f, nil)
	ds := &registry.Dataset{ID: "upbit-chance", Provider: "upbit", Request: registry.Request{Path: "/v1/orders/chance", Market: "KRW-BTC"}}
	resp, err := c.Fetch(context.Background(), connector.Request{Dataset: ds, From: day(1), To: day(1)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	auth := f.auths[0]
	raw, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		t.Fatalf("Authorization %q", auth)
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) {
		return []byte(connectortest.Secrets["UPBIT_SECRET_KEY"]), nil
	}, jwt.WithValidMethods([]string{"HS512"}))
	if err != nil || !tok.Valid {
		t.Fatalf("JWT: %v", err)
	}
	q, _ := url.QueryUnescape(f.queriesRaw(t))
	sum := sha512.Sum512([]byte(q))
	if claims["access_key"] != connectortest.Secrets["UPBIT_ACCESS_KEY"] || claims["nonce"] == "" ||
		claims["query_hash"] != hex.EncodeToString(sum[:]) || claims["query_hash_alg"] != "SHA512" {
		t.Errorf("claims %v", claims)
	}
	connectortest.AssertNoSecrets(t, "log", log.String(), raw, connectortest.Secrets["UPBIT_SECRET_KEY"], connectortest.Secrets["UPBIT_ACCESS_KEY"])
}

// queriesRaw rebuilds the first raw query in the order the connector sent.
func (f *fakeUPBIT) queriesRaw(t *testing.T) string {
	q := f.queries[0]
	return "market=" + url.QueryEscape(q.Get("market")) + "&to=" + url.QueryEscape(q.Get("to")) + "&count=" + q.Get("count")
}

func TestProbeAsksForTodaysCandle(t *testing.T) {
	f := &fakeUPBIT{}
	c, reg, _ := setup(t, f, nil)
	ans, err := c.Probe(context.Background(), reg.Dataset(connectortest.UPBITDataset))
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Newest {
		t.Error("today's candle does not claim to be the newest")
	}
	if q := f.queries[0]; q.Get("count") != "1" || q.Get("to") != "2024-01-11T00:00:00Z" {
		t.Errorf("probe query %v", q)
	}
}
