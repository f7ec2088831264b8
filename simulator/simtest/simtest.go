// Package simtest is the test harness of the simulator and its provider
// packages: a fixture registry with every provider, a settable clock, a
// simulator behind a loopback HTTP server that stops when the test ends,
// and helpers to read its answers.
//
// It links no provider: a provider's own tests get a simulator serving
// that provider alone (the fixture's other providers answer 404); tests of
// the whole simulator import simulator/all.
package simtest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

//go:embed testdata/full
var fixtureFS embed.FS

// Now is a Tuesday afternoon in Seoul: every provider has published the
// previous business day.
var Now = time.Date(2025, 3, 11, 14, 30, 0, 0, time.FixedZone("KST", 9*3600))

// Fixture loads the fixture registry: every provider with a few datasets
// each, checked at Now.
func Fixture(t testing.TB) *registry.Registry {
	t.Helper()
	sub, err := fs.Sub(fixtureFS, "testdata/full")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(sub, "testdata/full", registry.Options{Now: func() time.Time { return Now }})
	if err != nil {
		t.Fatalf("loading fixture registry: %v", err)
	}
	return reg
}

// Clock is a settable clock for exact window arithmetic.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Harness is a simulator behind a real loopback HTTP server.
type Harness struct {
	T     testing.TB
	Sim   *simulator.Simulator
	Srv   *httptest.Server
	Clock *Clock
	// Creds are the accepted test credentials by environment variable.
	Creds map[string]string
}

// New starts a simulator of the fixture registry, seed 42, on a Clock at
// Now; mutate may change the options first (another registry, a rate
// scale, faults).
func New(t testing.TB, mutate func(*simulator.Options)) *Harness {
	t.Helper()
	clock := NewClock(Now)
	opts := simulator.Options{Registry: Fixture(t), Seed: 42, Now: clock.Now}
	if mutate != nil {
		mutate(&opts)
	}
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &Harness{T: t, Sim: sim, Srv: srv, Clock: clock, Creds: sim.Credentials()}
}

// Response is an answer read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req and reads the answer; a transport error fails the test.
func (h *Harness) Do(req *http.Request) Response {
	h.T.Helper()
	resp, err := h.Srv.Client().Do(req)
	if err != nil {
		h.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.T.Fatalf("reading %s: %v", req.URL.Path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// Get sends GET pathAndQuery with the given headers.
func (h *Harness) Get(pathAndQuery string, header map[string]string) Response {
	h.T.Helper()
	req, err := http.NewRequest(http.MethodGet, h.Srv.URL+pathAndQuery, nil)
	if err != nil {
		h.T.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return h.Do(req)
}

// Post sends POST path with a JSON body.
func (h *Harness) Post(path, body string) Response {
	h.T.Helper()
	req, err := http.NewRequest(http.MethodPost, h.Srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	return h.Do(req)
}

// RawGet returns the response and the error of reading its body, for
// faults that break the connection.
func (h *Harness) RawGet(path string) (*http.Response, []byte, error) {
	resp, err := h.Srv.Client().Get(h.Srv.URL + path)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// Stats reads GET /_sim/stats.
func (h *Harness) Stats() simulator.Stats {
	h.T.Helper()
	r := h.Get("/_sim/stats", nil)
	if r.Status != http.StatusOK {
		h.T.Fatalf("stats: %d %s", r.Status, r.Body)
	}
	var st simulator.Stats
	MustJSON(h.T, r.Body, &st)
	return st
}

// MustJSON decodes b into v or fails the test.
func MustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %q: %v", Truncate(b), err)
	}
}

// Truncate shortens a body for a message.
func Truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// KeysOf returns the keys of a JSON object in document order.
func KeysOf(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", Truncate(raw))
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

// SleepRecorder is a fake Options.Sleep that records and returns at once.
type SleepRecorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

// Sleep records d.
func (s *SleepRecorder) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	return nil
}

// Sleeps returns the recorded sleeps.
func (s *SleepRecorder) Sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.sleeps...)
}

// Clear forgets the recorded sleeps.
func (s *SleepRecorder) Clear() {
	s.mu.Lock()
	s.sleeps = nil
	s.mu.Unlock()
}

// Total returns the sum of the recorded sleeps.
func (s *SleepRecorder) Total() time.Duration {
	var t time.Duration
	for _, d := range s.Sleeps() {
		t += d
	}
	return t
}

// AssertDeterministic checks that two simulators with the same seed answer
// sample's requests byte for byte alike (each answer at least 500 bytes),
// and that a simulator with another seed answers the requests named in
// differ differently.
func AssertDeterministic(t *testing.T, sample func(h *Harness) map[string][]byte, differ ...string) {
	t.Helper()
	a := sample(New(t, nil))
	b := sample(New(t, nil))
	for k, body := range a {
		if len(body) < 500 {
			t.Errorf("%s: only %d bytes: %s", k, len(body), body)
		}
		if !bytes.Equal(body, b[k]) {
			t.Errorf("%s: two simulators with the same seed answered differently", k)
		}
	}
	c := sample(New(t, func(o *simulator.Options) { o.Seed = 7 }))
	for _, k := range differ {
		if bytes.Equal(a[k], c[k]) {
			t.Errorf("%s: a different seed gave the same bytes", k)
		}
	}
}

// EveryDefaultDataset asks a simulator of the embedded default registry
// for every dataset of a connector, once each, with ask (which returns
// whether the answer holds data, and the answer for the message), a few
// seconds apart on the harness clock; at least atLeast datasets must be
// asked, and no scope may record a violation.
func EveryDefaultDataset(t *testing.T, connector string, atLeast int, ask func(h *Harness, ds *registry.Dataset) (bool, Response)) {
	t.Helper()
	reg, err := registry.Default(registry.Options{})
	if err != nil {
		t.Fatalf("loading default registry: %v", err)
	}
	h := New(t, func(o *simulator.Options) { o.Registry = reg; o.RateScale = 1e9 })
	n := 0
	for _, ds := range reg.Datasets {
		if p := reg.Provider(ds.Provider); p.Connector != connector && (p.Connector != "" || p.ID != connector) {
			continue
		}
		h.Clock.Advance(3 * time.Second) // data.go.kr's 2 s minimum interval is not scaled away entirely
		if ok, r := ask(h, ds); !ok {
			t.Errorf("%s: %d %s", ds.ID, r.Status, Truncate(r.Body))
		}
		n++
	}
	if n < atLeast {
		t.Errorf("%d %s datasets asked, want at least %d", n, connector, atLeast)
	}
	for id, s := range h.Stats().Scopes {
		if s.Violations != 0 {
			t.Errorf("%s: %d violations", id, s.Violations)
		}
	}
}

// AssertCredentialShapes checks the fixture's test credentials against a
// pattern per environment variable.
func AssertCredentialShapes(t *testing.T, shapes map[string]string) {
	t.Helper()
	creds := simulator.TestCredentials(Fixture(t))
	for env, pattern := range shapes {
		if !regexp.MustCompile(pattern).MatchString(creds[env]) {
			t.Errorf("%s = %q does not match %s", env, creds[env], pattern)
		}
	}
}
