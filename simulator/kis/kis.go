// Package kis simulates the KIS Open API (KIS Developers) for the
// simulator: POST /oauth2/tokenP and /oauth2/revokeP, and GET on every path
// a kis dataset declares, told apart by the tr_id header (an unknown tr_id
// gets rt_cd "1", OPSQ0002). The registry provider is found by app key.
//
// Tokens: tokenP more than once per minute (÷ rate scale) per app key
// answers 403 EGW00133 and counts as a violation; a token lives 86,400 s
// (not scaled) and a request within 6 h of the last issuance returns the
// same token. Data calls with an unknown or revoked token get HTTP 500
// EGW00121, with an expired one EGW00123; over the limit EGW00201 (HTTP
// 500, rt_cd "1"). ExpireTokens and InvalidateTokens (POST
// /_sim/kis/expire-tokens[?invalidate=1]) force both for tests.
//
// Charts answer at most 50 rows, newest first; a response header tr_cont
// "F" (first page) or "M" (middle) means more, "D" (only page) or "E"
// (last page) means done; ask again with the same query and request
// header tr_cont: N for the next page. Domestic index data appears from
// 09:00 KST the same day (KRX business days), overseas the next day 07:00
// KST (weekdays; U.S. calendars for U.S. indices).
package kis

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// credential shapes the test keys like real ones: an app key is "PS" and
// 34 letters and digits (36 characters), a secret 180 base64 characters.
func credential(role, env string) string {
	switch role {
	case "app_key":
		return "PS" + simulator.FakeCredential(env, simulator.AlnumMixed, 34)
	case "app_secret":
		return simulator.FakeCredential(env, simulator.Base64Std, 180)
	}
	return ""
}

const ctJSON = "application/json; charset=utf-8"

// provider is the KIS wire of one simulator. Its maps are guarded by the
// simulator's state lock (Host.Locked).
type provider struct {
	h       *simulator.Host
	routes  map[string][]*registry.Dataset // path → datasets
	tokens  map[string]*token
	current map[*simulator.Instance]*token // the token tokenP hands out again
	cursors map[string]int                 // tr_cont paging positions

	serveToken, serveRevoke, serveData simulator.Handler
}

func newProvider(h *simulator.Host) (simulator.Provider, error) {
	p := &provider{h: h, tokens: map[string]*token{}, current: map[*simulator.Instance]*token{}, cursors: map[string]int{},
		routes: simulator.Index(h.Datasets(), func(ds *registry.Dataset) string { return ds.Request.Path })}
	p.serveToken, p.serveRevoke, p.serveData = p.tokenP, p.revokeP, p.data
	return p, nil
}

func init() {
	simulator.Register(simulator.Registration{Connector: "kis", New: newProvider, Credential: credential})
}

// Route claims the token endpoints and the declared dataset paths.
func (p *provider) Route(r *http.Request) (simulator.Route, bool) {
	return p.h.Claim(r, func(path string) (simulator.Route, bool) {
		switch path {
		case "/oauth2/tokenP":
			return simulator.Route{Instance: p.h.First(), Path: path, Serve: p.serveToken}, true
		case "/oauth2/revokeP":
			return simulator.Route{Instance: p.h.First(), Path: path, Serve: p.serveRevoke}, true
		}
		if cands := p.routes[path]; len(cands) > 0 {
			in := p.h.OwnerOr("app_key", r.Header.Get("appkey"), p.h.Instance(cands[0].Provider))
			trID := r.Header.Get("tr_id")
			ds := simulator.BestDataset(cands, in.Provider().ID, r.URL.Query(), func(d *registry.Dataset) bool { return d.Request.TrID == trID })
			return simulator.Route{Instance: in, Dataset: ds, Path: path, Serve: p.serveData}, true
		}
		return simulator.Route{}, false
	})
}

// Reset forgets the paging cursors.
func (p *provider) Reset() { p.cursors = map[string]int{} }

// Control serves POST /_sim/kis/expire-tokens[?invalidate=1].
func (p *provider) Control(w http.ResponseWriter, r *http.Request, rest string) bool {
	if rest != "/expire-tokens" || r.Method != http.MethodPost {
		return false
	}
	var n int
	if v := r.URL.Query().Get("invalidate"); v == "1" || v == "true" {
		n = p.invalidate()
	} else {
		n = p.expire()
	}
	simulator.WriteJSON(w, http.StatusOK, map[string]int{"tokens": n})
	return true
}

// ControlPaths lists the KIS control endpoint.
func (p *provider) ControlPaths() []string { return []string{"/expire-tokens"} }

// KIS token rules.
const (
	tokenLifetime = 86400 * time.Second
	// tokenReuse: a token request within this long of the last issuance
	// returns the same token (not scaled).
	tokenReuse = 6 * time.Hour
)

// token is one issued KIS access token.
type token struct {
	value   string
	prov    *simulator.Instance
	issued  time.Time
	expires time.Time
	revoked bool
}

// gatewayError is the body of a KIS data-endpoint error.
func gatewayError(status int, code, msg, outcome string) *simulator.Reply {
	return envelope(status, "1", code, msg, outcome)
}

// envelope answers with the rt_cd/msg_cd/msg1 envelope alone.
func envelope(status int, rtCd, msgCd, msg, outcome string) *simulator.Reply {
	return simulator.JSONReply(status, ctJSON, outcome, func(w *simulator.JSON) {
		w.KStr("rt_cd", rtCd)
		w.KStr("msg_cd", msgCd)
		w.KStr("msg1", msg)
	})
}

// oauthError is the body of a /oauth2 error.
func oauthError(status int, code, msg, outcome string) *simulator.Reply {
	return simulator.JSONReply(status, ctJSON, outcome, func(w *simulator.JSON) {
		w.KStr("error_description", msg)
		w.KStr("error_code", code)
	})
}

type oauthRequest struct {
	GrantType string `json:"grant_type"`
	AppKey    string `json:"appkey"`
	AppSecret string `json:"appsecret"`
	Token     string `json:"token"`
}

// oauthAuth reads a /oauth2 request body and checks its app key and
// secret.
func (p *provider) oauthAuth(r *http.Request) (*simulator.Instance, oauthRequest, *simulator.Reply) {
	var req oauthRequest
	if r.Method != http.MethodPost {
		return nil, req, oauthError(http.StatusForbidden, "EGW00101", "유효하지 않은 요청입니다.", "error")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil || json.Unmarshal(body, &req) != nil {
		return nil, req, oauthError(http.StatusForbidden, "EGW00101", "유효하지 않은 요청입니다.", "error")
	}
	in := p.h.Owner("app_key", req.AppKey)
	if in == nil {
		return nil, req, oauthError(http.StatusForbidden, "EGW00103", "유효하지 않은 AppKey입니다.", "auth")
	}
	if req.AppSecret == "" || req.AppSecret != in.Credential("app_secret") {
		return nil, req, oauthError(http.StatusForbidden, "EGW00105", "유효하지 않은 AppSecret입니다.", "auth")
	}
	return in, req, nil
}

// tokenP answers POST /oauth2/tokenP.
func (p *provider) tokenP(r *http.Request, _ simulator.Route, _ float64) *simulator.Reply {
	return p.issue(r, false)
}

// issue answers a token request; expired hands out a new token that is
// already expired (the token-expired shape).
func (p *provider) issue(r *http.Request, expired bool) *simulator.Reply {
	in, req, rep := p.oauthAuth(r)
	if rep != nil {
		return rep
	}
	if req.GrantType != "client_credentials" {
		return oauthError(http.StatusForbidden, "EGW00101", "유효하지 않은 grant_type 입니다.", "error")
	}
	var (
		now, expires time.Time
		value        string
		limited      bool
	)
	p.h.Locked(func() {
		now = p.h.Now()
		st := in.TokenScope()
		if st != nil && !st.TokenRequest(now) {
			limited = true
			return
		}
		tok := p.current[in]
		if !expired && tok != nil && !tok.revoked && now.Before(tok.expires) && now.Sub(tok.issued) < tokenReuse {
			if st != nil {
				st.TokenReused()
			}
		} else {
			tok = &token{prov: in, issued: now, expires: now.Add(tokenLifetime)}
			if expired {
				tok.expires = now.Add(-time.Second)
			}
			tok.value = p.tokenValue(in, now, len(p.tokens))
			p.tokens[tok.value] = tok
			p.current[in] = tok
			if st != nil {
				st.TokenIssued()
			}
		}
		value, expires = tok.value, tok.expires
	})
	if limited {
		return oauthError(http.StatusForbidden, "EGW00133", "접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)", "limit")
	}

	remaining := max(int64(expires.Sub(now)/time.Second), 0)
	return simulator.JSONReply(http.StatusOK, ctJSON, "ok", func(w *simulator.JSON) {
		w.KStr("access_token", value)
		w.KStr("access_token_token_expired", expires.In(in.Provider().Location).Format("2006-01-02 15:04:05"))
		w.KStr("token_type", "Bearer")
		w.KInt("expires_in", remaining)
	})
}

// tokenValue builds a JWT-shaped token (HS512, like KIS's), unique per
// issuance and reproducible for a seed.
func (p *provider) tokenValue(in *simulator.Instance, now time.Time, n int) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"HS512"}`))
	var seed [16]byte
	binary.BigEndian.PutUint64(seed[:8], uint64(p.h.Seed()))
	binary.BigEndian.PutUint64(seed[8:], uint64(n))
	mac := hmac.New(sha512.New, append(seed[:], in.Provider().ID...))
	mac.Write([]byte(in.Credential("app_key")))
	id := mac.Sum(nil)
	payload := fmt.Sprintf(`{"sub":"token","aud":"%x-%x-%x-%x-%x","prdt_cd":"","iss":"unogw","exp":%d,"iat":%d,"jti":"%x"}`,
		id[0:4], id[4:6], id[6:8], id[8:10], id[10:16], now.Add(tokenLifetime).Unix(), now.Unix(), id[16:34])
	body := header + "." + enc.EncodeToString([]byte(payload))
	sig := hmac.New(sha512.New, id)
	sig.Write([]byte(body))
	return body + "." + enc.EncodeToString(sig.Sum(nil))
}

// revokeP answers POST /oauth2/revokeP.
func (p *provider) revokeP(r *http.Request, _ simulator.Route, _ float64) *simulator.Reply {
	in, req, rep := p.oauthAuth(r)
	if rep != nil {
		return rep
	}
	var ok bool
	p.h.Locked(func() {
		tok := p.tokens[req.Token]
		ok = tok != nil && tok.prov == in && !tok.revoked
		if ok {
			tok.revoked = true
			if p.current[in] == tok {
				delete(p.current, in)
			}
		}
	})
	if !ok {
		return oauthError(http.StatusForbidden, "EGW00121", "유효하지 않은 token 입니다.", "auth")
	}
	return simulator.JSONReply(http.StatusOK, ctJSON, "ok", func(w *simulator.JSON) {
		w.KInt("code", 200)
		w.KStr("message", "접근토큰 폐기에 성공하였습니다")
	})
}

// ExpireTokens makes every KIS token the simulator issued expired
// (EGW00123 on use); the next /oauth2/tokenP issues a new one. It returns
// how many tokens it expired (0 when the simulator serves no KIS).
func ExpireTokens(s *simulator.Simulator) int {
	if p, ok := s.Provider("kis").(*provider); ok {
		return p.expire()
	}
	return 0
}

// InvalidateTokens forgets every KIS token the simulator issued
// (EGW00121 on use), as after a provider-side revocation, and returns how
// many it forgot.
func InvalidateTokens(s *simulator.Simulator) int {
	if p, ok := s.Provider("kis").(*provider); ok {
		return p.invalidate()
	}
	return 0
}

func (p *provider) expire() int {
	n := 0
	now := p.h.Now()
	p.h.Locked(func() {
		for _, tok := range p.tokens {
			if now.Before(tok.expires) {
				tok.expires = now.Add(-time.Second)
				n++
			}
		}
	})
	return n
}

func (p *provider) invalidate() int {
	n := 0
	p.h.Locked(func() {
		n = len(p.tokens)
		p.tokens = map[string]*token{}
		p.current = map[*simulator.Instance]*token{}
	})
	return n
}

// data answers GET /uapi/… for the registry's KIS datasets.
func (p *provider) data(r *http.Request, rt simulator.Route, fraction float64) *simulator.Reply {
	appKey := r.Header.Get("appkey")
	if appKey == "" {
		return gatewayError(http.StatusInternalServerError, "EGW00102", "AppKey는 필수입니다.", "auth")
	}
	in := p.h.Owner("app_key", appKey)
	if in == nil {
		return gatewayError(http.StatusInternalServerError, "EGW00103", "유효하지 않은 AppKey입니다.", "auth")
	}
	switch secret := r.Header.Get("appsecret"); {
	case secret == "":
		return gatewayError(http.StatusInternalServerError, "EGW00104", "AppSecret는 필수입니다.", "auth")
	case secret != in.Credential("app_secret"):
		return gatewayError(http.StatusInternalServerError, "EGW00105", "유효하지 않은 AppSecret입니다.", "auth")
	}
	bearer := simulator.BearerToken(r.Header.Get("authorization"))
	now := p.h.Now()
	var valid, expired bool
	p.h.Locked(func() {
		tok := p.tokens[bearer]
		valid = tok != nil && !tok.revoked && tok.prov == in
		expired = valid && !now.Before(tok.expires)
	})
	if !valid {
		return gatewayError(http.StatusInternalServerError, "EGW00121", "유효하지 않은 token 입니다.", "auth")
	}
	if expired {
		return gatewayError(http.StatusInternalServerError, "EGW00123", "기간이 만료된 token 입니다.", "auth")
	}
	if adm := p.h.Admit(r, in, rt.Dataset, fraction); !adm.OK {
		return gatewayError(http.StatusInternalServerError, "EGW00201", "초당 거래건수를 초과하였습니다.", "limit")
	}
	trID := r.Header.Get("tr_id")
	if rt.Dataset == nil || rt.Dataset.Request.TrID != trID {
		rep := gatewayError(http.StatusOK, "OPSQ0002", "없는 서비스 코드 입니다", "error")
		rep.Header.Set("tr_id", trID)
		return rep
	}
	return p.chart(r, rt, in, trID, now)
}

// The answer shapes of KIS (simulator.Shaper).
const (
	// shapeTokenExpired: /oauth2/tokenP hands out a token that is already
	// expired (access_token_token_expired in the past, expires_in 0);
	// data calls with it get EGW00123.
	shapeTokenExpired = "token-expired"
	// shapeRtCd: a data call answered with another rt_cd than "0" or
	// "1", e.g. {"rt_cd":"7","msg_cd":"KIOK0007","msg1":"조회할 자료가 없습니다"}.
	shapeRtCd = "rt-cd"
)

// rtCdDefaults are the msg_cd and msg1 of the rt-cd shape by rt_cd.
var rtCdDefaults = map[string][2]string{
	"1": {"EGW00201", "초당 거래건수를 초과하였습니다."},
	"2": {"OPSQ2001", "ERROR : INPUT INVALID_CHECK_INQR_DVSN"},
	"7": {"KIOK0007", "조회할 자료가 없습니다"},
}

// Shapes lists KIS's own shapes.
func (p *provider) Shapes() []simulator.ShapeSpec {
	return []simulator.ShapeSpec{
		{Name: shapeTokenExpired, Doc: "POST /oauth2/tokenP issues a token that is already expired (expires_in 0, access_token_token_expired one second ago); only token requests"},
		{Name: shapeRtCd, Codes: []string{"*"}, TakesMsgCode: true, TakesMessage: true,
			Doc: `a data call answered {"rt_cd":CODE,"msg_cd":…,"msg1":…} in HTTP 200 (rt_cd 7 by default: KIOK0007 "조회할 자료가 없습니다"; 2: OPSQ2001 "ERROR : INPUT INVALID_CHECK_INQR_DVSN")`},
	}
}

// ShapeApplies: token-expired answers token requests only, rt-cd data
// calls only.
func (p *provider) ShapeApplies(shape string, _ *http.Request, rt simulator.Route) bool {
	switch shape {
	case shapeTokenExpired:
		return rt.Path == "/oauth2/tokenP"
	case shapeRtCd:
		return rt.Path != "/oauth2/tokenP" && rt.Path != "/oauth2/revokeP"
	}
	return false
}

// ShapeReply answers with a shape.
func (p *provider) ShapeReply(shape string, r *http.Request, _ simulator.Route, c simulator.ShapeCall) *simulator.Reply {
	switch shape {
	case shapeTokenExpired:
		return p.issue(r, true)
	case shapeRtCd:
		f := c.Fault
		code := f.Code
		if code == "" {
			code = "7"
		}
		def, ok := rtCdDefaults[code]
		if !ok {
			def = rtCdDefaults["2"]
		}
		msgCd, msg := f.MsgCode, f.Message
		if msgCd == "" {
			msgCd = def[0]
		}
		if msg == "" {
			msg = def[1]
		}
		rep := envelope(simulator.OrStatus(f.Status, http.StatusOK), code, msgCd, msg, "fault-shape")
		if trID := r.Header.Get("tr_id"); trID != "" {
			rep.Header.Set("tr_id", trID)
		}
		return rep
	}
	return nil
}
