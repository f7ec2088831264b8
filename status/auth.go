package status

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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
	// LoginFailuresPerMinute bounds the wrong tokens one client address
	// may try a minute, through the login form and the Authorization
	// header together: past it that address gets 429 from both until the
	// minute passes, while other addresses are served.
	LoginFailuresPerMinute = 10
	// MaxLoginClients bounds the client addresses whose wrong tokens are
	// counted: past it the address whose last failure is the oldest is
	// forgotten, so addresses sprayed by an attacker cost bounded memory.
	MaxLoginClients = 10000
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

// auth holds the operator token, the login sessions and the wrong tokens
// counted per client address.
type auth struct {
	token   [32]byte // SHA-256 of the token: compared in constant time
	set     bool
	now     func() time.Time
	trusted []netip.Prefix // proxies whose forwarding headers are believed

	mu       sync.Mutex
	sessions map[string]session       // by SHA-256 of the cookie value
	failures map[string]*list.Element // by client key; values *failureRecord
	order    *list.List               // the failureRecords, latest failure first
}

// failureRecord is one client address's recent wrong tokens.
type failureRecord struct {
	client string
	at     []time.Time // the latest LoginFailuresPerMinute at most, oldest first
}

func newAuth(token string, now func() time.Time, trusted []netip.Prefix) *auth {
	a := &auth{now: now, trusted: trusted, sessions: map[string]session{}, failures: map[string]*list.Element{}, order: list.New()}
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
// CSRF token) when by cookie. A bearer token is throttled like the login
// form: a wrong one counts against the client's address, and past the
// limit even the right one is refused with errTooManyFailures.
func (a *auth) authorized(r *http.Request) (bool, *session, error) {
	if !a.set {
		return false, nil, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		client := a.client(r)
		if err := a.try(client); err != nil {
			return false, nil, err
		}
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.tokenOK(strings.TrimSpace(tok)) {
			a.succeeded(client)
			return true, nil, nil
		}
		return false, nil, nil
	}
	s := a.session(r)
	return s != nil, s, nil
}

// session returns the live session the request's cookie names, or nil.
func (a *auth) session(r *http.Request) *session {
	if !a.set {
		return nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := sessionKey(c.Value)
	s, ok := a.sessions[k]
	if !ok {
		return nil
	}
	if !a.now().Before(s.expires) {
		delete(a.sessions, k)
		return nil
	}
	return &s
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
var errTooManyFailures = errors.New("too many wrong tokens from this address in the last minute")

// failureWindow is how long a wrong token counts.
const failureWindow = time.Minute

// try takes one token from client (a key from auth.client) to check: errTooManyFailures past the
// limit, else the try counts as a failure until succeeded takes it back.
// Checking and counting under one lock, tokens sent at once cannot slip
// past the limit between the two.
func (a *auth) try(client string) error {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked(now)
	if a.failedLocked(client, now) >= LoginFailuresPerMinute {
		return errTooManyFailures
	}
	a.recordLocked(client, now)
	return nil
}

// succeeded takes back the failure try counted for a right token.
func (a *auth) succeeded(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.failures[client]
	if !ok {
		return
	}
	rec := e.Value.(*failureRecord)
	rec.at = rec.at[:len(rec.at)-1]
	if len(rec.at) == 0 {
		a.removeLocked(e)
	}
}

// recordLocked counts a failure of client at now.
func (a *auth) recordLocked(client string, now time.Time) {
	if e, ok := a.failures[client]; ok {
		rec := e.Value.(*failureRecord)
		rec.at = append(rec.at, now)
		if n := len(rec.at); n > LoginFailuresPerMinute {
			rec.at = append(rec.at[:0], rec.at[n-LoginFailuresPerMinute:]...)
		}
		a.order.MoveToFront(e)
		return
	}
	for a.order.Len() >= MaxLoginClients {
		a.removeLocked(a.order.Back())
	}
	a.failures[client] = a.order.PushFront(&failureRecord{client: client, at: []time.Time{now}})
}

// pruneLocked forgets the clients whose latest failure is a minute old
// (the list holds them latest first, so they are at its back).
func (a *auth) pruneLocked(now time.Time) {
	cutoff := now.Add(-failureWindow)
	for e := a.order.Back(); e != nil; e = a.order.Back() {
		rec := e.Value.(*failureRecord)
		if rec.at[len(rec.at)-1].After(cutoff) {
			return
		}
		a.removeLocked(e)
	}
}

func (a *auth) removeLocked(e *list.Element) {
	delete(a.failures, e.Value.(*failureRecord).client)
	a.order.Remove(e)
}

// failedLocked is how many failures client has in the minute to now.
func (a *auth) failedLocked(client string, now time.Time) int {
	e, ok := a.failures[client]
	if !ok {
		return 0
	}
	cutoff := now.Add(-failureWindow)
	n := 0
	for _, t := range e.Value.(*failureRecord).at {
		if t.After(cutoff) {
			n++
		}
	}
	return n
}

// tracked is how many client addresses have failures counted.
func (a *auth) tracked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.failures)
}

// ParseTrustedProxies parses the reverse proxies the operator trusts: a
// comma-separated list of CIDR prefixes or single addresses. "" is none.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(part)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR prefix such as 10.0.0.0/8", part)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// trustedAddr reports whether ip is a proxy the operator declared.
func (a *auth) trustedAddr(ip netip.Addr) bool {
	for _, p := range a.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// parseIP reads an address as a peer or a forwarding header gives it,
// with or without a port.
func parseIP(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return ip.WithZone("").Unmap(), true
	}
	return netip.Addr{}, false
}

// peer returns the connection's address and whether it is a trusted proxy.
func (a *auth) peer(r *http.Request) (netip.Addr, bool) {
	ip, ok := parseIP(r.RemoteAddr)
	return ip, ok && a.trustedAddr(ip)
}

// forwarded returns the client a trusted proxy names: in
// X-Forwarded-For, the address left of the last trusted proxy (read right
// to left, skipping trusted proxies; when every hop is trusted, the
// leftmost), else X-Real-IP.
func (a *auth) forwarded(r *http.Request) (netip.Addr, bool) {
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	var last netip.Addr
	found := false
	for i := len(hops) - 1; i >= 0; i-- {
		ip, ok := parseIP(hops[i])
		if !ok {
			break // what a trusted hop would not write: stop at the hops read so far
		}
		last, found = ip, true
		if !a.trustedAddr(ip) {
			return ip, true
		}
	}
	if found {
		return last, true
	}
	return parseIP(r.Header.Get("X-Real-IP"))
}

// client names the request's client for counting wrong tokens: the
// connection's address or, from a trusted proxy, the client it forwards
// for. IPv6 clients count by their /64 (one host commonly holds a whole
// /64); a peer that is not an address counts as itself.
func (a *auth) client(r *http.Request) string {
	ip, trusted := a.peer(r)
	if !ip.IsValid() {
		if len(r.RemoteAddr) > 64 {
			return r.RemoteAddr[:64]
		}
		return r.RemoteAddr
	}
	if trusted {
		if fwd, ok := a.forwarded(r); ok {
			ip = fwd
		}
	}
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// secure reports whether the browser's request came over TLS: to this
// server, or to a trusted proxy that says so in X-Forwarded-Proto (its
// last value: the one the proxy nearest to us set or appended). Cookies
// are then marked Secure and HSTS is sent; from any other peer the header
// is ignored.
func (a *auth) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if _, trusted := a.peer(r); !trusted {
		return false
	}
	vals := r.Header.Values("X-Forwarded-Proto")
	if len(vals) == 0 {
		return false
	}
	last := vals[len(vals)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

func (a *auth) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteStrictMode})
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
