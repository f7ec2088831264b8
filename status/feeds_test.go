package status

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// TestFeedsCarryNoSession: the new public answers are the same with an
// operator's session cookie as without: no CSRF token, nothing of the
// operator's.
func TestFeedsCarryNoSession(t *testing.T) {
	f := newFixture(t, nil)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	c, _ := login(t, f, testToken)
	if c == nil {
		t.Fatal("login failed")
	}
	for _, path := range []string{"/feed.atom", "/datasets/fred-dgs10/feed.atom", "/api/v2/summary.json", "/api/v2/status.json", "/badge/fred.svg", "/badge/fred/fred-dgs10.svg"} {
		anon := f.get(t, path)
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(c)
		r := f.do(t, req)
		if r.code != 200 || r.body != anon.body || strings.Contains(r.body, "csrf") || strings.Contains(r.body, "/ops") {
			t.Errorf("%s differs with an operator's session cookie, or names the operator's", path)
		}
		if v := r.header.Values("Vary"); !slices.Contains(v, "Accept-Encoding") || slices.Contains(v, "Cookie") {
			t.Errorf("%s: Vary %v", path, v)
		}
	}
}
