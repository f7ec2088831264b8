package connector_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// capture is a server that records every request it receives.
type capture struct {
	mu   sync.Mutex
	reqs []captured
	srv  *httptest.Server
}

type captured struct {
	Method, URL, Body string
	Header            http.Header
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, captured{r.Method, r.URL.String(), string(body), r.Header.Clone()})
	c.mu.Unlock()
	w.Write([]byte(`{"ok":true}`))
}

func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

func newCapture(t *testing.T, tlsOn bool) *capture {
	t.Helper()
	c := &capture{}
	if tlsOn {
		c.srv = httptest.NewTLSServer(c)
	} else {
		c.srv = httptest.NewServer(c)
	}
	t.Cleanup(c.srv.Close)
	return c
}

// trustingClient is a client configured like the shared one that trusts
// httptest's certificate (every httptest TLS server uses the same one).
func trustingClient(srv *httptest.Server) *http.Client {
	c := connector.NewHTTPClient()
	c.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	return c
}

// TestRedirectsStayOnTheProvider: a 302 or 307 to another host or port
// (over https or plain http), or from https to plain http on the same
// host, is refused as BadRequest naming the status and the target host
// (never its query), and the target receives nothing: not KIS's appkey
// and appsecret headers, not a POST body; the provider call went through
// the gate once. A same-host 307 is followed as a call of its own.
func TestRedirectsStayOnTheProvider(t *testing.T) {
	otherHTTP, otherTLS := newCapture(t, false), newCapture(t, true)
	landing := newCapture(t, false)
	provider := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := "?api_key=" + testKey + "&stolen=1"
		switch r.URL.Path {
		case "/302-other-http":
			http.Redirect(w, r, otherHTTP.srv.URL+"/steal"+q, http.StatusFound)
		case "/307-other-http":
			http.Redirect(w, r, otherHTTP.srv.URL+"/steal"+q, http.StatusTemporaryRedirect)
		case "/302-other-https":
			http.Redirect(w, r, otherTLS.srv.URL+"/steal"+q, http.StatusFound)
		case "/307-other-https":
			http.Redirect(w, r, otherTLS.srv.URL+"/steal"+q, http.StatusTemporaryRedirect)
		case "/302-plain-http-same-host":
			http.Redirect(w, r, "http://"+r.Host+"/landing"+q, http.StatusFound)
		case "/307-same-host":
			http.Redirect(w, r, "/landing?x=1", http.StatusTemporaryRedirect)
		case "/landing":
			landing.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(provider.Close)
	otherHost := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }

	for _, tc := range []struct {
		path, method string
		status       int
		target       *capture
		why          string
	}{
		{"/302-other-http", http.MethodGet, 302, otherHTTP, "from https to plain http"},
		{"/307-other-http", http.MethodPost, 307, otherHTTP, "from https to plain http"},
		{"/302-other-https", http.MethodGet, 302, otherTLS, "to another host"},
		{"/307-other-https", http.MethodPost, 307, otherTLS, "to another host"},
		{"/302-plain-http-same-host", http.MethodGet, 302, nil, "from https to plain http"},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/")+"-"+tc.method, func(t *testing.T) {
			rec := &recorder{}
			b := newBase(t, provider.URL, rec, nil, func(o *connector.Options) { o.HTTPClient = trustingClient(provider) })
			key, _ := b.Credential("api_key")
			h := http.Header{}
			h["appkey"] = []string{key}
			h["appsecret"] = []string{key + "-secret"}
			x := connector.Exchange{Call: permit.Call{Provider: "test", Dataset: "ds", Kind: permit.CallData},
				Method: tc.method, URL: b.URL(tc.path, "api_key="+key), Header: h, Classify: accept}
			if tc.method == http.MethodPost {
				x.Body = []byte(`{"appkey":"` + key + `","appsecret":"` + key + `-secret"}`)
			}
			_, err := b.Do(context.Background(), x)
			var e *connector.Error
			if !errors.As(err, &e) || e.Class != connector.BadRequest || e.Status != tc.status || e.Code != strconv.Itoa(tc.status) {
				t.Fatalf("err = %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "HTTP "+strconv.Itoa(tc.status)) || !strings.Contains(msg, tc.why) {
				t.Errorf("message %q does not name the status and why", msg)
			}
			if tc.target != nil && !strings.Contains(msg, otherHost(tc.target.srv)) {
				t.Errorf("message %q does not name the target host %s", msg, otherHost(tc.target.srv))
			}
			if strings.Contains(msg, "stolen") || strings.Contains(msg, "steal") || strings.Contains(msg, testKey) {
				t.Errorf("message %q quotes the target's path or query", msg)
			}
			for _, c := range []*capture{otherHTTP, otherTLS, landing} {
				if got := c.requests(); len(got) != 0 {
					t.Errorf("a server the provider redirected to received %+v", got)
				}
			}
			if len(rec.gated) != 1 || len(rec.observed) != 1 || rec.observed[0].status != tc.status {
				t.Errorf("gate %d calls, observe %+v; want one call, observed with status %d", len(rec.gated), rec.observed, tc.status)
			}
		})
	}

	t.Run("307-same-host-POST", func(t *testing.T) {
		rec := &recorder{}
		b := newBase(t, provider.URL, rec, nil, func(o *connector.Options) { o.HTTPClient = trustingClient(provider) })
		h := http.Header{}
		h["appkey"] = []string{"same-host-key"}
		resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallToken},
			Method: http.MethodPost, URL: b.URL("/307-same-host", ""), Header: h, Body: []byte(`{"a":1}`), Classify: accept})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := landing.requests()
		if len(got) != 1 || got[0].Method != http.MethodPost || got[0].Body != `{"a":1}` || got[0].Header.Get("appkey") != "same-host-key" || got[0].URL != "/landing?x=1" {
			t.Errorf("the same-host hop sent %+v", got)
		}
		if len(rec.gated) != 2 || len(rec.observed) != 2 || rec.observed[0].status != 307 || rec.observed[1].status != 200 {
			t.Errorf("gate %d calls, observe %+v; want each hop gated and observed", len(rec.gated), rec.observed)
		}
		if !strings.HasSuffix(resp.URL, "/landing?x=1") {
			t.Errorf("Response.URL %q is not the last hop's", resp.URL)
		}
	})
}

// TestRedirectLimits: a same-host redirect loop stops after five hops,
// each gated; a 302 would turn a POST into a GET and is refused; so is a
// Location that is not an http(s) URL.
func TestRedirectLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/post":
			http.Redirect(w, r, "/landing", http.StatusFound)
		case "/ftp":
			w.Header().Set("Location", "ftp://files.example/x")
			w.WriteHeader(http.StatusMovedPermanently)
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path, method, why string
		gates             int
	}{
		{"/loop", http.MethodGet, "more than 5 redirects", 6},
		{"/post", http.MethodPost, "turn the POST into a GET", 1},
		{"/ftp", http.MethodGet, "not an http(s) URL", 1},
	} {
		rec := &recorder{}
		b := newBase(t, srv.URL, rec, nil, nil)
		_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
			Method: tc.method, URL: srv.URL + tc.path, Body: []byte("{}"), Classify: accept})
		if c, _ := connector.ClassOf(err); c != connector.BadRequest || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v", tc.path, err)
		}
		if len(rec.gated) != tc.gates {
			t.Errorf("%s: %d gate calls, want %d", tc.path, len(rec.gated), tc.gates)
		}
	}
}
