package simulator

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
	"github.com/sluicehq/sluice/simulator/synth"
)

// UPBIT 418 escalation (a simulator rule; UPBIT publishes no numbers):
// every 429 is a strike; upbitStrikes strikes within upbitStrikeWindow
// block the scope (the IP, or the account for exchange endpoints) for
// upbitBlockBase, doubling with every further block up to upbitBlockMax.
// While blocked every call gets 418 and counts as a violation; blocked
// calls do not extend the block. All three durations are divided by the
// rate scale. Reset clears blocks.
const (
	upbitStrikes      = 5
	upbitStrikeWindow = 10 * time.Second
	upbitBlockBase    = 10 * time.Second
	upbitBlockMax     = time.Hour
)

// upbitMaxNonces bounds the remembered JWT nonces.
const upbitMaxNonces = 100000

func upbitError(status int, name, msg, outcome string) *reply {
	var w jw
	w.open('{')
	w.key("error")
	w.open('{')
	w.kstr("name", name)
	w.kstr("message", msg)
	w.close('}')
	w.close('}')
	return newReply(status, ctJSONUp, w.b, outcome)
}

// upbitVerdict is a rate decision with what Remaining-Req reports.
type upbitVerdict struct {
	ok        bool
	blocked   time.Duration // > 0: 418 for this long
	remaining int
}

// upbitAdmit applies the scope's window and the 418 escalation.
func (s *Simulator) upbitAdmit(ps *provState, scopes []*scopeState, fraction float64) upbitVerdict {
	if len(scopes) == 0 {
		return upbitVerdict{ok: true, remaining: 0}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(scopes) > 1 {
		adm := s.admitLocked(ps, scopes, fraction, now)
		return upbitVerdict{ok: adm.ok}
	}
	st := scopes[0]
	t := st.clock(now)
	if st.hasBlock && t < st.blockUntil {
		st.observe(now)
		st.rejected++
		st.blocked++
		return upbitVerdict{blocked: time.Duration(st.blockUntil - t)}
	}
	st.hasBlock = false
	adm := s.admitLocked(ps, scopes, fraction, now)
	if adm.ok {
		return upbitVerdict{ok: true, remaining: st.remaining(adm.t)}
	}
	st.strikes.dropThrough(t - int64(scaleDuration(upbitStrikeWindow, s.scale)))
	st.strikes.push(t)
	if st.strikes.len() >= upbitStrikes {
		st.blocks++
		d := scaleDuration(upbitBlockBase, s.scale)
		limit := scaleDuration(upbitBlockMax, s.scale)
		for i := 1; i < st.blocks && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		st.blockUntil, st.hasBlock = t+int64(d), true
		st.strikes.reset()
	}
	return upbitVerdict{}
}

func (s *Simulator) upbitScopes(ps *provState, scope string) []*scopeState {
	if st := ps.byScope[scope]; st != nil {
		return []*scopeState{st}
	}
	return ps.scopes
}

// upbitLimited answers a rejected call: 418 while blocked, 429 otherwise.
func upbitLimited(v upbitVerdict) *reply {
	if v.blocked > 0 {
		secs := int64(math.Ceil(v.blocked.Seconds()))
		return upbitError(http.StatusTeapot, "too_many_requests",
			"Too many API requests. Your IP has been blocked for "+strconv.FormatInt(secs, 10)+" seconds.", "limit")
	}
	return upbitError(http.StatusTooManyRequests, "too_many_requests", "Too many API requests.", "limit")
}

func remainingReq(group string, n int) string {
	return "group=" + group + "; min=1800; sec=" + strconv.Itoa(n)
}

// upbitMarket describes a market's synthetic prices.
type upbitMarket struct {
	series  synth.Series
	listed  synth.Day
	krw     bool
	volBase float64 // units traded a day
}

var upbitKnown = map[string]struct {
	base, vol, volume float64
	listed            synth.Day
}{
	"KRW-BTC":  {9e7, 0.03, 3000, synth.Date(2017, 9, 25)},
	"KRW-ETH":  {4e6, 0.035, 30000, synth.Date(2017, 9, 25)},
	"KRW-XRP":  {900, 0.045, 3e8, synth.Date(2017, 9, 25)},
	"KRW-USDT": {1400, 0.003, 8e7, synth.Date(2023, 9, 13)},
	"KRW-SOL":  {2e5, 0.045, 3e5, synth.Date(2021, 10, 6)},
}

func (s *Simulator) upbitMarketFor(market string) upbitMarket {
	key := "upbit|" + market
	m := upbitMarket{krw: strings.HasPrefix(market, "KRW-")}
	if k, ok := upbitKnown[market]; ok {
		m.series = synth.NewSeries(s.seed, key, k.base, k.vol)
		m.listed, m.volBase = k.listed, k.volume
		return m
	}
	lo, hi := 100.0, 100000.0
	switch {
	case strings.HasPrefix(market, "BTC-"):
		lo, hi = 1e-6, 0.05
	case strings.HasPrefix(market, "USDT-"):
		lo, hi = 0.1, 1000
	}
	base := pick(s.seed, key, lo, hi)
	m.series = synth.NewSeries(s.seed, key, base, 0.04)
	m.listed = synth.Date(2019, 1, 1) + synth.Day(synth.Hash(s.seed, key, 1)%1500)
	m.volBase = 5e9 / math.Max(base*1300, 1)
	return m
}

// tick rounds a KRW price to UPBIT's price unit.
func tick(p float64) float64 {
	var unit float64
	switch {
	case p >= 2e6:
		unit = 1000
	case p >= 1e6:
		unit = 500
	case p >= 5e5:
		unit = 100
	case p >= 1e5:
		unit = 50
	case p >= 1e4:
		unit = 10
	case p >= 1e3:
		unit = 1
	case p >= 100:
		unit = 0.1
	case p >= 10:
		unit = 0.01
	case p >= 1:
		unit = 0.001
	default:
		unit = 0.0001
	}
	return math.Round(p/unit) * unit
}

// parseUpbitTo parses the to parameter: ISO 8601 with an offset, or
// without one (UTC), with T or a space.
func parseUpbitTo(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var minuteUnits = map[string]int{"1": 1, "3": 3, "5": 5, "10": 10, "15": 15, "30": 30, "60": 60, "240": 240}

// serveUpbitCandles answers GET /v1/candles/{days|weeks|months|minutes/N}.
func (s *Simulator) serveUpbitCandles(r *http.Request, rt route, fraction float64) *reply {
	v := s.upbitAdmit(rt.prov, s.upbitScopes(rt.prov, registry.ScopeIP), fraction)
	rep := s.upbitCandles(r, rt, v)
	rep.header.Set("Remaining-Req", remainingReq("candles", v.remaining))
	return rep
}

func (s *Simulator) upbitCandles(r *http.Request, rt route, v upbitVerdict) *reply {
	if !v.ok {
		return upbitLimited(v)
	}
	kind := strings.TrimPrefix(rt.path, "/v1/candles/")
	unit := 0
	switch {
	case kind == "days" || kind == "weeks" || kind == "months":
	case strings.HasPrefix(kind, "minutes/"):
		n, ok := minuteUnits[strings.TrimPrefix(kind, "minutes/")]
		if !ok {
			return upbitError(http.StatusBadRequest, "invalid_parameter", "지원하지 않는 분 단위입니다.", "error")
		}
		unit, kind = n, "minutes"
	default:
		return upbitError(http.StatusNotFound, "not_found", "Not Found", "error")
	}
	q := r.URL.Query()
	market := q.Get("market")
	if market == "" {
		return upbitError(http.StatusBadRequest, "invalid_parameter", "market 파라미터가 필요합니다.", "error")
	}
	if len(s.upbitMarkets[market]) == 0 {
		return upbitError(http.StatusNotFound, "404", "Code not found", "error")
	}
	count := 1
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return upbitError(http.StatusBadRequest, "invalid_parameter", "count 파라미터가 올바르지 않습니다.", "error")
		}
		count = min(n, 200)
	}
	now := s.now().UTC()
	to := now
	if tv := q.Get("to"); tv != "" {
		t, ok := parseUpbitTo(tv)
		if !ok {
			return upbitError(http.StatusBadRequest, "invalid_parameter", "to 파라미터가 올바르지 않습니다.", "error")
		}
		to = t.UTC()
		if to.After(now) {
			to = now.Add(time.Nanosecond) // the current candle is included
		}
	}
	m := s.upbitMarketFor(market)
	listed := m.listed.Time(time.UTC)
	kst := time.FixedZone("KST", 9*3600)

	// The newest candle start strictly before to.
	start := candleStart(kind, unit, to.Add(-time.Nanosecond))
	w := jw{b: make([]byte, 0, 64+420*count)}
	w.open('[')
	for n := 0; n < count && !start.Before(listed); {
		end := candleNext(kind, unit, start)
		if kind == "days" && !m.krw && m.series.Uniform(start.Unix()/86400, 77) < 0.02 {
			start = candlePrev(kind, unit, start) // no trades that day
			continue
		}
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
		w.open('{')
		w.kstr("market", market)
		w.kstr("candle_date_time_utc", start.Format("2006-01-02T15:04:05"))
		w.kstr("candle_date_time_kst", start.In(kst).Format("2006-01-02T15:04:05"))
		w.kraw("opening_price", price(b.Open))
		w.kraw("high_price", price(b.High))
		w.kraw("low_price", price(b.Low))
		w.kraw("trade_price", price(b.Close))
		w.kint("timestamp", ts)
		w.kraw("candle_acc_trade_price", strconv.FormatFloat(vol*(b.Open+b.Close)/2, 'f', 8, 64))
		w.kraw("candle_acc_trade_volume", strconv.FormatFloat(vol, 'f', 8, 64))
		switch kind {
		case "days":
			prevStart := start.AddDate(0, 0, -1)
			prev := m.series.Close(daysSinceEpoch(prevStart), daysSinceEpoch(start), prevStart.Unix()/60)
			pc, tc := prev, b.Close
			if m.krw {
				pc, tc = tick(pc), tick(tc)
			}
			w.kraw("prev_closing_price", price(prev))
			w.kraw("change_price", strconv.FormatFloat(tc-pc, 'f', 8, 64))
			w.kraw("change_rate", strconv.FormatFloat((tc-pc)/pc, 'f', 10, 64))
		case "minutes":
			w.kint("unit", int64(unit))
		default:
			w.kstr("first_day_of_period", start.Format("2006-01-02"))
		}
		w.close('}')
		n++
		start = candlePrev(kind, unit, start)
	}
	w.close(']')
	return newReply(http.StatusOK, ctJSONUp, w.b, "ok")
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

// serveUpbitExchange answers the exchange endpoints GET /v1/accounts and
// GET /v1/orders/chance, which need an HS512 JWT.
func (s *Simulator) serveUpbitExchange(r *http.Request, rt route, fraction float64) *reply {
	ps := rt.prov
	rep := s.upbitAuth(r)
	if rep == nil {
		v := s.upbitAdmit(ps, s.upbitScopes(ps, registry.ScopeAccount), fraction)
		if !v.ok {
			rep = upbitLimited(v)
		} else {
			rep = upbitExchangeBody(r, rt.path)
		}
		rep.header.Set("Remaining-Req", remainingReq("default", v.remaining))
		return rep
	}
	rep.header.Set("Remaining-Req", remainingReq("default", 0))
	return rep
}

func upbitExchangeBody(r *http.Request, path string) *reply {
	var w jw
	if path == "/v1/accounts" {
		w.open('[')
		for _, a := range [][4]string{{"KRW", "1000000.0", "0.0", "0"}, {"BTC", "0.01234567", "0.0", "90000000"}} {
			w.open('{')
			w.kstr("currency", a[0])
			w.kstr("balance", a[1])
			w.kstr("locked", a[2])
			w.kstr("avg_buy_price", a[3])
			w.kraw("avg_buy_price_modified", "false")
			w.kstr("unit_currency", "KRW")
			w.close('}')
		}
		w.close(']')
		return newReply(http.StatusOK, ctJSONUp, w.b, "ok")
	}
	market := r.URL.Query().Get("market")
	if market == "" {
		return upbitError(http.StatusBadRequest, "invalid_parameter", "market 파라미터가 필요합니다.", "error")
	}
	quote, base, _ := strings.Cut(market, "-")
	w.open('{')
	w.kstr("bid_fee", "0.0005")
	w.kstr("ask_fee", "0.0005")
	w.key("market")
	w.open('{')
	w.kstr("id", market)
	w.kstr("name", base+"/"+quote)
	w.key("order_sides")
	w.open('[')
	w.str("ask")
	w.str("bid")
	w.close(']')
	w.key("bid")
	w.open('{')
	w.kstr("currency", quote)
	w.kstr("min_total", "5000")
	w.close('}')
	w.key("ask")
	w.open('{')
	w.kstr("currency", base)
	w.kstr("min_total", "5000")
	w.close('}')
	w.kstr("max_total", "1000000000.0")
	w.kstr("state", "active")
	w.close('}')
	w.close('}')
	return newReply(http.StatusOK, ctJSONUp, w.b, "ok")
}

// upbitAuth verifies the JWT of an exchange request: HS512 (or HS256)
// signed with the secret key of a configured access key, a fresh nonce,
// and with query parameters a query_hash (hex SHA-512 of the query
// string, query_hash_alg SHA512).
func (s *Simulator) upbitAuth(r *http.Request) *reply {
	fail := func(name, msg string) *reply { return upbitError(http.StatusUnauthorized, name, msg, "auth") }
	token := bearer(r.Header.Get("Authorization"))
	if token == "" {
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
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
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	owner := s.credentialOwner("upbit", "access_key", claims.AccessKey)
	if owner == nil {
		return fail("invalid_access_key", "잘못된 엑세스 키입니다.")
	}
	var h func() hash.Hash
	switch header.Alg {
	case "HS512":
		h = sha512.New
	case "HS256":
		h = sha256.New
	default:
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	mac := hmac.New(h, []byte(owner.creds["secret_key"]))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(mac.Sum(nil), sig) {
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	if claims.Nonce == "" {
		return fail("jwt_verification", "Jwt 토큰 검증에 실패했습니다.")
	}
	if raw := r.URL.RawQuery; raw != "" {
		if claims.QueryHashAlg != "" && claims.QueryHashAlg != "SHA512" {
			return fail("invalid_query_payload", "Jwt 토큰의 쿼리 페이로드가 올바르지 않습니다.")
		}
		if !queryHashMatches(raw, claims.QueryHash) {
			return fail("invalid_query_payload", "Jwt 토큰의 쿼리 페이로드가 올바르지 않습니다.")
		}
	}
	s.mu.Lock()
	_, used := s.nonces[claims.AccessKey+"|"+claims.Nonce]
	if !used {
		if len(s.nonceOrder) >= upbitMaxNonces {
			for _, n := range s.nonceOrder[:upbitMaxNonces/2] {
				delete(s.nonces, n)
			}
			s.nonceOrder = append([]string(nil), s.nonceOrder[upbitMaxNonces/2:]...)
		}
		k := claims.AccessKey + "|" + claims.Nonce
		s.nonces[k] = struct{}{}
		s.nonceOrder = append(s.nonceOrder, k)
	}
	s.mu.Unlock()
	if used {
		return fail("nonce_used", "이미 요청한 nonce값이 다시 사용되었습니다.")
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
