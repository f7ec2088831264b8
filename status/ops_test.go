package status

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/ledger"
	"github.com/sluicehq/sluice/watch"
)

// TestOperatorNeedsToken: /ops answers 401 (or sends a browser to the
// login form) without the token, and a wrong bearer token, a token in the
// URL or a cookie nobody issued change nothing; the right bearer token
// opens it.
func TestOperatorNeedsToken(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		name string
		req  func() *http.Request
	}{
		{"nothing", func() *http.Request { return httptest.NewRequest("GET", "/ops", nil) }},
		{"wrong bearer", func() *http.Request {
			r := httptest.NewRequest("GET", "/ops", nil)
			r.Header.Set("Authorization", "Bearer "+testToken+"x")
			return r
		}},
		{"prefix of the token", func() *http.Request {
			r := httptest.NewRequest("GET", "/ops", nil)
			r.Header.Set("Authorization", "Bearer "+testToken[:len(testToken)-1])
			return r
		}},
		{"basic scheme", func() *http.Request {
			r := httptest.NewRequest("GET", "/ops", nil)
			r.Header.Set("Authorization", "Basic "+testToken)
			return r
		}},
		{"token in the URL", func() *http.Request { return httptest.NewRequest("GET", "/ops?token="+testToken, nil) }},
		{"forged cookie", func() *http.Request {
			r := httptest.NewRequest("GET", "/ops", nil)
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: testToken})
			return r
		}},
		{"ops JSON", func() *http.Request { return httptest.NewRequest("GET", "/ops/api/v1/ops.json", nil) }},
	} {
		r := f.do(t, c.req())
		if r.code != http.StatusUnauthorized || strings.Contains(r.body, "확인 필요") || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d (want 401 and nothing of the page)", c.name, r.code)
		}
	}
	if r := f.get(t, "/ops", "Accept", "text/html"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/ops/login" {
		t.Errorf("a browser without a session: %d %q, want a redirect to the login form", r.code, r.header.Get("Location"))
	}
	r := f.get(t, "/ops", "Authorization", "Bearer "+testToken)
	if r.code != 200 || !strings.Contains(r.body, "확인 필요") || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("with the token: %d", r.code)
	}
	if strings.Contains(r.body, testToken) {
		t.Error("the operator page shows the token")
	}
}

// TestOperatorPageContent: every registry finding is listed with its file
// and line; each scope with datasets has a budget row with the gate's
// reservation; a scope whose limiter does not answer says so; stale
// sources are listed by age.
func TestOperatorPageContent(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Limiter = fakeLimiter{"kis/key": {Factor: 0.5, Limits: ledger.Limits{DailyQuota: 1000, Timezone: "Asia/Seoul"}, Now: testNow}}
	})
	r := f.get(t, "/ops", "Authorization", "Bearer "+testToken)
	body := html.UnescapeString(r.body)
	if len(f.reg.Findings) == 0 {
		t.Fatal("the default registry has no finding to show")
	}
	for _, fd := range f.reg.Findings {
		if !strings.Contains(body, fd.Pos.String()) || !strings.Contains(body, fd.Msg) {
			t.Errorf("finding %s not listed", fd)
		}
	}
	unknowns := 0
	for _, fd := range f.reg.Findings {
		if fd.Kind == "unknown" {
			unknowns++
		}
	}
	if got := strings.Count(r.body, `class="finding-unknown"`); got != unknowns {
		t.Errorf("%d unknown findings shown, want %d", got, unknowns)
	}
	for _, sc := range f.reg.Scopes {
		if len(sc.Datasets) == 0 {
			continue
		}
		row := between(t, r.body, `id="scope-`+sc.ID+`"`, "</tr>")
		dem := sc.Demand(f.reg.Defaults.ProbeHeadroom)
		if !strings.Contains(row, `<td class="num">`+itoa(dem.Total)+"<br>") {
			t.Errorf("%s: reservation %d not shown:\n%s", sc.ID, dem.Total, row)
		}
		if sc.ID == "kis/key" {
			if !strings.Contains(row, ">running<") || !strings.Contains(row, ">0.5<") || !strings.Contains(row, ">1,000<") {
				t.Errorf("kis/key limiter state not shown:\n%s", row)
			}
		} else if sc.ID == "upbit/ip" {
			if !strings.Contains(row, "limiter state unavailable") || strings.Contains(row, "connection refused") {
				t.Errorf("upbit/ip: an unreachable limiter is not told apart:\n%s", row)
			}
		} else if !strings.Contains(row, "limiter not running") {
			t.Errorf("%s: no 'limiter not running':\n%s", sc.ID, row)
		}
	}
	if !strings.Contains(body, "verified_at") || !strings.Contains(r.body, "stale") {
		t.Error("no sources by age")
	}
	for _, want := range []string{"No Temporal connection: schedules are not shown.", "No Temporal connection: backfills are not shown."} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q", want)
		}
	}
}

type fakeLimiter map[string]ratelimit.State

func (f fakeLimiter) State(_ context.Context, id string) (ratelimit.State, error) {
	if s, ok := f[id]; ok {
		return s, nil
	}
	if id == "upbit/ip" {
		return ratelimit.State{}, errors.New("connection refused")
	}
	return ratelimit.State{}, fmt.Errorf("querying limiter: %w", serviceerror.NewNotFound("workflow not found for ID: limiter/"+id))
}

func itoa(n int) string { return thousands(n) }

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("%q not found", start)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}

// login runs the login form and returns the session cookie.
func login(t *testing.T, f *fixture, token string) (*http.Cookie, response) {
	t.Helper()
	return loginFrom(t, f, token)
}

// loginFrom runs the login form with mods applied to both requests.
func loginFrom(t *testing.T, f *fixture, token string, mods ...func(*http.Request)) (*http.Cookie, response) {
	t.Helper()
	greq := httptest.NewRequest(http.MethodGet, "/ops/login", nil)
	for _, m := range mods {
		m(greq)
	}
	form := f.do(t, greq)
	var csrf *http.Cookie
	for _, c := range (&http.Response{Header: form.header}).Cookies() {
		if c.Name == csrfCookie {
			csrf = c
		}
	}
	if csrf == nil || !csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login form's CSRF cookie: %+v", csrf)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form.body)
	if m == nil || m[1] != csrf.Value {
		t.Fatal("the form's CSRF field is not its cookie's value")
	}
	req := httptest.NewRequest("POST", "/ops/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf)
	for _, m := range mods {
		m(req)
	}
	r := f.do(t, req)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			return c, r
		}
	}
	return nil, r
}

// TestLoginForm: the right token through the form sets an HttpOnly,
// SameSite=Strict session cookie (Secure over TLS) that opens /ops; a
// wrong token sets none; a POST without the CSRF cookie, from another
// site, or with the token in the URL is refused; logout needs the
// session's CSRF token and ends the session.
func TestLoginForm(t *testing.T) {
	f := newFixture(t, nil)
	if c, r := login(t, f, "wrong-token-wrong-token"); c != nil || r.code != http.StatusUnauthorized {
		t.Errorf("wrong token: cookie %v, %d", c, r.code)
	}
	c, r := login(t, f, testToken)
	if c == nil || r.code != http.StatusSeeOther {
		t.Fatalf("login: %d", r.code)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.Value == testToken {
		t.Errorf("session cookie %+v", c)
	}
	req := httptest.NewRequest("GET", "/ops", nil)
	req.AddCookie(c)
	ops := f.do(t, req)
	if ops.code != 200 || !strings.Contains(ops.body, "확인 필요") {
		t.Fatalf("/ops with the session: %d", ops.code)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(ops.body)
	if csrf == nil {
		t.Fatal("no logout form")
	}

	// Over TLS the cookie is Secure.
	tf := newFixture(t, nil)
	form := tf.get(t, "/ops/login")
	var cc *http.Cookie
	for _, k := range (&http.Response{Header: form.header}).Cookies() {
		cc = k
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form.body)
	treq := httptest.NewRequest("POST", "https://status.example/ops/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {testToken}}.Encode()))
	treq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	treq.AddCookie(cc)
	tr := tf.do(t, treq)
	secure := false
	for _, k := range (&http.Response{Header: tr.header}).Cookies() {
		if k.Name == sessionCookie {
			secure = k.Secure
		}
	}
	if !secure || tr.header.Get("Strict-Transport-Security") == "" {
		t.Error("over TLS the session cookie is not Secure")
	}

	post := func(path string, form url.Values, mod func(*http.Request)) response {
		req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if mod != nil {
			mod(req)
		}
		return f.do(t, req)
	}
	if r := post("/ops/login", url.Values{"csrf": {"x"}, "token": {testToken}}, nil); r.code != http.StatusForbidden || strings.Contains(r.header.Get("Set-Cookie"), sessionCookie+"=") {
		t.Errorf("login without the CSRF cookie: %d", r.code)
	}
	if r := post("/ops/login?token="+testToken, url.Values{}, nil); r.code != http.StatusBadRequest {
		t.Errorf("login with the token in the URL: %d", r.code)
	}
	if r := post("/ops/login", url.Values{"token": {testToken}}, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }); r.code != http.StatusForbidden {
		t.Errorf("cross-site login: %d", r.code)
	}
	if r := post("/ops/logout", url.Values{"csrf": {"nope"}}, func(r *http.Request) { r.AddCookie(c) }); r.code != http.StatusForbidden {
		t.Errorf("logout with a wrong CSRF token: %d", r.code)
	}
	if r := post("/ops/logout", url.Values{"csrf": {csrf[1]}}, func(r *http.Request) { r.AddCookie(c) }); r.code != http.StatusSeeOther {
		t.Errorf("logout: %d", r.code)
	}
	again := httptest.NewRequest("GET", "/ops", nil)
	again.AddCookie(c)
	if r := f.do(t, again); r.code != http.StatusUnauthorized {
		t.Errorf("/ops after logout: %d", r.code)
	}
}

// TestLoginFailureLimit: after LoginFailuresPerMinute wrong tokens even
// the right one waits for the minute to pass.
func TestLoginFailureLimit(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return now } })
	for i := 0; i < LoginFailuresPerMinute; i++ {
		if _, r := login(t, f, "wrong-token-wrong-token"); r.code != http.StatusUnauthorized {
			t.Fatalf("try %d: %d", i, r.code)
		}
	}
	if c, r := login(t, f, testToken); c != nil || r.code != http.StatusTooManyRequests {
		t.Errorf("after the limit: %v %d", c, r.code)
	}
	now = now.Add(61 * time.Second)
	if c, _ := login(t, f, testToken); c == nil {
		t.Error("a minute later the right token is refused")
	}
}

// TestSessionExpires: a session cookie stops working after SessionTTL.
func TestSessionExpires(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return now } })
	c, _ := login(t, f, testToken)
	now = now.Add(SessionTTL)
	req := httptest.NewRequest("GET", "/ops", nil)
	req.AddCookie(c)
	if r := f.do(t, req); r.code != http.StatusUnauthorized {
		t.Errorf("an expired session: %d", r.code)
	}
}

// TestTokenCompare: the comparison accepts exactly the token.
func TestTokenCompare(t *testing.T) {
	a := newAuth(testToken, time.Now, nil)
	for tok, want := range map[string]bool{testToken: true, testToken + " ": false, "": false, testToken[:10]: false, strings.ToUpper(testToken): false} {
		if got := a.tokenOK(tok); got != want {
			t.Errorf("tokenOK(%q) = %v", tok, got)
		}
	}
	if newAuth("", time.Now, nil).tokenOK("") {
		t.Error("an empty token is accepted when none is set")
	}
}

// TestCheckListen: without a token only loopback addresses are served;
// a short token is refused.
func TestCheckListen(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:0": true, "[::1]:80": true, "127.3.4.5:1": true,
		"0.0.0.0:8080": false, ":8080": false, "192.0.2.1:80": false, "[::]:80": false, "example.com:80": false, "garbage": false} {
		if err := CheckListen(addr, ""); (err == nil) != ok {
			t.Errorf("CheckListen(%q, no token) = %v", addr, err)
		}
	}
	if err := CheckListen("0.0.0.0:8080", testToken); err != nil {
		t.Errorf("with a token: %v", err)
	}
	if err := CheckListen("0.0.0.0:8080", "short"); err == nil {
		t.Error("a 5-byte token is accepted")
	}
	f := newFixture(t, func(c *Config) { c.OperatorToken = "" })
	err := f.srv.Serve(context.Background(), "0.0.0.0:0", nil)
	if err == nil || !strings.Contains(err.Error(), EnvOperatorToken) {
		t.Errorf("Serve on 0.0.0.0 without a token: %v", err)
	}
	if r := f.get(t, "/ops", "Authorization", "Bearer "+testToken); r.code != http.StatusNotFound {
		t.Errorf("/ops without a configured token: %d, want 404 (off)", r.code)
	}
}

// TestTemplateEscaping: text from the store (a Change's summary, an
// event's message) is escaped, never markup.
func TestTemplateEscaping(t *testing.T) {
	f := newFixture(t, nil)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	if _, err := f.store.AddChanges(context.Background(), watch.Change{At: testNow.Add(-time.Hour), Dataset: "fred-dgs10", Kind: watch.ChangeRevision,
		From: evil, To: "2", Period: "2026-11-30", Summary: evil}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.AddEvents(context.Background(), watch.Event{Kind: "ratelimit.backoff", At: testNow.Add(-time.Hour), Scope: "fred/key", Message: evil}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/datasets/fred-dgs10", "/ops"} {
		r := f.get(t, path, "Authorization", "Bearer "+testToken)
		if r.code != 200 {
			t.Fatalf("%s: %d", path, r.code)
		}
		if strings.Contains(r.body, "<script>") || strings.Contains(r.body, "<img") {
			t.Errorf("%s renders markup from the store", path)
		}
		if !strings.Contains(r.body, "&lt;script&gt;") {
			t.Errorf("%s does not show the escaped text", path)
		}
	}
}
