package status

import (
	"encoding/json"
	"html"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// TestSummaryPage: every provider of the registry is on the public page
// with its datasets; a dataset down is shown down with the Statuspage
// word beside it; the probes' internal error text never appears.
func TestSummaryPage(t *testing.T) {
	f := newFixture(t, nil)
	f.observe(t, "ecos-722y001-0101000", testNow.Add(-3*time.Hour), testNow.Add(-time.Hour), 30*time.Minute, watch.OK, 200)
	f.observe(t, "fred-dgs10", testNow.Add(-3*time.Hour), testNow.Add(-2*time.Hour), 20*time.Minute, watch.OK, 200)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour+time.Minute), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	r := f.get(t, "/")
	if r.code != 200 {
		t.Fatalf("GET /: %d\n%s", r.code, r.body)
	}
	for _, p := range f.reg.Providers {
		if len(f.reg.DatasetsOf(p.ID)) > 0 && !strings.Contains(r.body, html.EscapeString(p.Name)) {
			t.Errorf("provider %s (%s) not on the page", p.ID, p.Name)
		}
	}
	for _, d := range f.reg.Datasets {
		if !strings.Contains(r.body, `id="ds-`+d.ID+`"`) {
			t.Errorf("dataset %s has no row", d.ID)
		}
	}
	row := rowOf(t, r.body, "fred-dgs10")
	if !strings.Contains(row, "state-down") || !strings.Contains(row, "Major outage") {
		t.Errorf("fred-dgs10 row does not show down:\n%s", row)
	}
	if !strings.Contains(rowOf(t, r.body, "ecos-722y001-0101000"), "state-up") {
		t.Error("ecos-722y001-0101000 is not up")
	}
	for _, leak := range []string{"secret-internal-detail", "serviceKey", "example.invalid"} {
		if strings.Contains(r.body, leak) {
			t.Errorf("the public page shows %q", leak)
		}
	}
	if !strings.Contains(html.UnescapeString(r.body), UptimeRule) {
		t.Error("the uptime rule is not written on the page")
	}
	if n := strings.Count(rowOf(t, r.body, "fred-dgs10"), "<li class=\"c-"); n != barDays {
		t.Errorf("the bar has %d cells, want %d", n, barDays)
	}
}

func rowOf(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="ds-`+id+`"`)
	if i < 0 {
		t.Fatalf("no row for %s", id)
	}
	j := strings.Index(body[i:], "</tr>")
	return body[i : i+j]
}

// TestSecurityHeaders: every answer carries the CSP, nosniff and
// frame-ancestors, and HTML is UTF-8 with a lang attribute.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, nil)
	for _, path := range []string{"/", "/datasets/ecos-722y001-0101000", "/api/v1/summary.json", "/ops/login", "/nope", "/static/style.css"} {
		r := f.get(t, path)
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, r.header)
		}
		if ct := r.header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") && (ct != "text/html; charset=utf-8" || !strings.Contains(r.body, `<html lang="en">`)) {
			t.Errorf("%s: content type %q or no lang", path, ct)
		}
	}
	if r := f.get(t, "/?"+strings.Repeat("x", 600)); r.code != 414 {
		t.Errorf("a 600-byte query: %d, want 414", r.code)
	}
}

// TestDatasetPageTerms: the attribution text is the registry's, byte for
// byte (Korean included), with the licence type, commercial use and
// redistribution in effect, the terms_source link and the KOGL notice;
// FRED's dataset page carries the not-endorsed notice.
func TestDatasetPageTerms(t *testing.T) {
	f := newFixture(t, nil)
	ds := f.reg.Dataset("ecos-722y001-0101000")
	r := f.get(t, "/datasets/ecos-722y001-0101000")
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	m := regexp.MustCompile(`<blockquote id="attribution" lang="ko">([^<]*)</blockquote>`).FindStringSubmatch(r.body)
	if m == nil || html.UnescapeString(m[1]) != ds.Terms.Attribution {
		t.Errorf("attribution %q, want %q", m, ds.Terms.Attribution)
	}
	for _, want := range []string{"KOGL-1", ds.Terms.Redistribution, "공공누리 제1유형", "https://www.kogl.or.kr/info/licenseType1.do",
		html.EscapeString(f.reg.Provider("ecos").TermsSource.URL)} {
		if !strings.Contains(r.body, want) {
			t.Errorf("dataset page lacks %q", want)
		}
	}
	if !strings.Contains(r.body, `id="term-commercial_use"`) {
		t.Error("no commercial use row")
	}
	// FRED's notice is its registry entry's (providers[].notice): on its
	// dataset pages and once on the summary, on no other provider's page.
	notice := f.reg.Provider("fred").Notice
	if notice == nil || !strings.Contains(notice.Text, "not endorsed") {
		t.Fatalf("the default registry's FRED notice: %+v", notice)
	}
	fr := f.get(t, "/datasets/fred-dgs10")
	if !strings.Contains(fr.body, html.EscapeString(notice.Text)) || !strings.Contains(fr.body, `class="notice notice-fred" lang="en"`) {
		t.Error("FRED's page lacks the not-endorsed notice")
	}
	if strings.Contains(r.body, html.EscapeString(notice.Text)) {
		t.Error("ECOS's page carries FRED's notice")
	}
	if sum := f.get(t, "/"); strings.Count(sum.body, html.EscapeString(notice.Text)) != 1 {
		t.Errorf("the summary shows FRED's notice %d times", strings.Count(sum.body, html.EscapeString(notice.Text)))
	}
	if strings.Contains(fr.body, "공공누리") {
		t.Error("FRED's page carries a KOGL notice")
	}
	for _, path := range []string{"/datasets/nope", "/datasets/" + strings.Repeat("a", 200), "/datasets/%3Cscript%3E"} {
		if r := f.get(t, path); r.code != 404 || strings.Contains(r.body, "<script>") {
			t.Errorf("%s: %d", path, r.code)
		}
	}
	if r := f.get(t, "/datasets/ecos-722y001-0101000?changes=100000"); r.code != 400 {
		t.Errorf("changes=100000: %d, want 400", r.code)
	}
}

// TestKOGLType reads the registry's licence type words.
func TestKOGLType(t *testing.T) {
	for in, want := range map[string]string{"KOGL-1": "1", "kogl type 4": "4", "공공누리 제3유형": "3", "KOGL-5": "", "proprietary": "", "KOGL-12": ""} {
		if got := KOGLType(in); got != want {
			t.Errorf("KOGLType(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSummaryJSON: the Statuspage-like document has every dataset as a
// component with its state and Statuspage status, grouped by provider.
func TestSummaryJSON(t *testing.T) {
	f := newFixture(t, nil)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	r := f.get(t, "/api/v1/summary.json")
	if r.code != 200 || r.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %v", r.code, r.header)
	}
	var doc SummaryDoc
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Components) != len(f.reg.Datasets) {
		t.Errorf("%d components, want %d", len(doc.Components), len(f.reg.Datasets))
	}
	if doc.Status.Indicator != "major" || doc.Status.Counts["down"] != 1 {
		t.Errorf("status %+v", doc.Status)
	}
	for _, c := range doc.Components {
		if c.ID == "fred-dgs10" && (c.State != watch.Down || c.Status != "major_outage" || c.Since == nil || len(c.Uptime) != 4) {
			t.Errorf("fred-dgs10: %+v", c)
		}
	}
	if strings.Contains(r.body, "secret-internal-detail") {
		t.Error("the JSON shows a probe's message")
	}
	d := f.get(t, "/api/v1/datasets/fred-dgs10.json")
	var dd DatasetDoc
	if err := json.Unmarshal([]byte(d.body), &dd); err != nil || d.code != 200 {
		t.Fatalf("%d %v", d.code, err)
	}
	if len(dd.Days) != barDays || len(dd.Changes) == 0 || dd.Terms.Effective.Attribution != f.reg.Dataset("fred-dgs10").Terms.Attribution || len(dd.Notices) != 1 {
		t.Errorf("dataset doc: %d days, %d changes, terms %+v, notices %v", len(dd.Days), len(dd.Changes), dd.Terms.Effective, dd.Notices)
	}
	if r := f.get(t, "/api/v1/datasets/nope.json"); r.code != 404 || !strings.Contains(r.body, `"error"`) {
		t.Errorf("unknown dataset: %d %s", r.code, r.body)
	}
}

// TestPublicPagesCarryNoSession: a public page fetched with an operator's
// session cookie is the page anyone gets: no CSRF token, no logout form,
// so a shared cache cannot hand one operator's token to others. The
// operator page still carries the logout form with the session's token.
func TestPublicPagesCarryNoSession(t *testing.T) {
	f := newFixture(t, nil)
	c, _ := login(t, f, testToken)
	if c == nil {
		t.Fatal("login failed")
	}
	ops := httptest.NewRequest("GET", "/ops", nil)
	ops.AddCookie(c)
	r := f.do(t, ops)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(r.body)
	if r.code != 200 || m == nil || !strings.Contains(r.body, `action="/ops/logout"`) {
		t.Fatalf("/ops with the session: %d, logout form %v", r.code, m != nil)
	}
	token := m[1]
	for _, path := range []string{"/", "/datasets/fred-dgs10", "/datasets/no-such-dataset"} {
		anon := f.get(t, path)
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(c)
		r := f.do(t, req)
		if r.code != anon.code {
			t.Errorf("%s: %d with the session, %d without", path, r.code, anon.code)
		}
		if strings.Contains(r.body, token) || strings.Contains(r.body, `name="csrf"`) || strings.Contains(r.body, "/ops/logout") {
			t.Errorf("%s with an operator's session cookie carries the session's CSRF token or logout form", path)
		}
		if r.body != anon.body {
			t.Errorf("%s differs with an operator's session cookie", path)
		}
	}
}
