package connectortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/wire"
)

// Simulator builds a provider simulator serving reg on the clock now (nil:
// the wall clock), every rate multiplied by rateScale, and returns its
// handler. A provider's test file passes simulator/all.Handler: this
// package does not import the simulator, so that connectors and simulator
// stay independent readings of the wire facts.
type Simulator func(reg *registry.Registry, now func() time.Time, rateScale float64) (http.Handler, error)

// Suite is one provider's conformance table, run by Run: every connector
// is driven against the simulator by the same code, and a provider's test
// file holds only its table (in the spirit of rclone's fstests).
type Suite struct {
	// Provider is the registry provider id of the sample registry.
	Provider string
	// Simulator builds the simulator (simulator/all.Handler).
	Simulator Simulator
	// Registry loads the registry every case runs on, with providers.yaml
	// edited by the pairs of old and new strings (Limits for the class
	// cases); nil means RegistryWith, the default providers with the
	// sample datasets. DefaultRegistryWith runs on the default datasets.
	Registry func(t testing.TB, edits ...string) *registry.Registry
	// Dataset is the sample dataset the cases ask for unless they name
	// another.
	Dataset string
	// Scope is the scope instance whose statistics the cases check, e.g.
	// "kis/key".
	Scope string
	// Limits edit providers.yaml for the class cases (pairs of old and new
	// strings, see RegistryWith): a lowered limit binds after a few calls.
	Limits []string
	// Days is how many days after From a class case asks for (To); 0
	// means 1.
	Days int
	// Classes drive the connector into each error class it can produce.
	// The Transient faults of TransientFaults are added for Dataset.
	Classes []ClassCase
	// Fetches are successful calls, their rows read with wire.Extract.
	Fetches []FetchCase
	// Probes are datasets whose Probe must succeed, on one simulator, in
	// order; ProbeStats are checked after the last. Each answer must be
	// shorter than connector.MaxProbeBytes and hold rows that wire.Extract
	// reads under the dataset's facts.
	Probes     []string
	ProbeStats Stats
	// ProbeNewest is, by dataset of Probes, the newest period its probe's
	// answer holds under the suite's clock, as the provider writes it; a
	// dataset listed with "" (or not listed) must not claim to hold the
	// newest period (connector.ProbeAnswer.Newest).
	ProbeNewest map[string]string
	// Throttle is a run over a lowered rate: the first calls are
	// accepted, the rest rate limited.
	Throttle *ThrottleCase
	// Custom are the provider's own cases (KIS tokens, UPBIT blocks).
	Custom []CustomCase
}

// Stats are expected statistics of the simulator (GET /_sim/stats), by
// their JSON names: fields of the suite's scope instance ("accepted",
// "rejected", "violations", "tokens_issued", …), or of the provider when
// prefixed "provider." ("provider.auth_failures").
type Stats map[string]int64

// ClassCase is a call sequence that must end in one error class.
type ClassCase struct {
	Name string
	// Faults are injected before the first call, in the --fault syntax.
	Faults []string
	// Creds override credential values by environment variable name.
	Creds map[string]string
	// Dataset builds the dataset asked for; nil means the suite's.
	Dataset func(*registry.Registry) *registry.Dataset
	// From is the first day asked for; To is From plus the suite's Days.
	From time.Time
	// Limit is connector.Request.Limit.
	Limit int
	// Before are the classes of the calls before the last (0: success).
	Before []connector.Class
	// OtherHost sends the last call from a second connector with a token
	// store of its own (another machine).
	OtherHost bool
	// Clock is the clock of the simulator and the connector; nil means
	// FrozenClock.
	Clock func() time.Time
	// Want is how the last call must fail.
	Want Expect
	// Stats are checked after the last call.
	Stats Stats
}

// Succeed returns n successes, for ClassCase.Before.
func Succeed(n int) []connector.Class { return make([]connector.Class, n) }

// Tri is a yes, no or don't-care expectation.
type Tri int

// The Tri values.
const (
	Any Tri = iota
	Yes
	No
)

// FetchCase is a successful call (or, with Pages, a paged series of calls)
// whose answers are read with wire.Extract under the dataset's facts
// (registry.Dataset.Wire): every row must carry its period, in the
// declared format, and a value; a page must hold at most the facts'
// PageRows rows (or Limit); rows are newest first when the facts say so;
// a wire.Counter the page streams through counts the rows Extract reads.
type FetchCase struct {
	Name string
	// Dataset builds the dataset asked for (a copy of a sample asking
	// for XML, say); nil means the suite's.
	Dataset  func(*registry.Registry) *registry.Dataset
	From, To time.Time
	Limit    int
	// Pages follows Response.More to the last page (at most 20).
	Pages bool
	// More is what the (last) answer's Response.More must say.
	More Tri
	// MinRows and MaxRows bound the rows of all pages; MaxRows 0 is no
	// bound.
	MinRows, MaxRows int
	// Oldest and Newest are the periods expected at the ends, when set.
	Oldest, Newest string
	// Values are value fields every row must carry.
	Values []string
	// Check inspects each page's raw body and response (provider
	// envelopes the rows do not show).
	Check func(t *testing.T, body []byte, resp *connector.Response)
	// Stats are checked after the case.
	Stats Stats
}

// ThrottleCase is Calls calls at once (a frozen clock) over the declared
// limit scaled by RateScale: the first Accepted succeed, the rest fail as
// Want says, each with a RetryAfter when RetryAfter is set.
type ThrottleCase struct {
	RateScale  float64
	Calls      int
	Accepted   int
	Want       Expect
	RetryAfter bool
}

// CustomCase is a provider's own case, run on an Env.
type CustomCase struct {
	Name string
	// RateScale and Clock configure the Env (0: 1; nil: FrozenClock).
	RateScale float64
	Clock     func() time.Time
	Run       func(t *testing.T, e *Env)
}

// Env is one simulator serving the sample registry and what a case needs
// to drive a connector against it.
type Env struct {
	T        *testing.T
	Registry *registry.Registry
	// Provider is the suite's provider.
	Provider *registry.Provider
	// URL is the simulator's base URL.
	URL string
	// Creds are the credentials the connectors get (the simulator's test
	// credentials with the case's overrides).
	Creds map[string]string
	// Now is the clock of the simulator and the connectors.
	Now func() time.Time
	// Log captures every connector's log.
	Log   *Log
	suite *Suite
}

// Run runs every case of s, each on a simulator of its own.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.Simulator == nil || s.Provider == "" {
		t.Fatal("connectortest.Run: the suite needs a Provider and a Simulator")
	}
	for _, c := range s.classCases() {
		t.Run("class/"+c.Name, func(t *testing.T) { s.runClass(t, c) })
	}
	for _, c := range s.Fetches {
		t.Run("fetch/"+c.Name, func(t *testing.T) { s.runFetch(t, c) })
	}
	if len(s.Probes) > 0 {
		t.Run("probe", func(t *testing.T) { s.runProbes(t) })
	}
	if s.Throttle != nil {
		t.Run("throttle", func(t *testing.T) { s.runThrottle(t, *s.Throttle) })
	}
	for _, c := range s.Custom {
		t.Run("custom/"+c.Name, func(t *testing.T) {
			clock := c.Clock
			if clock == nil {
				clock = FrozenClock
			}
			c.Run(t, s.NewEnv(t, s.registry(t), clock, c.RateScale, nil))
		})
	}
}

// registry loads the suite's registry.
func (s *Suite) registry(t testing.TB, edits ...string) *registry.Registry {
	t.Helper()
	if s.Registry != nil {
		return s.Registry(t, edits...)
	}
	return RegistryWith(t, edits...)
}

// classCases are the suite's class cases and the Transient faults every
// connector must classify, injected for the suite's dataset.
func (s *Suite) classCases() []ClassCase {
	out := slices.Clone(s.Classes)
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, fc := range TransientFaults(s.Provider, s.Dataset) {
		out = append(out, ClassCase{Name: "transient: " + fc.Name, Faults: []string{fc.Spec}, From: jan,
			Want: Expect{Class: connector.Transient, Status: fc.Status, Message: fc.Message}})
	}
	return out
}

// NewEnv starts a simulator of reg on clock at rateScale (0: 1) and
// returns the Env; creds override credential values.
func (s *Suite) NewEnv(t *testing.T, reg *registry.Registry, clock func() time.Time, rateScale float64, creds map[string]string) *Env {
	t.Helper()
	h, err := s.Simulator(reg, clock, rateScale)
	if err != nil {
		t.Fatalf("creating the simulator: %v", err)
	}
	e := &Env{T: t, Registry: reg, Provider: reg.Provider(s.Provider), URL: Serve(t, h), Now: clock, suite: s}
	if e.Provider == nil {
		t.Fatalf("the sample registry has no provider %q", s.Provider)
	}
	e.Creds = map[string]string{}
	if code, body := e.Control(http.MethodGet, "/_sim/credentials", ""); code != http.StatusOK || json.Unmarshal(body, &e.Creds) != nil {
		t.Fatalf("reading the simulator's test credentials: %d %s", code, body)
	}
	for k, v := range creds {
		e.Creds[k] = v
	}
	e.Log = &Log{}
	t.Cleanup(func() { AssertNoSecrets(t, "log", e.Log.String(), SecretValuesOf(e.Creds)...) })
	return e
}

// Connector returns a new connector of the suite's provider against the
// simulator, with a token store of its own (a machine of its own).
func (e *Env) Connector(opts ...func(*connector.Options)) connector.Connector {
	e.T.Helper()
	st, err := tokenstore.NewFile(filepath.Join(e.T.TempDir(), "tokens"))
	if err != nil {
		e.T.Fatal(err)
	}
	o := connector.Options{BaseURL: e.URL, Credentials: connector.MapCredentials(e.Creds), TokenStore: st,
		Logger: e.Log.Logger(), Now: e.Now}
	for _, f := range opts {
		f(&o)
	}
	c, err := connector.New(e.Provider, o)
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// Request asks for ds (nil: the suite's dataset) from from to to.
func (e *Env) Request(ds *registry.Dataset, from, to time.Time) connector.Request {
	if ds == nil {
		ds = e.Registry.Dataset(e.suite.Dataset)
	}
	return connector.Request{Dataset: ds, From: from, To: to}
}

// Control sends a request to the simulator's control API and returns the
// status and body.
func (e *Env) Control(method, path, body string) (int, []byte) {
	e.T.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return resp.StatusCode, b
}

// SetFaults replaces the simulator's faults with specs in the --fault
// syntax.
func (e *Env) SetFaults(specs ...string) {
	e.T.Helper()
	if code, body := e.Control(http.MethodPost, "/_sim/faults", strings.Join(specs, "\n")); code != http.StatusOK {
		e.T.Fatalf("setting faults %q: %d %s", specs, code, body)
	}
}

// Stat returns a statistic by its JSON name, of the suite's scope or, with
// the "provider." prefix, of its provider; a missing one fails the test.
func (e *Env) Stat(name string) int64 {
	e.T.Helper()
	return e.StatOf(e.suite.Scope, name)
}

// StatOf is Stat for another scope instance.
func (e *Env) StatOf(scope, name string) int64 {
	e.T.Helper()
	code, body := e.Control(http.MethodGet, "/_sim/stats", "")
	var st struct {
		Scopes    map[string]map[string]any `json:"scopes"`
		Providers map[string]map[string]any `json:"providers"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		e.T.Fatalf("reading the simulator's stats: %d %s", code, body)
	}
	obj, field := st.Scopes[scope], name
	if f, ok := strings.CutPrefix(name, "provider."); ok {
		obj, field = st.Providers[e.suite.Provider], f
	}
	if obj == nil {
		e.T.Fatalf("no statistics for %q (scopes: %v)", scope, keys(st.Scopes))
	}
	v, ok := obj[field]
	n, isNum := v.(float64)
	if !ok {
		n, isNum = 0, true // omitted when zero
	}
	if !isNum {
		e.T.Fatalf("statistic %s of %s is not a number: %v", field, scope, v)
	}
	return int64(n)
}

// AssertStats fails the test for every statistic that differs from want.
func (e *Env) AssertStats(want Stats) {
	e.T.Helper()
	for _, name := range sortedStats(want) {
		if got := e.Stat(name); got != want[name] {
			e.T.Errorf("simulator statistic %s of %s = %d, want %d", name, e.suite.Scope, got, want[name])
		}
	}
}

func (s *Suite) runClass(t *testing.T, c ClassCase) {
	clock := c.Clock
	if clock == nil {
		clock = FrozenClock
	}
	e := s.NewEnv(t, s.registry(t, s.Limits...), clock, 0, c.Creds)
	if len(c.Faults) > 0 {
		e.SetFaults(c.Faults...)
	}
	ds := e.Registry.Dataset(s.Dataset)
	if c.Dataset != nil {
		ds = c.Dataset(e.Registry)
	}
	days := s.Days
	if days == 0 {
		days = 1
	}
	req := e.Request(ds, c.From, c.From.AddDate(0, 0, days))
	req.Limit = c.Limit
	conn := e.Connector()
	for i, want := range c.Before {
		err := connector.Drain(conn.Fetch(context.Background(), req))
		if cl, _ := connector.ClassOf(err); (want == 0 && err != nil) || (want != 0 && cl != want) {
			t.Fatalf("call %d: %v, want %s", i+1, err, classOrSuccess(want))
		}
	}
	if c.OtherHost {
		conn = e.Connector()
	}
	err := connector.Drain(conn.Fetch(context.Background(), req))
	AssertClass(t, fmt.Sprintf("call %d", len(c.Before)+1), err, c.Want)
	var ce *connector.Error
	if errors.As(err, &ce) {
		switch ce.Class {
		case connector.QuotaExhausted:
			now := SimNow.In(e.Provider.Location)
			if want := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, e.Provider.Location); !ce.ResetAt.Equal(want) {
				t.Errorf("ResetAt %v, want the next midnight in %s, %v", ce.ResetAt, e.Provider.Timezone, want)
			}
		case connector.Blocked:
			if !ce.Until.After(SimNow) {
				t.Errorf("blocked until %v, not after now", ce.Until)
			}
		}
	}
	e.AssertStats(c.Stats)
}

func classOrSuccess(c connector.Class) string {
	if c == 0 {
		return "success"
	}
	return "class " + c.String()
}

func (s *Suite) runFetch(t *testing.T, c FetchCase) {
	e := s.NewEnv(t, s.registry(t), SteppingClock(3*time.Second), 0, nil)
	ds := e.Registry.Dataset(s.Dataset)
	if c.Dataset != nil {
		ds = c.Dataset(e.Registry)
	}
	if ds.Wire == nil {
		t.Fatalf("dataset %s has no wire facts: is its connector linked?", ds.ID)
	}
	conn := e.Connector()
	req := e.Request(ds, c.From, c.To)
	req.Limit = c.Limit
	pageMax := ds.Wire.PageRows
	if c.Limit > 0 {
		pageMax = c.Limit
	}
	var rows []wire.Row
	var more bool
	for page := 1; ; page++ {
		req.Page = page
		resp, err := conn.Fetch(context.Background(), req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		count := wire.NewCounter(ds.Wire.Rows)
		body, err := io.ReadAll(io.TeeReader(resp.Body, count))
		resp.Body.Close()
		if err != nil {
			t.Fatalf("page %d: reading: %v", page, err)
		}
		got, err := wire.Extract(body, ds.Wire.Rows)
		if err != nil {
			t.Fatalf("page %d: %v\n%s", page, err, truncate(body))
		}
		// An ingest counts the rows as the page streams (lineage's
		// rowCount): the count is the rows the page holds.
		if n, sure := count.Count(); !sure || n != len(got) {
			t.Errorf("page %d: counted %d rows (sure %v) streaming it; it holds %d", page, n, sure, len(got))
		}
		if len(got) == 0 || len(got) > pageMax {
			t.Errorf("page %d: %d rows, want 1 to %d (the declared rows a call)", page, len(got), pageMax)
		}
		if c.Check != nil {
			c.Check(t, body, resp)
		}
		rows = append(rows, got...)
		more = resp.More
		if !c.Pages || !more {
			break
		}
		if page == 20 {
			t.Fatal("paging never ends")
		}
	}
	switch {
	case c.More == Yes && !more:
		t.Error("the answer does not say more pages follow")
	case c.More == No && more:
		t.Error("the last answer says more pages follow")
	}
	checkRows(t, ds.Wire.Rows, rows, c)
	e.AssertStats(c.Stats)
}

// checkRows checks extracted rows against the case and the facts.
func checkRows(t *testing.T, facts wire.Rows, rows []wire.Row, c FetchCase) {
	t.Helper()
	if len(rows) < c.MinRows || (c.MaxRows > 0 && len(rows) > c.MaxRows) {
		t.Errorf("%d rows, want %d to %d", len(rows), c.MinRows, c.MaxRows)
	}
	for i, r := range rows {
		// The period parses in the declared format and is written in it
		// exactly (a trailing Z aside).
		if w := facts.PeriodFormat.Write(r.Start); r.Start.IsZero() || w != strings.TrimSuffix(r.Period, "Z") {
			t.Errorf("row %d: period %q is not a %s period (reads as %v, writes %q)", i, r.Period, facts.PeriodFormat, r.Start, w)
		}
		if len(r.Values) == 0 {
			t.Errorf("row %d (%s): no value field of %v", i, r.Period, facts.Values)
		}
		for _, v := range c.Values {
			if _, ok := r.Values[v]; !ok {
				t.Errorf("row %d (%s): no %s", i, r.Period, v)
			}
		}
		if facts.NewestFirst && i > 0 && r.Start.After(rows[i-1].Start) {
			t.Errorf("row %d (%s) is newer than row %d (%s), but the rows are declared newest first", i, r.Period, i-1, rows[i-1].Period)
		}
	}
	if len(rows) == 0 {
		return
	}
	oldest, newest := rows[0], rows[0]
	for _, r := range rows {
		if r.Start.Before(oldest.Start) {
			oldest = r
		}
	}
	if n, ok := wire.Newest(rows); ok {
		newest = n
	}
	if c.Oldest != "" && oldest.Period != c.Oldest {
		t.Errorf("oldest period %s, want %s", oldest.Period, c.Oldest)
	}
	if c.Newest != "" && newest.Period != c.Newest {
		t.Errorf("newest period %s, want %s", newest.Period, c.Newest)
	}
}

func (s *Suite) runProbes(t *testing.T) {
	e := s.NewEnv(t, s.registry(t), SteppingClock(3*time.Second), 0, nil)
	conn := e.Connector()
	for _, id := range s.Probes {
		ds := e.Registry.Dataset(id)
		ans, err := conn.Probe(context.Background(), ds)
		if err != nil {
			t.Errorf("probe %s: %v", id, err)
			continue
		}
		if ans.Status != 200 || len(ans.Body) == 0 || ans.Truncated || (ans.Ext != "json" && ans.Ext != "xml") {
			t.Errorf("probe %s: status %d, %d bytes (truncated %v), ext %q", id, ans.Status, len(ans.Body), ans.Truncated, ans.Ext)
		}
		rows, err := wire.Extract(ans.Body, ds.Wire.Rows)
		if err != nil || len(rows) == 0 {
			t.Errorf("probe %s: %d rows, %v\n%s", id, len(rows), err, truncate(ans.Body))
			continue
		}
		want := s.ProbeNewest[id]
		newest, _ := wire.Newest(rows)
		switch {
		case want == "" && ans.Newest:
			t.Errorf("probe %s claims to hold the newest period (%s); the table says it does not", id, newest.Period)
		case want != "" && !ans.Newest:
			t.Errorf("probe %s does not claim to hold the newest period; want it, %s", id, want)
		case want != "" && newest.Period != want:
			t.Errorf("probe %s: newest period %s, want %s", id, newest.Period, want)
		}
	}
	e.AssertStats(s.ProbeStats)
}

func (s *Suite) runThrottle(t *testing.T, c ThrottleCase) {
	e := s.NewEnv(t, s.registry(t), FrozenClock, c.RateScale, nil)
	conn := e.Connector()
	jan := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	req := e.Request(nil, jan, jan.AddDate(0, 0, 1))
	for i := 1; i <= c.Calls; i++ {
		err := connector.Drain(conn.Fetch(context.Background(), req))
		if i <= c.Accepted {
			if err != nil {
				t.Fatalf("call %d of %d accepted: %v", i, c.Accepted, err)
			}
			continue
		}
		AssertClass(t, fmt.Sprintf("call %d", i), err, c.Want)
		var ce *connector.Error
		if c.RetryAfter && (!errors.As(err, &ce) || ce.RetryAfter <= 0) {
			t.Errorf("call %d: no RetryAfter: %v", i, err)
		}
	}
	e.AssertStats(Stats{"accepted": int64(c.Accepted), "rejected": int64(c.Calls - c.Accepted)})
}

// SteppingClock starts at SimNow and moves step ahead on every reading:
// past a provider's minimum interval on every call, whatever the
// machine's speed.
func SteppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := SimNow
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

func sortedStats(s Stats) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}
