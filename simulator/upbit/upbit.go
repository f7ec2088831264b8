// Package upbit simulates the UPBIT Open API for the simulator: GET
// /v1/candles/{days,weeks,months,minutes/N} (public, charged to the ip
// scope) and the exchange endpoints GET /v1/accounts and GET
// /v1/orders/chance (an HS512 JWT with a fresh nonce and, with parameters,
// query_hash; charged to the account scope). Every answer carries
// "Remaining-Req: group=candles; min=1800; sec=N" (group default for the
// exchange endpoints), N being what the second window has left. Over the
// limit: 429 too_many_requests, escalating to 418 (see BlockRule). Candles
// page with to (exclusive) and count ≤ 200, newest first.
package upbit

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
	"github.com/sluicehq/sluice/simulator/synth"
)

const ctJSON = "application/json;charset=UTF-8"

// provider is the UPBIT wire of one simulator. nonces are guarded by the
// simulator's state lock (Host.Locked).
type provider struct {
	h          *simulator.Host
	markets    map[string][]*registry.Dataset // market → datasets
	nonces     map[string]struct{}
	nonceOrder []string

	serveCandles, serveExchange simulator.Handler
}

func newProvider(h *simulator.Host) (simulator.Provider, error) {
	p := &provider{h: h, nonces: map[string]struct{}{},
		markets: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.Market })}
	p.serveCandles, p.serveExchange = p.candlesReply, p.exchange
	return p, nil
}

func init() {
	// The test keys are shaped like real ones: 40 letters and digits.
	simulator.Register(simulator.Registration{Connector: "upbit", New: newProvider, Credential: simulator.Shaped(simulator.AlnumMixed, 40)})
}

// Route claims the candle paths and the exchange endpoints.
func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		in := p.h.First()
		switch {
		case strings.HasPrefix(path, "/v1/candles/"):
			ds := simulator.BestDataset(p.markets[r.URL.Query().Get("market")], in.Provider().ID, nil, func(d *registry.Dataset) bool {
				return d.Request.Path == "" || d.Request.Path == path
			})
			return simulator.Route{Instance: in, Dataset: ds, Path: path, Serve: p.serveCandles}, true
		case path == "/v1/accounts" || path == "/v1/orders/chance":
			return simulator.Route{Instance: in, Path: path, Serve: p.serveExchange}, true
		}
		return simulator.Route{}, false
	})
}

// Reset keeps the used nonces used.
func (p *provider) Reset() {}

// BlockRule is UPBIT's 418 escalation (a simulator rule; UPBIT publishes
// no numbers): every 429 is a strike; 5 strikes within 10 s block the
// scope (the IP, or the account for exchange endpoints) for 10 s, doubling
// with every further block up to an hour. While blocked every call gets
// 418 and counts as a violation; blocked calls do not extend the block.
// All three durations are divided by the rate scale; Reset clears blocks.
// A 429 caused by a RejectAtFraction fault is a strike too: the provider
// cannot tell.
var BlockRule = simulator.BlockRule{Strikes: 5, Window: 10 * time.Second, Base: 10 * time.Second, Max: time.Hour}

// maxNonces bounds the remembered JWT nonces.
const maxNonces = 100000

func fail(status int, name, msg, outcome string) *simulator.Reply {
	return simulator.JSONReply(status, ctJSON, outcome, func(w *simulator.JSON) {
		w.KObject("error", func() { w.KStr("name", name); w.KStr("message", msg) })
	})
}

// scopesOf returns the scope a call is charged to: the named one, else
// every scope of the provider.
func scopesOf(in *simulator.Instance, scope string) []*simulator.Scope {
	if st := in.Scope(scope); st != nil {
		return []*simulator.Scope{st}
	}
	return in.Scopes()
}

// limited answers a rejected call: 418 while blocked, 429 otherwise.
func limited(v simulator.Blocking) *simulator.Reply {
	if v.Blocked > 0 {
		secs := int64(math.Ceil(v.Blocked.Seconds()))
		return fail(http.StatusTeapot, "too_many_requests",
			"Too many API requests. Your IP has been blocked for "+strconv.FormatInt(secs, 10)+" seconds.", "limit")
	}
	return fail(http.StatusTooManyRequests, "too_many_requests", "Too many API requests.", "limit")
}

func remainingReq(group string, n int) string {
	return "group=" + group + "; min=1800; sec=" + strconv.Itoa(n)
}

// market describes a market's synthetic prices.
type market struct {
	series  synth.Series
	listed  synth.Day
	krw     bool
	volBase float64 // units traded a day
}

var known = map[string]struct {
	base, vol, volume float64
	listed            synth.Day
}{
	"KRW-BTC":  {9e7, 0.03, 3000, synth.Date(2017, 9, 25)},
	"KRW-ETH":  {4e6, 0.035, 30000, synth.Date(2017, 9, 25)},
	"KRW-XRP":  {900, 0.045, 3e8, synth.Date(2017, 9, 25)},
	"KRW-USDT": {1400, 0.003, 8e7, synth.Date(2023, 9, 13)},
	"KRW-SOL":  {2e5, 0.045, 3e5, synth.Date(2021, 10, 6)},
}

func marketFor(seed int64, name string) market {
	key := "upbit|" + name
	m := market{krw: strings.HasPrefix(name, "KRW-")}
	if k, ok := known[name]; ok {
		m.series = synth.NewSeries(seed, key, k.base, k.vol)
		m.listed, m.volBase = k.listed, k.volume
		return m
	}
	lo, hi := 100.0, 100000.0
	switch {
	case strings.HasPrefix(name, "BTC-"):
		lo, hi = 1e-6, 0.05
	case strings.HasPrefix(name, "USDT-"):
		lo, hi = 0.1, 1000
	}
	base := synth.Pick(seed, key, lo, hi)
	m.series = synth.NewSeries(seed, key, base, 0.04)
	m.listed = synth.Date(2019, 1, 1) + synth.Day(synth.Hash(seed, key, 1)%1500)
	m.volBase = 5e9 / math.Max(base*1300, 1)
	return m
}

// priceUnits are UPBIT's KRW price units: a price of at least from
// moves in steps of unit; below the last, 0.0001.
var priceUnits = []struct{ from, unit float64 }{
	{2e6, 1000}, {1e6, 500}, {5e5, 100}, {1e5, 50}, {1e4, 10},
	{1e3, 1}, {100, 0.1}, {10, 0.01}, {1, 0.001},
}

// tick rounds a KRW price to UPBIT's price unit.
func tick(p float64) float64 {
	unit := 0.0001
	for _, u := range priceUnits {
		if p >= u.from {
			unit = u.unit
			break
		}
	}
	return math.Round(p/unit) * unit
}

// parseTo parses the to parameter: ISO 8601 with an offset, or
// without one (UTC), with T or a space.
func parseTo(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var minuteUnits = map[string]int{"1": 1, "3": 3, "5": 5, "10": 10, "15": 15, "30": 30, "60": 60, "240": 240}

// candlesReply answers GET /v1/candles/{days|weeks|months|minutes/N}.
func (p *provider) candlesReply(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	v := p.h.AdmitBlocking(r, rt.Instance, scopesOf(rt.Instance, registry.ScopeIP), fraction, BlockRule)
	rep := p.candles(r, rt, v)
	rep.Header.Set("Remaining-Req", remainingReq("candles", v.Remaining))
	return rep
}

func (p *provider) candles(r *http.Request, rt simulator.Route, v simulator.Blocking) *simulator.Reply {
	if !v.OK {
		return limited(v)
	}
	kind, unit, rep := candleKind(rt.Path)
	if rep != nil {
		return rep
	}
	q := r.URL.Query()
	name := q.Get("market")
	if name == "" {
		return fail(http.StatusBadRequest, "invalid_parameter", "market 파라미터가 필요합니다.", "error")
	}
	if len(p.markets[name]) == 0 {
		return fail(http.StatusNotFound, "404", "Code not found", "error")
	}
	count := 1
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return fail(http.StatusBadRequest, "invalid_parameter", "count 파라미터가 올바르지 않습니다.", "error")
		}
		count = min(n, 200)
	}
	now := p.h.Now().UTC()
	to := now
	if tv := q.Get("to"); tv != "" {
		t, ok := parseTo(tv)
		if !ok {
			return fail(http.StatusBadRequest, "invalid_parameter", "to 파라미터가 올바르지 않습니다.", "error")
		}
		to = t.UTC()
		if to.After(now) {
			to = now.Add(time.Nanosecond) // the current candle is included
		}
	}
	m := marketFor(p.h.Seed(), name)
	listed := m.listed.Time(time.UTC)
	kst := time.FixedZone("KST", 9*3600)

	// The newest candle start strictly before to.
	start := candleStart(kind, unit, to.Add(-time.Nanosecond))
	w := simulator.NewJSON(64 + 420*count)
	w.Open('[')
	for n := 0; n < count && !start.Before(listed); {
		end := candleNext(kind, unit, start)
		if kind == "days" && !m.krw && m.series.Uniform(start.Unix()/86400, 77) < 0.02 {
			start = candlePrev(kind, unit, start) // no trades that day
			continue
		}
		writeCandle(w, m, name, kind, unit, start, end, now, kst)
		n++
		start = candlePrev(kind, unit, start)
	}
	w.Close(']')
	return simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
}

// candleKind reads the candle kind of a /v1/candles/ path: days, weeks,
// months or minutes (with its unit), or answers Upbit's error.
func candleKind(path string) (string, int, *simulator.Reply) {
	kind := strings.TrimPrefix(path, "/v1/candles/")
	unit := 0
	switch {
	case kind == "days" || kind == "weeks" || kind == "months":
	case strings.HasPrefix(kind, "minutes/"):
		n, ok := minuteUnits[strings.TrimPrefix(kind, "minutes/")]
		if !ok {
			return "", 0, fail(http.StatusBadRequest, "invalid_parameter", "지원하지 않는 분 단위입니다.", "error")
		}
		unit, kind = n, "minutes"
	default:
		return "", 0, fail(http.StatusNotFound, "not_found", "Not Found", "error")
	}
	return kind, unit, nil
}

// writeCandle writes the candle of market m that starts at start and ends
// at end (the current one, end after now, up to now).
func writeCandle(w *simulator.JSON, m market, name, kind string, unit int, start, end, now time.Time, kst *time.Location) {
	barEnd := end
	if barEnd.After(now) {
		barEnd = now
	}
	b := m.series.Bar(daysSinceEpoch(start), daysSinceEpoch(barEnd), start.Unix()/60)
	price := func(p float64) string {
		if m.krw {
			p = tick(p)
		}
		return strconv.FormatFloat(p, 'f', 8, 64)
	}
	vol := m.volBase * b.Volume
	ts := barEnd.UnixMilli()
	if !end.After(now) {
		ts = end.UnixMilli() - 1 - int64(m.series.Uniform(start.Unix(), 78)*60000)
	}
	w.Open('{')
	w.KStr("market", name)
	w.KStr("candle_date_time_utc", start.Format("2006-01-02T15:04:05"))
	w.KStr("candle_date_time_kst", start.In(kst).Format("2006-01-02T15:04:05"))
	w.KRaw("opening_price", price(b.Open))
	w.KRaw("high_price", price(b.High))
	w.KRaw("low_price", price(b.Low))
	w.KRaw("trade_price", price(b.Close))
	w.KInt("timestamp", ts)
	w.KRaw("candle_acc_trade_price", strconv.FormatFloat(vol*(b.Open+b.Close)/2, 'f', 8, 64))
	w.KRaw("candle_acc_trade_volume", strconv.FormatFloat(vol, 'f', 8, 64))
	switch kind {
	case "days":
		prevStart := start.AddDate(0, 0, -1)
		prev := m.series.Close(daysSinceEpoch(prevStart), daysSinceEpoch(start), prevStart.Unix()/60)
		pc, tc := prev, b.Close
		if m.krw {
			pc, tc = tick(pc), tick(tc)
		}
		w.KRaw("prev_closing_price", price(prev))
		w.KRaw("change_price", strconv.FormatFloat(tc-pc, 'f', 8, 64))
		w.KRaw("change_rate", strconv.FormatFloat((tc-pc)/pc, 'f', 10, 64))
	case "minutes":
		w.KInt("unit", int64(unit))
	default:
		w.KStr("first_day_of_period", start.Format("2006-01-02"))
	}
	w.Close('}')
}

func daysSinceEpoch(t time.Time) float64 { return float64(t.Unix()) / 86400 }

// candleStart returns the start of the candle containing t (UTC).
func candleStart(kind string, unit int, t time.Time) time.Time {
	t = t.UTC()
	switch kind {
	case "minutes":
		return t.Truncate(time.Duration(unit) * time.Minute)
	case "weeks":
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -int((d.Weekday()+6)%7))
	case "months":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func candleNext(kind string, unit int, start time.Time) time.Time {
	switch kind {
	case "minutes":
		return start.Add(time.Duration(unit) * time.Minute)
	case "weeks":
		return start.AddDate(0, 0, 7)
	case "months":
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

func candlePrev(kind string, unit int, start time.Time) time.Time {
	switch kind {
	case "minutes":
		return start.Add(-time.Duration(unit) * time.Minute)
	case "weeks":
		return start.AddDate(0, 0, -7)
	case "months":
		return start.AddDate(0, -1, 0)
	}
	return start.AddDate(0, 0, -1)
}

// exchange answers the exchange endpoints GET /v1/accounts and GET
// /v1/orders/chance, which need an HS512 JWT.
func (p *provider) exchange(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	in := rt.Instance
	rep := p.auth(r)
	if rep == nil {
		v := p.h.AdmitBlocking(r, in, scopesOf(in, registry.ScopeAccount), fraction, BlockRule)
		if !v.OK {
			rep = limited(v)
		} else {
			rep = exchangeBody(r, rt.Path)
		}
		rep.Header.Set("Remaining-Req", remainingReq("default", v.Remaining))
		return rep
	}
	rep.Header.Set("Remaining-Req", remainingReq("default", 0))
	return rep
}

func exchangeBody(r *http.Request, path string) *simulator.Reply {
	var w simulator.JSON
	if path == "/v1/accounts" {
		w.Open('[')
		for _, a := range [][4]string{{"KRW", "1000000.0", "0.0", "0"}, {"BTC", "0.01234567", "0.0", "90000000"}} {
			w.Open('{')
			w.KStr("currency", a[0])
			w.KStr("balance", a[1])
			w.KStr("locked", a[2])
			w.KStr("avg_buy_price", a[3])
			w.KRaw("avg_buy_price_modified", "false")
			w.KStr("unit_currency", "KRW")
			w.Close('}')
		}
		w.Close(']')
		return simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
	}
	market := r.URL.Query().Get("market")
	if market == "" {
		return fail(http.StatusBadRequest, "invalid_parameter", "market 파라미터가 필요합니다.", "error")
	}
	quote, base, _ := strings.Cut(market, "-")
	w.Open('{')
	w.KStr("bid_fee", "0.0005")
	w.KStr("ask_fee", "0.0005")
	w.Key("market")
	w.Open('{')
	w.KStr("id", market)
	w.KStr("name", base+"/"+quote)
	w.Key("order_sides")
	w.Open('[')
	w.Str("ask")
	w.Str("bid")
	w.Close(']')
	w.Key("bid")
	w.Open('{')
	w.KStr("currency", quote)
	w.KStr("min_total", "5000")
	w.Close('}')
	w.Key("ask")
	w.Open('{')
	w.KStr("currency", base)
	w.KStr("min_total", "5000")
	w.Close('}')
	w.KStr("max_total", "1000000000.0")
	w.KStr("state", "active")
	w.Close('}')
	w.Close('}')
	return simulator.NewReply(http.StatusOK, ctJSON, w.Bytes(), "ok")
}

// auth verifies the JWT of an exchange request: HS512 (or HS256)
// signed with the secret key of a configured access key, a fresh nonce,
// and with query parameters a query_hash (hex SHA-512 of the query
// string, query_hash_alg SHA512).
func (p *provider) auth(r *http.Request) *simulator.Reply {
	deny := func(name, msg string) *simulator.Reply { return fail(http.StatusUnauthorized, name, msg, "auth") }
	token := simulator.BearerToken(r.Header.Get("Authorization"))
	if token == "" {
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	enc := base64.RawURLEncoding
	hb, err1 := enc.DecodeString(parts[0])
	pb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		AccessKey    string `json:"access_key"`
		Nonce        string `json:"nonce"`
		QueryHash    string `json:"query_hash"`
		QueryHashAlg string `json:"query_hash_alg"`
	}
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &header) != nil || json.Unmarshal(pb, &claims) != nil {
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	owner := p.h.Owner("access_key", claims.AccessKey)
	if owner == nil {
		return deny("invalid_access_key", "잘못된 엑세스 키입니다.")
	}
	var h func() hash.Hash
	switch header.Alg {
	case "HS512":
		h = sha512.New
	case "HS256":
		h = sha256.New
	default:
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	mac := hmac.New(h, []byte(owner.Credential("secret_key")))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(mac.Sum(nil), sig) {
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	if claims.Nonce == "" {
		return deny("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	if raw := r.URL.RawQuery; raw != "" {
		if claims.QueryHashAlg != "" && claims.QueryHashAlg != "SHA512" {
			return deny("invalid_query_payload", "Jwt 토큰의 쿼리 페이로드가 올바르지 않습니다.")
		}
		if !queryHashMatches(raw, claims.QueryHash) {
			return deny("invalid_query_payload", "Jwt 토큰의 쿼리 페이로드가 올바르지 않습니다.")
		}
	}
	var used bool
	p.h.Locked(func() {
		_, used = p.nonces[claims.AccessKey+"|"+claims.Nonce]
		if used {
			return
		}
		if len(p.nonceOrder) >= maxNonces {
			for _, n := range p.nonceOrder[:maxNonces/2] {
				delete(p.nonces, n)
			}
			p.nonceOrder = append([]string(nil), p.nonceOrder[maxNonces/2:]...)
		}
		k := claims.AccessKey + "|" + claims.Nonce
		p.nonces[k] = struct{}{}
		p.nonceOrder = append(p.nonceOrder, k)
	})
	if used {
		return deny("nonce_used", "이미 요청한 nonce값이 다시 사용되었습니다.")
	}
	return nil
}

// queryHashMatches compares the claimed hash with SHA-512 of the query as
// sent and as unescaped (UPBIT's own samples hash the unescaped form).
func queryHashMatches(raw, claimed string) bool {
	if claimed == "" {
		return false
	}
	forms := []string{raw}
	if un, err := url.QueryUnescape(raw); err == nil && un != raw {
		forms = append(forms, un)
	}
	for _, f := range forms {
		sum := sha512.Sum512([]byte(f))
		if hex.EncodeToString(sum[:]) == strings.ToLower(claimed) {
			return true
		}
	}
	return false
}

// shape429Text is UPBIT's rate-limit answer with a plain-text body
// instead of the JSON error (simulator.Shaper), as its gateway sends it.
const shape429Text = "429-text"

// TooManyText is the body of the 429-text shape.
const TooManyText = "Too many API requests."

// Shapes lists UPBIT's own shapes.
func (p *provider) Shapes() []simulator.ShapeSpec {
	return []simulator.ShapeSpec{{Name: shape429Text, Doc: "HTTP 429 with the plain-text body \"Too many API requests.\" (text/plain;charset=UTF-8)"}}
}

// ShapeApplies: the shape answers every UPBIT request.
func (p *provider) ShapeApplies(string, *http.Request, simulator.Route) bool { return true }

// ShapeReply answers with the plain-text 429.
func (p *provider) ShapeReply(shape string, _ *http.Request, _ simulator.Route, c simulator.ShapeCall) *simulator.Reply {
	if shape != shape429Text {
		return nil
	}
	return simulator.NewReply(simulator.OrStatus(c.Fault.Status, http.StatusTooManyRequests), "text/plain;charset=UTF-8", []byte(TooManyText), "fault-shape")
}
