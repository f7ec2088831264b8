package status

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// from sets a request's peer address.
func from(addr string) func(*http.Request) {
	return func(r *http.Request) { r.RemoteAddr = addr }
}

// bearer asks /ops with a bearer token from a peer address.
func (f *fixture) bearer(t *testing.T, token, remote string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/ops/api/v1/ops.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.RemoteAddr = remote
	return f.do(t, req)
}

// TestLoginFailuresPerClient: wrong tokens from one client address close
// the login to that address only; another client logs in.
func TestLoginFailuresPerClient(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return now } })
	a, b := "198.51.100.7:4000", "203.0.113.9:5000"
	for i := 0; i < LoginFailuresPerMinute; i++ {
		if _, r := loginFrom(t, f, "wrong-token-wrong-token", from(a)); r.code != http.StatusUnauthorized {
			t.Fatalf("try %d from A: %d", i, r.code)
		}
	}
	if c, r := loginFrom(t, f, testToken, from(a)); c != nil || r.code != http.StatusTooManyRequests {
		t.Errorf("client A after the limit: %v %d, want 429", c, r.code)
	}
	if c, r := loginFrom(t, f, testToken, from(b)); c == nil || r.code != http.StatusSeeOther {
		t.Errorf("client B is locked out by A's wrong tokens: %d", r.code)
	}
	if r := f.bearer(t, testToken, b); r.code != http.StatusOK {
		t.Errorf("client B's bearer token is refused after A's wrong tokens: %d", r.code)
	}
	now = now.Add(61 * time.Second)
	if c, _ := loginFrom(t, f, testToken, from(a)); c == nil {
		t.Error("a minute later client A's right token is refused")
	}
}

// TestBearerFailureLimit: the Authorization header is throttled like the
// form: after LoginFailuresPerMinute wrong bearer tokens from one address
// even the right one gets 429 for the minute (and the form too), while
// another address is served.
func TestBearerFailureLimit(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return now } })
	a := "198.51.100.7:4000"
	for i := 0; i < LoginFailuresPerMinute; i++ {
		if r := f.bearer(t, "wrong-token-wrong-token", a); r.code != http.StatusUnauthorized {
			t.Fatalf("wrong bearer %d: %d", i, r.code)
		}
	}
	r := f.bearer(t, testToken, a)
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Errorf("the right bearer token after %d wrong ones: %d (Retry-After %q), want 429", LoginFailuresPerMinute, r.code, r.header.Get("Retry-After"))
	}
	if c, r := loginFrom(t, f, testToken, from(a)); c != nil || r.code != http.StatusTooManyRequests {
		t.Errorf("the form from the same address after wrong bearer tokens: %d, want 429", r.code)
	}
	if r := f.bearer(t, testToken, "203.0.113.9:5000"); r.code != http.StatusOK {
		t.Errorf("another address: %d", r.code)
	}
	now = now.Add(61 * time.Second)
	if r := f.bearer(t, testToken, a); r.code != http.StatusOK {
		t.Errorf("a minute later: %d", r.code)
	}
}

// TestLoginFailuresBounded: an attacker spraying addresses does not grow
// the failure table past MaxLoginClients; the entries kept are the most
// recent, and entries a minute old are dropped.
func TestLoginFailuresBounded(t *testing.T) {
	now := testNow
	a := newAuth(testToken, func() time.Time { return now }, nil)
	base := netip.MustParseAddr("10.0.0.0")
	ip := base
	for i := 0; i < 3*MaxLoginClients; i++ {
		_ = a.try(ip.String())
		ip = ip.Next()
		if i%1000 == 0 {
			now = now.Add(time.Millisecond)
		}
	}
	if n := a.tracked(); n > MaxLoginClients {
		t.Errorf("%d clients tracked after spraying %d addresses, want at most %d", n, 3*MaxLoginClients, MaxLoginClients)
	}
	// The newest sprayer is still counted; the oldest was evicted.
	for i := 1; i < LoginFailuresPerMinute; i++ {
		_ = a.try(ip.Prev().String())
	}
	if err := a.try(ip.Prev().String()); err == nil {
		t.Error("the most recent client's failures were evicted")
	}
	if err := a.try(base.String()); err != nil {
		t.Errorf("the oldest client is still counted: %v", err)
	}
	now = now.Add(time.Minute)
	_ = a.try("192.0.2.1")
	if n := a.tracked(); n != 1 {
		t.Errorf("%d clients tracked a minute later, want 1 (old entries dropped)", n)
	}
}

// TestClientKey: IPv6 clients count by /64 (one host holds a /64), IPv4
// by address; a peer that is not an address is its own key.
func TestClientKey(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.1:80":               "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.1]:80":      "192.0.2.1",
		"pipe":                       "pipe",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := newAuth(testToken, time.Now, nil).client(r); got != want {
			t.Errorf("client(%q) = %q, want %q", remote, got, want)
		}
	}
}

// TestLoginFailuresBehindProxy: from a trusted proxy the client is the
// address left of it in X-Forwarded-For (or X-Real-IP), so clients behind
// one proxy count apart; from any other peer the headers are ignored and
// a client cannot escape its count by inventing addresses.
func TestLoginFailuresBehindProxy(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.TrustedProxies = proxies })
	via := func(peer string, hdr ...string) func(*http.Request) {
		return func(r *http.Request) {
			r.RemoteAddr = peer
			for i := 0; i+1 < len(hdr); i += 2 {
				r.Header.Add(hdr[i], hdr[i+1])
			}
		}
	}
	for i := 0; i < LoginFailuresPerMinute; i++ {
		// A spoofed leftmost entry does not matter: the client is the
		// address the trusted proxies appended.
		spoof := fmt.Sprintf("192.0.2.%d", 100+i)
		if _, r := loginFrom(t, f, "wrong-token-wrong-token", via("10.1.2.3:80", "X-Forwarded-For", spoof+", 198.51.100.7, 10.9.9.9")); r.code != http.StatusUnauthorized {
			t.Fatalf("try %d: %d", i, r.code)
		}
	}
	if c, r := loginFrom(t, f, testToken, via("10.1.2.3:80", "X-Forwarded-For", "198.51.100.7")); c != nil || r.code != http.StatusTooManyRequests {
		t.Errorf("the client behind the proxy after the limit: %d, want 429", r.code)
	}
	if c, _ := loginFrom(t, f, testToken, via("192.0.2.10:80", "X-Real-IP", "203.0.113.9")); c == nil {
		t.Error("another client behind a trusted proxy is locked out")
	}
	if c, _ := loginFrom(t, f, testToken, via("10.1.2.3:80")); c == nil {
		t.Error("the proxy's own address is locked out by a client behind it")
	}

	// An untrusted peer's headers are ignored: inventing a new
	// X-Forwarded-For on every try does not reset its count.
	for i := 0; i < LoginFailuresPerMinute; i++ {
		if r := f.bearerVia(t, "wrong-token-wrong-token", via("203.0.113.50:80", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i), "X-Real-IP", fmt.Sprintf("198.51.101.%d", i))); r.code != http.StatusUnauthorized {
			t.Fatalf("untrusted try %d: %d", i, r.code)
		}
	}
	if r := f.bearerVia(t, testToken, via("203.0.113.50:80", "X-Forwarded-For", "198.51.100.200")); r.code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer escaped its count with X-Forwarded-For: %d, want 429", r.code)
	}
}

func (f *fixture) bearerVia(t *testing.T, token string, mod func(*http.Request)) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/ops/api/v1/ops.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	mod(req)
	return f.do(t, req)
}

// TestParseTrustedProxies: prefixes and single addresses, and an error
// naming what is neither.
func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8,192.0.2.1 ,, fd00::/8,::1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.1/32", "fd00::/8", "::1/128"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if p, err := ParseTrustedProxies(""); err != nil || len(p) != 0 {
		t.Errorf("empty: %v %v", p, err)
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,proxy.example"); err == nil || !strings.Contains(err.Error(), `"proxy.example"`) {
		t.Errorf("a host name: %v", err)
	}
}

// TestSecureCookiesBehindProxy: behind a trusted proxy that says
// X-Forwarded-Proto: https the session and CSRF cookies are Secure (and
// HSTS is sent); the same header from an untrusted peer, or http from the
// proxy, is not believed.
func TestSecureCookiesBehindProxy(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.TrustedProxies = proxies })
	cookies := func(r response) map[string]*http.Cookie {
		out := map[string]*http.Cookie{}
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			out[c.Name] = c
		}
		return out
	}
	for _, c := range []struct {
		name   string
		peer   string
		proto  []string
		secure bool
	}{
		{"trusted proxy, https", "10.1.2.3:443", []string{"https"}, true},
		{"trusted proxy appended HTTPS", "10.1.2.3:443", []string{"http, HTTPS"}, true},
		{"trusted proxy appended http", "10.1.2.3:443", []string{"https", "http"}, false},
		{"trusted proxy, http", "10.1.2.3:443", []string{"http"}, false},
		{"trusted proxy, none", "10.1.2.3:443", nil, false},
		{"untrusted peer, https", "203.0.113.5:443", []string{"https"}, false},
	} {
		mod := func(r *http.Request) {
			r.RemoteAddr = c.peer
			for _, p := range c.proto {
				r.Header.Add("X-Forwarded-Proto", p)
			}
		}
		greq := httptest.NewRequest(http.MethodGet, "/ops/login", nil)
		mod(greq)
		form := f.do(t, greq)
		if k := cookies(form)[csrfCookie]; k == nil || k.Secure != c.secure {
			t.Errorf("%s: CSRF cookie %+v, want Secure=%v", c.name, k, c.secure)
		}
		if got := form.header.Get("Strict-Transport-Security") != ""; got != c.secure {
			t.Errorf("%s: HSTS sent %v, want %v", c.name, got, c.secure)
		}
		k, r := loginFrom(t, f, testToken, mod)
		if k == nil {
			t.Fatalf("%s: login: %d", c.name, r.code)
		}
		if k.Secure != c.secure {
			t.Errorf("%s: session cookie Secure=%v, want %v", c.name, k.Secure, c.secure)
		}
	}
}

// TestBearerFailureLimitConcurrent: wrong tokens sent at once from one
// address do not slip past the limit between the check and the count:
// at most LoginFailuresPerMinute of them are tried, the rest get 429.
func TestBearerFailureLimitConcurrent(t *testing.T) {
	f := newFixture(t, nil)
	const n = 8 * LoginFailuresPerMinute
	codes := make(chan int, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			codes <- f.bearer(t, "wrong-token-wrong-token", "198.51.100.7:4000").code
		}()
	}
	close(start)
	tried := 0
	for i := 0; i < n; i++ {
		switch c := <-codes; c {
		case http.StatusUnauthorized:
			tried++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("a wrong token: %d", c)
		}
	}
	if tried > LoginFailuresPerMinute {
		t.Errorf("%d wrong tokens tried at once, want at most %d", tried, LoginFailuresPerMinute)
	}
}

// TestTryCountsUntilSucceeded: a try counts as a failure from the moment
// it is taken, so tries in flight at once are bounded too; a right token
// takes its try back.
func TestTryCountsUntilSucceeded(t *testing.T) {
	a := newAuth(testToken, func() time.Time { return testNow }, nil)
	taken := 0
	for i := 0; i < 2*LoginFailuresPerMinute; i++ {
		if a.try("192.0.2.1") == nil {
			taken++
		}
	}
	if taken != LoginFailuresPerMinute {
		t.Errorf("%d tries taken at once, want %d", taken, LoginFailuresPerMinute)
	}
	a.succeeded("192.0.2.1")
	if err := a.try("192.0.2.1"); err != nil {
		t.Errorf("a try taken back is still counted: %v", err)
	}
	for i := 0; i < 3*LoginFailuresPerMinute; i++ {
		if err := a.try("192.0.2.2"); err != nil {
			t.Fatalf("right tokens counted as failures: refused after %d", i)
		}
		a.succeeded("192.0.2.2")
	}
	if n := a.tracked(); n != 1 {
		t.Errorf("%d clients tracked, want 1", n)
	}
}
