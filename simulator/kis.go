package simulator

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// KIS token rules.
const (
	kisTokenLifetime = 86400 * time.Second
	// kisTokenReuse: a token request within this long of the last
	// issuance returns the same token (not scaled).
	kisTokenReuse = 6 * time.Hour
)

// kisToken is one issued KIS access token.
type kisToken struct {
	value   string
	prov    *provState
	issued  time.Time
	expires time.Time
	revoked bool
}

// kisGatewayError is the body of a KIS data-endpoint error.
func kisGatewayError(status int, code, msg, outcome string) *reply {
	var w jw
	w.open('{')
	w.kstr("rt_cd", "1")
	w.kstr("msg_cd", code)
	w.kstr("msg1", msg)
	w.close('}')
	return newReply(status, ctJSON, w.b, outcome)
}

// kisOAuthError is the body of a /oauth2 error.
func kisOAuthError(status int, code, msg, outcome string) *reply {
	var w jw
	w.open('{')
	w.kstr("error_description", msg)
	w.kstr("error_code", code)
	w.close('}')
	return newReply(status, ctJSON, w.b, outcome)
}

type kisOAuthRequest struct {
	GrantType string `json:"grant_type"`
	AppKey    string `json:"appkey"`
	AppSecret string `json:"appsecret"`
	Token     string `json:"token"`
}

// kisOAuthAuth reads a /oauth2 request body and checks its app key and
// secret.
func (s *Simulator) kisOAuthAuth(r *http.Request) (*provState, kisOAuthRequest, *reply) {
	var req kisOAuthRequest
	if r.Method != http.MethodPost {
		return nil, req, kisOAuthError(http.StatusForbidden, "EGW00101", "유효하지 않은 요청입니다.", "error")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil || json.Unmarshal(body, &req) != nil {
		return nil, req, kisOAuthError(http.StatusForbidden, "EGW00101", "유효하지 않은 요청입니다.", "error")
	}
	ps := s.credentialOwner("kis", "app_key", req.AppKey)
	if ps == nil {
		return nil, req, kisOAuthError(http.StatusForbidden, "EGW00103", "유효하지 않은 AppKey입니다.", "auth")
	}
	if req.AppSecret == "" || req.AppSecret != ps.creds["app_secret"] {
		return nil, req, kisOAuthError(http.StatusForbidden, "EGW00105", "유효하지 않은 AppSecret입니다.", "auth")
	}
	return ps, req, nil
}

// serveKISToken answers POST /oauth2/tokenP.
func (s *Simulator) serveKISToken(r *http.Request) *reply {
	ps, req, rep := s.kisOAuthAuth(r)
	if rep != nil {
		return rep
	}
	if req.GrantType != "client_credentials" {
		return kisOAuthError(http.StatusForbidden, "EGW00101", "유효하지 않은 grant_type 입니다.", "error")
	}
	s.mu.Lock()
	now := s.now()
	st := ps.tokenScope
	if st != nil && !st.tokenRequest(now) {
		s.mu.Unlock()
		return kisOAuthError(http.StatusForbidden, "EGW00133", "접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)", "limit")
	}
	tok := ps.kisCurrent
	if tok != nil && !tok.revoked && now.Before(tok.expires) && now.Sub(tok.issued) < kisTokenReuse {
		if st != nil {
			st.tokensReused++
		}
	} else {
		tok = &kisToken{prov: ps, issued: now, expires: now.Add(kisTokenLifetime)}
		tok.value = s.kisTokenValue(ps, now, len(s.kisTokens))
		s.kisTokens[tok.value] = tok
		ps.kisCurrent = tok
		if st != nil {
			st.tokensIssued++
		}
	}
	value, expires := tok.value, tok.expires
	s.mu.Unlock()

	remaining := int64(expires.Sub(now) / time.Second)
	var w jw
	w.open('{')
	w.kstr("access_token", value)
	w.kstr("access_token_token_expired", expires.In(ps.p.Location).Format("2006-01-02 15:04:05"))
	w.kstr("token_type", "Bearer")
	w.kint("expires_in", remaining)
	w.close('}')
	return newReply(http.StatusOK, ctJSON, w.b, "ok")
}

// kisTokenValue builds a JWT-shaped token (HS512, like KIS's), unique per
// issuance and reproducible for a seed.
func (s *Simulator) kisTokenValue(ps *provState, now time.Time, n int) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"HS512"}`))
	var seed [16]byte
	binary.BigEndian.PutUint64(seed[:8], uint64(s.seed))
	binary.BigEndian.PutUint64(seed[8:], uint64(n))
	mac := hmac.New(sha512.New, append(seed[:], ps.p.ID...))
	mac.Write([]byte(ps.creds["app_key"]))
	id := mac.Sum(nil)
	payload := fmt.Sprintf(`{"sub":"token","aud":"%x-%x-%x-%x-%x","prdt_cd":"","iss":"unogw","exp":%d,"iat":%d,"jti":"%x"}`,
		id[0:4], id[4:6], id[6:8], id[8:10], id[10:16], now.Add(kisTokenLifetime).Unix(), now.Unix(), id[16:34])
	body := header + "." + enc.EncodeToString([]byte(payload))
	sig := hmac.New(sha512.New, id)
	sig.Write([]byte(body))
	return body + "." + enc.EncodeToString(sig.Sum(nil))
}

// serveKISRevoke answers POST /oauth2/revokeP.
func (s *Simulator) serveKISRevoke(r *http.Request) *reply {
	ps, req, rep := s.kisOAuthAuth(r)
	if rep != nil {
		return rep
	}
	s.mu.Lock()
	tok := s.kisTokens[req.Token]
	ok := tok != nil && tok.prov == ps && !tok.revoked
	if ok {
		tok.revoked = true
		if ps.kisCurrent == tok {
			ps.kisCurrent = nil
		}
	}
	s.mu.Unlock()
	if !ok {
		return kisOAuthError(http.StatusForbidden, "EGW00121", "유효하지 않은 token 입니다.", "auth")
	}
	var w jw
	w.open('{')
	w.kint("code", 200)
	w.kstr("message", "접근토큰 폐기에 성공하였습니다")
	w.close('}')
	return newReply(http.StatusOK, ctJSON, w.b, "ok")
}

// ExpireKISTokens makes every issued KIS token expired (EGW00123 on use);
// the next /oauth2/tokenP issues a new one.
func (s *Simulator) ExpireKISTokens() int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, tok := range s.kisTokens {
		if now.Before(tok.expires) {
			tok.expires = now.Add(-time.Second)
			n++
		}
	}
	return n
}

// InvalidateKISTokens forgets every issued KIS token (EGW00121 on use), as
// after a provider-side revocation.
func (s *Simulator) InvalidateKISTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.kisTokens)
	s.kisTokens = map[string]*kisToken{}
	for _, ps := range s.provs {
		ps.kisCurrent = nil
	}
	return n
}

// serveKISData answers GET /uapi/… for the registry's KIS datasets.
func (s *Simulator) serveKISData(r *http.Request, rt route, fraction float64) *reply {
	appKey := r.Header.Get("appkey")
	if appKey == "" {
		return kisGatewayError(http.StatusInternalServerError, "EGW00102", "AppKey는 필수입니다.", "auth")
	}
	ps := s.credentialOwner("kis", "app_key", appKey)
	if ps == nil {
		return kisGatewayError(http.StatusInternalServerError, "EGW00103", "유효하지 않은 AppKey입니다.", "auth")
	}
	switch secret := r.Header.Get("appsecret"); {
	case secret == "":
		return kisGatewayError(http.StatusInternalServerError, "EGW00104", "AppSecret는 필수입니다.", "auth")
	case secret != ps.creds["app_secret"]:
		return kisGatewayError(http.StatusInternalServerError, "EGW00105", "유효하지 않은 AppSecret입니다.", "auth")
	}
	token := bearer(r.Header.Get("authorization"))
	now := s.now()
	s.mu.Lock()
	tok := s.kisTokens[token]
	valid := tok != nil && !tok.revoked && tok.prov == ps
	expired := valid && !now.Before(tok.expires)
	s.mu.Unlock()
	if !valid {
		return kisGatewayError(http.StatusInternalServerError, "EGW00121", "유효하지 않은 token 입니다.", "auth")
	}
	if expired {
		return kisGatewayError(http.StatusInternalServerError, "EGW00123", "기간이 만료된 token 입니다.", "auth")
	}
	if adm := s.admit(ps, s.datasetScopes(ps, rt.ds), fraction); !adm.ok {
		return kisGatewayError(http.StatusInternalServerError, "EGW00201", "초당 거래건수를 초과하였습니다.", "limit")
	}
	trID := r.Header.Get("tr_id")
	if rt.ds == nil || rt.ds.Request.TrID != trID {
		rep := kisGatewayError(http.StatusOK, "OPSQ0002", "없는 서비스 코드 입니다", "error")
		rep.header.Set("tr_id", trID)
		return rep
	}
	return s.kisChart(r, rt, ps, trID, now)
}

// bearer returns the token of an "Authorization: Bearer …" header.
func bearer(h string) string {
	h = strings.TrimSpace(h)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
