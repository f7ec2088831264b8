package simulator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
)

// fakeClock is a settable clock for exact window arithmetic.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// testNow is a Tuesday afternoon in Seoul: every provider has published
// the previous business day.
var testNow = time.Date(2025, 3, 11, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))

func loadFixture(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.LoadDir("testdata/full", registry.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("loading fixture registry: %v", err)
	}
	return reg
}

// harness is a simulator behind a real loopback HTTP server.
type harness struct {
	t     testing.TB
	sim   *Simulator
	srv   *httptest.Server
	clock *fakeClock
	creds map[string]string
}

func newHarness(t testing.TB, mutate func(*Options)) *harness {
	t.Helper()
	reg := loadFixture(t)
	clock := newFakeClock(testNow)
	opts := Options{Registry: reg, Seed: 42, Now: clock.Now}
	if mutate != nil {
		mutate(&opts)
	}
	sim, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &harness{t: t, sim: sim, srv: srv, clock: clock, creds: sim.Credentials()}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (h *harness) do(req *http.Request) response {
	h.t.Helper()
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading %s: %v", req.URL.Path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func (h *harness) get(pathAndQuery string, header map[string]string) response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+pathAndQuery, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return h.do(req)
}

func (h *harness) post(path, body string) response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	return h.do(req)
}

// kisToken issues a KIS token with the test credentials.
func (h *harness) kisToken() string {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "appkey": h.creds["KIS_APP_KEY"], "appsecret": h.creds["KIS_APP_SECRET"]})
	r := h.post("/oauth2/tokenP", string(body))
	if r.status != http.StatusOK {
		h.t.Fatalf("tokenP: %d %s", r.status, r.body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	mustJSON(h.t, r.body, &tok)
	return tok.AccessToken
}

func (h *harness) kisHeaders(token, trID string) map[string]string {
	return map[string]string{
		"content-type":  "application/json; charset=utf-8",
		"authorization": "Bearer " + token,
		"appkey":        h.creds["KIS_APP_KEY"],
		"appsecret":     h.creds["KIS_APP_SECRET"],
		"tr_id":         trID,
		"custtype":      "P",
	}
}

const kisIndexPath = "/uapi/domestic-stock/v1/quotations/inquire-daily-indexchartprice"

func kisIndexQuery(iscd, from, to string) string {
	return kisIndexPath + "?FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=" + iscd + "&FID_INPUT_DATE_1=" + from + "&FID_INPUT_DATE_2=" + to + "&FID_PERIOD_DIV_CODE=D"
}

// fred calls DGS10 (from 1 March 2025 unless query names a start: the
// whole series is 1.5 MB).
func (h *harness) fred(query string) response {
	h.t.Helper()
	if !strings.Contains(query, "observation_start") {
		query += "&observation_start=2025-03-01"
	}
	return h.get("/fred/series/observations?series_id=DGS10&api_key="+h.creds["FRED_API_KEY"]+"&file_type=json"+query, nil)
}

func (h *harness) ecos(rest string) response {
	h.t.Helper()
	return h.get("/api/StatisticSearch/"+h.creds["ECOS_API_KEY"]+"/"+rest, nil)
}

func (h *harness) stats() Stats {
	h.t.Helper()
	r := h.get("/_sim/stats", nil)
	if r.status != http.StatusOK {
		h.t.Fatalf("stats: %d %s", r.status, r.body)
	}
	var st Stats
	mustJSON(h.t, r.body, &st)
	return st
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %q: %v", truncateForLog(b), err)
	}
}

func truncateForLog(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// keysOf returns the keys of a JSON object in document order.
func keysOf(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", truncateForLog(raw))
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func bytesReader(b []byte) io.Reader { return strings.NewReader(string(b)) }
