package status

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Environment variables that hold the operator token (the token itself,
// or the name of a file holding it).
const (
	EnvOperatorToken     = "SLUICE_OPERATOR_TOKEN"
	EnvOperatorTokenFile = "SLUICE_OPERATOR_TOKEN_FILE"
)

// MinTokenBytes is the shortest operator token accepted.
const MinTokenBytes = 16

// Session and login limits.
const (
	SessionTTL = 12 * time.Hour
	// MaxSessions bounds the sessions kept; the oldest goes first.
	MaxSessions = 1000
	// LoginFailuresPerMinute bounds wrong tokens tried a minute, over
	// every client: past it the login form answers 429 until the minute
	// passes.
	LoginFailuresPerMinute = 10
)

const (
	sessionCookie = "sluice_ops"
	csrfCookie    = "sluice_csrf"
	csrfField     = "csrf"
	tokenField    = "token"
)

// ValidateToken checks an operator token: at least MinTokenBytes, no
// spaces or control characters.
func ValidateToken(tok string) error {
	if len(tok) < MinTokenBytes {
		return fmt.Errorf("the operator token (%s) is %d bytes: at least %d are required", EnvOperatorToken, len(tok), MinTokenBytes)
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("the operator token (%s) holds a space or control character", EnvOperatorToken)
		}
	}
	return nil
}

// IsLoopback reports whether a listen address HOST:PORT binds the
// loopback interface only (127.0.0.0/8, ::1, localhost). An empty host
// binds every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses to serve on a non-loopback address without an
// operator token.
func CheckListen(addr, token string) error {
	if token != "" {
		return ValidateToken(token)
	}
	if !IsLoopback(addr) {
		return fmt.Errorf("refusing to serve the status pages on %s, which is not a loopback address, without an operator token: set %s or %s",
			addr, EnvOperatorToken, EnvOperatorTokenFile)
	}
	return nil
}

type session struct {
	expires time.Time
	csrf    string
	created time.Time
}

// auth holds the operator token and the login sessions.
type auth struct {
	token [32]byte // SHA-256 of the token: compared in constant time
	set   bool
	now   func() time.Time

	mu       sync.Mutex
	sessions map[string]session // by SHA-256 of the cookie value
	failures []time.Time
}

func newAuth(token string, now func() time.Time) *auth {
	a := &auth{now: now, sessions: map[string]session{}}
	if token != "" {
		a.token, a.set = sha256.Sum256([]byte(token)), true
	}
	return a
}

// tokenOK compares a presented token with the operator's in constant
// time (both hashed first, so neither length leaks).
func (a *auth) tokenOK(presented string) bool {
	if !a.set || presented == "" {
		return false
	}
	h := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(h[:], a.token[:]) == 1
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err)) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessionKey(v string) string {
	h := sha256.Sum256([]byte(v))
	return string(h[:])
}

// authorized reports whether the request carries the operator token as a
// bearer token or a live session cookie, and returns the session (for its
// CSRF token) when by cookie.
func (a *auth) authorized(r *http.Request) (bool, *session) {
	if !a.set {
		return false, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && a.tokenOK(strings.TrimSpace(tok)), nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := sessionKey(c.Value)
	s, ok := a.sessions[k]
	if !ok {
		return false, nil
	}
	if !a.now().Before(s.expires) {
		delete(a.sessions, k)
		return false, nil
	}
	return true, &s
}

// newSession records a session and returns its cookie value.
func (a *auth) newSession() (string, session) {
	v := randomToken()
	now := a.now()
	s := session{expires: now.Add(SessionTTL), csrf: randomToken(), created: now}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, old := range a.sessions {
		if !now.Before(old.expires) {
			delete(a.sessions, k)
		}
	}
	if len(a.sessions) >= MaxSessions {
		var oldest string
		var at time.Time
		for k, old := range a.sessions {
			if oldest == "" || old.created.Before(at) {
				oldest, at = k, old.created
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[sessionKey(v)] = s
	return v, s
}

func (a *auth) endSession(r *http.Request) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return
	}
	a.mu.Lock()
	delete(a.sessions, sessionKey(c.Value))
	a.mu.Unlock()
}

// errTooManyFailures is a login refused by the failure limit.
var errTooManyFailures = errors.New("too many wrong tokens in the last minute")

// failure records a wrong token; allowLogin says whether another try is
// taken now.
func (a *auth) failure() {
	a.mu.Lock()
	a.failures = append(a.failures, a.now())
	a.mu.Unlock()
}

func (a *auth) allowLogin() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cutoff := a.now().Add(-time.Minute)
	keep := a.failures[:0]
	for _, t := range a.failures {
		if t.After(cutoff) {
			keep = append(keep, t)
		}
	}
	a.failures = keep
	if len(a.failures) >= LoginFailuresPerMinute {
		return errTooManyFailures
	}
	return nil
}

// secureRequest reports whether the request came over TLS: cookies are
// then marked Secure.
func secureRequest(r *http.Request) bool { return r.TLS != nil }

func setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
}

// sameOrigin rejects a state-changing request another site made: a
// browser's Sec-Fetch-Site or Origin must name this site when present.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

func csrfOK(formValue, want string) bool {
	return want != "" && formValue != "" && subtle.ConstantTimeCompare([]byte(formValue), []byte(want)) == 1
}
