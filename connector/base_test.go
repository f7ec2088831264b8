package connector_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

const testKey = "TESTKEY-0123456789abcdef"

func testProvider() *registry.Provider {
	return &registry.Provider{ID: "test", Timezone: "UTC", Location: time.UTC, Connector: "test",
		Auth: registry.Auth{Strategy: registry.AuthAPIKeyQuery, Credentials: map[string]string{"api_key": "TEST_KEY"}}}
}

type recorder struct {
	mu       sync.Mutex
	gated    []permit.Call
	observed []observation
}

type observation struct {
	call   permit.Call
	status int
	err    error
}

func (r *recorder) gate(_ context.Context, c permit.Call) (permit.Permit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gated = append(r.gated, c)
	return permit.Permit{}, nil
}

func (r *recorder) observe(_ context.Context, o permit.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed = append(r.observed, observation{o.Call, o.Status, o.Err})
}

func newBase(t *testing.T, url string, rec *recorder, log *connectortest.Log, mod func(*connector.Options)) *connector.Base {
	t.Helper()
	_, lg := connectortest.NewLog()
	if log != nil {
		lg = newLogger(log)
	}
	opts := connector.Options{BaseURL: url, Credentials: connector.MapCredentials(map[string]string{"TEST_KEY": testKey}),
		Logger: lg}
	if rec != nil {
		opts.Limiter = permit.Funcs{WaitFunc: rec.gate, ObserveFunc: rec.observe}
	}
	if mod != nil {
		mod(&opts)
	}
	b, err := connector.NewBase(testProvider(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func accept(connector.Head) connector.Verdict { return connector.Verdict{} }

func TestDoStreamsTheWholeBodyUnchanged(t *testing.T) {
	body := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	body[0] = '{'
	for i := 1; i < len(body); i++ {
		body[i] = byte('a' + rng.IntN(26))
	}
	var ua, gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua, gotKey = r.UserAgent(), r.URL.Query().Get("api_key")
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.Header().Set("Remaining-Req", "group=candles; min=1800; sec=9")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(body)
			zw.Close()
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	rec := &recorder{}
	b := newBase(t, srv.URL, rec, nil, nil)
	key, err := b.Credential("api_key")
	if err != nil {
		t.Fatal(err)
	}
	call := permit.Call{Provider: "test", Dataset: "ds", Kind: permit.CallData}
	var sawHead int
	resp, err := b.Do(context.Background(), connector.Exchange{Call: call, URL: b.URL("/x", "api_key="+key),
		Format: "json", Classify: func(h connector.Head) connector.Verdict {
			sawHead = len(h.Bytes)
			return connector.Verdict{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !bytes.Equal(got, body) {
		t.Fatalf("body changed: got %d bytes, want %d", len(got), len(body))
	}
	if sawHead != connector.HeadSize {
		t.Errorf("classifier saw %d bytes, want HeadSize %d", sawHead, connector.HeadSize)
	}
	if !strings.HasPrefix(ua, "Sluice/") {
		t.Errorf("User-Agent %q does not name Sluice", ua)
	}
	if gotKey != testKey {
		t.Errorf("server got api_key %q", gotKey)
	}
	if resp.Ext != "json" || resp.Header.Get("Remaining-Req") == "" || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("Ext=%q Header=%v", resp.Ext, resp.Header)
	}
	if strings.Contains(resp.URL, testKey) || !strings.Contains(resp.URL, "api_key=REDACTED") {
		t.Errorf("Response.URL not redacted: %s", resp.URL)
	}
	gated := call
	gated.Tracks = true
	if len(rec.gated) != 1 || rec.gated[0] != gated || len(rec.observed) != 1 || rec.observed[0].status != 200 || rec.observed[0].err != nil {
		t.Errorf("gate/observe: %+v %+v", rec.gated, rec.observed)
	}
}

func TestDoClassifiesAndCloses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"RESULT":{"CODE":"ERROR-602","MESSAGE":"` + testKey + `"}}`))
	}))
	defer srv.Close()
	rec := &recorder{}
	log := &connectortest.Log{}
	b := newBase(t, srv.URL, rec, log, nil)
	key, _ := b.Credential("api_key")
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Provider: "test", Dataset: "ds", Kind: permit.CallData},
		URL: b.URL("/api/"+key+"/json", ""), Classify: func(h connector.Head) connector.Verdict {
			if !h.Complete {
				t.Error("small body not complete")
			}
			return connector.Verdict{Err: &connector.Error{Class: connector.RateLimited, Code: "ERROR-602", Message: "echo " + string(h.Bytes), RetryAfter: time.Second}}
		}})
	var e *connector.Error
	if !errors.As(err, &e) || e.Class != connector.RateLimited || e.Provider != "test" || e.Dataset != "ds" || e.Status != 200 {
		t.Fatalf("err = %#v", err)
	}
	connectortest.AssertNoSecrets(t, "error", err.Error(), testKey)
	connectortest.AssertNoSecrets(t, "log", log.String(), testKey)
	if !strings.Contains(log.String(), `"class":"rate_limited"`) {
		t.Errorf("log does not name the class: %s", log.String())
	}
	if len(rec.observed) != 1 || rec.observed[0].err == nil {
		t.Errorf("observe did not see the classified error: %+v", rec.observed)
	}
}

// rawServer answers every connection with raw bytes and closes it.
func rawServer(t *testing.T, response string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				io.WriteString(c, response)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestDoTruncatedBodies(t *testing.T) {
	// Cut inside the head: Do fails.
	short := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"rt_cd\":\"0\"")
	b := newBase(t, short, nil, nil, nil)
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: short + "/x", Classify: accept})
	if c, ok := connector.ClassOf(err); !ok || c != connector.Transient || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("cut in head: %v", err)
	}
	// Cut after the head: reading the body fails.
	long := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{"+strings.Repeat("x", 3*connector.HeadSize))
	b = newBase(t, long, nil, nil, nil)
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: long + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if c, ok := connector.ClassOf(err); !ok || c != connector.Transient {
		t.Fatalf("cut after head: %v", err)
	}
}

func TestDoConnectionFailureIsTransientAndRedacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	log := &connectortest.Log{}
	b := newBase(t, url, nil, log, nil)
	key, _ := b.Credential("api_key")
	_, err = b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData},
		URL: b.URL("/"+key, "api_key="+key), Classify: accept})
	if c, ok := connector.ClassOf(err); !ok || c != connector.Transient {
		t.Fatalf("refused: %v", err)
	}
	connectortest.AssertNoSecrets(t, "error", err.Error(), testKey)
	connectortest.AssertNoSecrets(t, "log", log.String(), testKey)
}

func TestDoStalledBodyIsTransient(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("[" + strings.Repeat(" ", 2*connector.HeadSize)))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	b := newBase(t, srv.URL, nil, nil, func(o *connector.Options) { o.StallTimeout = 50 * time.Millisecond })
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err == nil { // on a loaded machine the stall may already hit the head
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
	}
	if c, ok := connector.ClassOf(err); !ok || c != connector.Transient || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("stalled body: %v", err)
	}
}

func TestDoContextAndGate(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := newBase(t, srv.URL, nil, nil, nil)
	_, err := b.Do(ctx, connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL, Classify: accept})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if _, ok := connector.ClassOf(err); ok || connector.Retryable(err) {
		t.Errorf("a canceled call must not be classified or retryable: %v", err)
	}
	stop := errors.New("limiter closed")
	b = newBase(t, srv.URL, nil, nil, func(o *connector.Options) {
		o.Limiter = permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) { return permit.Permit{}, stop }}
	})
	_, err = b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL, Classify: accept})
	if !errors.Is(err, stop) || hits != 0 {
		t.Errorf("gate error: %v, hits %d", err, hits)
	}
}

func TestNewBaseRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "http://h/?q=1", "::"} {
		p := testProvider()
		if _, err := connector.NewBase(p, connector.Options{BaseURL: u}); err == nil {
			t.Errorf("NewBase(%q) succeeded", u)
		}
	}
}

func TestMissingCredentialIsAuthFailed(t *testing.T) {
	b := newBase(t, "http://127.0.0.1:1", nil, nil, func(o *connector.Options) { o.Credentials = connector.MapCredentials(nil) })
	_, err := b.Credential("api_key")
	if c, _ := connector.ClassOf(err); c != connector.AuthFailed || !strings.Contains(err.Error(), "TEST_KEY") {
		t.Errorf("missing credential: %v", err)
	}
}

func TestDatasetOfAnotherProviderIsRefused(t *testing.T) {
	b := newBase(t, "http://127.0.0.1:1", nil, nil, nil)
	_, _, err := b.Dataset(connector.Request{Dataset: &registry.Dataset{ID: "fred-dgs10", Provider: "fred"}}, false)
	if err == nil || err.Class != connector.BadRequest || !strings.Contains(err.Error(), "belongs to provider fred") {
		t.Errorf("foreign dataset: %v", err)
	}
	if _, _, err := b.Dataset(connector.Request{}, true); err == nil || err.Class != connector.BadRequest {
		t.Errorf("no dataset: %v", err)
	}
	call, ds, err := b.Dataset(connector.Request{Dataset: &registry.Dataset{ID: "mine", Provider: "test"}}, true)
	if err != nil || ds.ID != "mine" || call != (permit.Call{Provider: "test", Dataset: "mine", Kind: permit.CallData, Probe: true}) {
		t.Errorf("own dataset: %+v %v", call, err)
	}
}
