package kis_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// TestRedirectsNeverCarryTheAppKey: KIS sends appkey and appsecret as
// headers on every call and in the token request's body. A 307 answering
// the token request, or a 302 answering a quotation, that points at
// another host is refused at the boundary: the other host receives
// nothing, the call fails BadRequest naming the status and host, and the
// token endpoint was asked once.
func TestRedirectsNeverCarryTheAppKey(t *testing.T) {
	var mu sync.Mutex
	var stolen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		stolen = append(stolen, r.Method+" "+r.URL.String()+" appkey="+r.Header.Get("appkey")+" appsecret="+r.Header.Get("appsecret")+" body="+string(b))
		mu.Unlock()
		w.Write([]byte(`{"access_token":"stolen-token-0123456789","expires_in":86400,"rt_cd":"0","output2":[{"x":"1"}]}`))
	}))
	t.Cleanup(other.Close)

	for _, tc := range []struct {
		name, path string
		status     int
		kinds      []string
	}{
		{"token request 307", kis.TokenPath, http.StatusTemporaryRedirect, []string{permit.CallToken}},
		{"quotation 302", "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice", http.StatusFound,
			[]string{permit.CallToken, permit.CallData}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == tc.path {
					http.Redirect(w, r, other.URL+"/collect?appkey="+r.Header.Get("appkey"), tc.status)
					return
				}
				e.fake.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			var kinds []string
			c := e.connector(t, func(o *connector.Options) {
				o.BaseURL = front.URL
				o.Limiter = permit.Funcs{WaitFunc: func(_ context.Context, call permit.Call) (permit.Permit, error) {
					kinds = append(kinds, call.Kind)
					return permit.Permit{}, nil
				}}
			})
			_, err := c.Fetch(context.Background(), e.request())
			if cl, _ := connector.ClassOf(err); cl != connector.BadRequest ||
				!strings.Contains(err.Error(), "refusing to follow the redirect to another host") ||
				!strings.Contains(err.Error(), strings.TrimPrefix(other.URL, "http://")) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "collect") {
				t.Errorf("the error quotes the target's path or query: %v", err)
			}
			connectortest.AssertNoSecrets(t, "error", err.Error(), secrets(e)...)
			connectortest.AssertNoSecrets(t, "log", e.log.String(), secrets(e)...)
			mu.Lock()
			got := append([]string(nil), stolen...)
			mu.Unlock()
			if len(got) != 0 {
				t.Errorf("the other host received %q", got)
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("gated calls %v, want %v", kinds, tc.kinds)
			}
		})
	}
}
