package connector_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// The permit tests run on a fake clock that moves only where the test
// moves it — inside a dial or a TLS handshake, which "take" connectTime —
// so the clock a server reads when a request arrives is the clock at which
// the request was written, whatever the machine's speed.

const (
	slack       = 50 * time.Millisecond // a permit's window, as the limiter's tolerance
	connectTime = 10 * time.Second      // the dial and handshake timeouts
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// window is a permit as the limiter grants it: send at or after SendAt,
// no later than Deadline.
type window struct{ SendAt, Deadline time.Time }

func (w window) holds(t time.Time) bool { return !t.Before(w.SendAt) && !t.After(w.Deadline) }

// permitGate grants a permit valid from now for slack, and refuses with
// refuse from the refuseAt-th call on (0: never).
type permitGate struct {
	clk      *fakeClock
	mu       sync.Mutex
	permits  []window
	refuseAt int
	refuse   error
}

func (g *permitGate) gate(context.Context, permit.Call) (permit.Permit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refuseAt > 0 && len(g.permits)+1 >= g.refuseAt {
		return permit.Permit{}, g.refuse
	}
	now := g.clk.Now()
	w := window{now, now.Add(slack)}
	g.permits = append(g.permits, w)
	return permit.Permit{Deadline: w.Deadline}, nil
}

func (g *permitGate) granted() []window {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]window(nil), g.permits...)
}

// arrivals records, per path, the clock when each request arrived.
type arrivals struct {
	clk *fakeClock
	mu  sync.Mutex
	at  map[string][]time.Time
}

func (a *arrivals) record(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at == nil {
		a.at = map[string][]time.Time{}
	}
	a.at[path] = append(a.at[path], a.clk.Now())
}

func (a *arrivals) of(path string) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.at[path]...)
}

// slowDialClient is a client configured like the shared one whose dials
// take connectTime on clk, counting them.
func slowDialClient(clk *fakeClock, dials *int, mu *sync.Mutex, delay bool) *http.Client {
	c := connector.NewHTTPClient()
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		mu.Lock()
		*dials++
		mu.Unlock()
		if delay {
			clk.Add(connectTime)
		}
		return conn, err
	}
	return c
}

// assertInsideItsPermit checks that every request arrived inside a permit
// of its own, granted before it.
func assertInsideItsPermit(t *testing.T, at []time.Time, permits []window) {
	t.Helper()
	used := map[int]bool{}
	for _, a := range at {
		found := false
		for i := len(permits) - 1; i >= 0; i-- {
			if !used[i] && permits[i].holds(a) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("a request left at %s, outside every unused permit %v", a.Format("15:04:05.000"), permits)
		}
	}
}

func newPermitBase(t *testing.T, url string, clk *fakeClock, g *permitGate, client *http.Client) *connector.Base {
	return newBase(t, url, nil, nil, func(o *connector.Options) {
		o.Now, o.Limiter, o.HTTPClient = clk.Now, permit.Funcs{WaitFunc: g.gate}, client
	})
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// TestPermitCoversTheMomentTheRequestLeaves: the permit is taken before
// the connection, and the dial takes ten seconds against a 50 ms window.
// The request must not leave on that permit: once connected it asks the
// gate again, keeps its connection (one dial) and is written inside the
// new permit's window.
func TestPermitCoversTheMomentTheRequestLeaves(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	t.Cleanup(srv.Close)
	g := &permitGate{clk: clk}
	var mu sync.Mutex
	dials := 0
	b := newPermitBase(t, srv.URL, clk, g, slowDialClient(clk, &dials, &mu, true))
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	at, permits := arr.of("/x"), g.granted()
	if len(at) != 1 {
		t.Fatalf("%d requests arrived, want 1", len(at))
	}
	if permits[0].holds(at[0]) {
		t.Fatalf("the clock did not move during the dial")
	}
	assertInsideItsPermit(t, at, permits)
	if len(permits) != 2 || dials != 1 {
		t.Errorf("%d permits and %d dials; want the stale permit replaced once on the same connection", len(permits), dials)
	}
}

// TestPermitCoversASlowTLSHandshake: the same with a server whose TLS
// handshake takes ten seconds.
func TestPermitCoversASlowTLSHandshake(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		clk.Add(connectTime)
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	g := &permitGate{clk: clk}
	var mu sync.Mutex
	dials := 0
	client := slowDialClient(clk, &dials, &mu, false)
	client.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	b := newPermitBase(t, srv.URL, clk, g, client)
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	at := arr.of("/x")
	if len(at) != 1 {
		t.Fatalf("%d requests arrived, want 1", len(at))
	}
	assertInsideItsPermit(t, at, g.granted())
	if n := len(g.granted()); n != 2 || dials != 1 {
		t.Errorf("%d permits and %d dials; want the stale permit replaced once on the same connection", n, dials)
	}
}

// TestALateRequestTheGateRefusesIsNeverSent: when the gate refuses the
// new permit (a quota spent, the caller cancelled), the late request is
// not sent at all, the error says why, and its connection is closed rather
// than leaked.
func TestALateRequestTheGateRefusesIsNeverSent(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	refusal := errors.New("daily quota spent")
	g := &permitGate{clk: clk, refuseAt: 2, refuse: refusal}
	var mu sync.Mutex
	dials := 0
	b := newPermitBase(t, srv.URL, clk, g, slowDialClient(clk, &dials, &mu, true))
	_, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if !errors.Is(err, refusal) {
		t.Fatalf("err = %v, want the gate's refusal", err)
	}
	if at := arr.of("/x"); len(at) != 0 {
		t.Errorf("the late request was sent on its stale permit (at %v)", at)
	}
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Error("the connection held for the late request was never closed")
	}
}

// TestATransportRetryGetsAPermitOfItsOwn: net/http sends a GET a second
// time, on a new connection, when a reused connection closes before the
// answer. That second send is a provider call too: it waits for a permit
// of its own.
func TestATransportRetryGetsAPermitOfItsOwn(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arr.record(r.URL.Path)
		if r.URL.Path == "/x" {
			hang := false
			once.Do(func() { hang = true })
			if hang {
				// Read the request, then drop the connection unanswered.
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	g := &permitGate{clk: clk}
	var mu sync.Mutex
	dials := 0
	b := newPermitBase(t, srv.URL, clk, g, slowDialClient(clk, &dials, &mu, false))
	for _, path := range []string{"/warm", "/x"} {
		resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + path, Classify: accept})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
	}
	if at := arr.of("/x"); len(at) != 2 {
		t.Fatalf("/x arrived %d times; the test needs the transport's retry", len(at))
	}
	if n := len(g.granted()); n != 3 {
		t.Errorf("%d permits for 3 sends (/warm, /x and its retry)", n)
	}
}

// tracker records what a permit's SendTracker is told, refusing the
// first refuse Leaves.
type tracker struct {
	mu     sync.Mutex
	refuse int
	events []string
	wrote  time.Time
}

func (k *tracker) Leave(time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.refuse > 0 {
		k.refuse--
		k.events = append(k.events, "refused")
		return false
	}
	k.events = append(k.events, "leave")
	return true
}

func (k *tracker) Wrote(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events, k.wrote = append(k.events, "wrote"), now
}

func (k *tracker) Done(time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events = append(k.events, "done")
}

// TestPermitTrackerFollowsTheRequest: a permit's tracker hears, in order,
// the last check before the write, the write (before the server saw the
// request answered) and the end of the round trip; a tracker that refuses
// the last check makes the request ask the gate again, and leave on the
// new permit only.
func TestPermitTrackerFollowsTheRequest(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	t.Cleanup(srv.Close)
	first, second := &tracker{refuse: 1}, &tracker{}
	var mu sync.Mutex
	calls := 0
	b := newBase(t, srv.URL, nil, nil, func(o *connector.Options) {
		o.Now = clk.Now
		o.Limiter = permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			tr := first
			if calls > 1 {
				tr = second
			}
			return permit.Permit{Deadline: clk.Now().Add(slack), Track: tr}, nil
		}}
	})
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := strings.Join(first.events, ","); got != "refused" {
		t.Errorf("the refusing permit's tracker heard %q, want only its refusal", got)
	}
	if got := strings.Join(second.events, ","); got != "leave,wrote,done" {
		t.Errorf("the second permit's tracker heard %q, want leave,wrote,done", got)
	}
	if calls != 2 || len(arr.of("/x")) != 1 || second.wrote.IsZero() {
		t.Errorf("%d gate calls, %d arrivals, wrote at %s; want 2, 1 and a write time", calls, len(arr.of("/x")), second.wrote)
	}
}

// stallingTracker is a tracker after whose first Leave — the check before
// the write — the process stalls for stall on clk (descheduled on a loaded
// machine), before net/http writes the request.
type stallingTracker struct {
	tracker
	clk   *fakeClock
	stall time.Duration
	once  sync.Once
}

func (k *stallingTracker) Leave(now time.Time) bool {
	ok := k.tracker.Leave(now)
	if ok {
		k.once.Do(func() { k.clk.Add(k.stall) })
	}
	return ok
}

// uncomparableTracker is a tracker whose dynamic type cannot be compared
// (== panics), like the gate's.
type uncomparableTracker struct {
	*stallingTracker
	_ []int
}

// TestAStallAfterThePermitCheckNeverSendsLate: the permit is checked when
// the connection is ready, and then the process stalls past the permit's
// deadline before the request is written (net/http writes from another
// goroutine, which a loaded machine may not run for a while). The request
// must not leave on that permit: it is checked again at the write itself,
// asks for a new one, and is written inside it; the stale permit's tracker
// never hears of a write.
func TestAStallAfterThePermitCheckNeverSendsLate(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	t.Cleanup(srv.Close)
	first := &stallingTracker{clk: clk, stall: 3 * slack}
	second := &tracker{}
	var mu sync.Mutex
	var permits []window
	b := newBase(t, srv.URL, nil, nil, func(o *connector.Options) {
		o.Now = clk.Now
		o.HTTPClient = connector.NewHTTPClient()
		o.Limiter = permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) {
			mu.Lock()
			defer mu.Unlock()
			now := clk.Now()
			permits = append(permits, window{now, now.Add(slack)})
			// Not comparable, as the gate's own trackers are not.
			var tr permit.SendTracker = uncomparableTracker{stallingTracker: first}
			if len(permits) > 1 {
				tr = second
			}
			return permit.Permit{Deadline: now.Add(slack), Track: tr}, nil
		}}
	})
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	at := arr.of("/x")
	if len(at) != 1 {
		t.Fatalf("%d requests arrived, want 1", len(at))
	}
	mu.Lock()
	defer mu.Unlock()
	if permits[0].holds(at[0]) {
		t.Fatalf("the clock did not move between the check and the write")
	}
	assertInsideItsPermit(t, at, permits)
	if !first.tracker.wrote.IsZero() {
		t.Errorf("the stale permit's tracker heard of a write at %s, past its deadline %s", first.tracker.wrote.Format("15:04:05.000"), permits[0].Deadline.Format("15:04:05.000"))
	}
	if got := strings.Join(second.events, ","); got != "leave,wrote,done" {
		t.Errorf("the second permit's tracker heard %q, want leave,wrote,done", got)
	}
}

// stallInWrote is a tracker that stalls for stall on clk when it is first
// told of the write (its bookkeeping waits for a lock on a loaded machine).
type stallInWrote struct {
	tracker
	clk   *fakeClock
	stall time.Duration
	once  sync.Once
}

func (k *stallInWrote) Wrote(now time.Time) {
	k.tracker.Wrote(now)
	k.once.Do(func() { k.clk.Add(k.stall) })
}

// TestAStallInTheWriteBookkeepingNeverSendsLate: the stall comes while the
// tracker is told of the write, after the permit was found in time. The
// clock is read once more as the last step before the write: the request
// asks for a new permit and is written inside it; the stale permit counts
// as written then ended (which only spaces this process's next call).
func TestAStallInTheWriteBookkeepingNeverSendsLate(t *testing.T) {
	clk := &fakeClock{t: t0}
	arr := &arrivals{clk: clk}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { arr.record(r.URL.Path) }))
	t.Cleanup(srv.Close)
	first := &stallInWrote{clk: clk, stall: 3 * slack}
	second := &tracker{}
	var mu sync.Mutex
	var permits []window
	b := newBase(t, srv.URL, nil, nil, func(o *connector.Options) {
		o.Now = clk.Now
		o.HTTPClient = connector.NewHTTPClient()
		o.Limiter = permit.Funcs{WaitFunc: func(context.Context, permit.Call) (permit.Permit, error) {
			mu.Lock()
			defer mu.Unlock()
			now := clk.Now()
			permits = append(permits, window{now, now.Add(slack)})
			var tr permit.SendTracker = first
			if len(permits) > 1 {
				tr = second
			}
			return permit.Permit{Deadline: now.Add(slack), Track: tr}, nil
		}}
	})
	resp, err := b.Do(context.Background(), connector.Exchange{Call: permit.Call{Kind: permit.CallData}, URL: srv.URL + "/x", Classify: accept})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	at := arr.of("/x")
	if len(at) != 1 {
		t.Fatalf("%d requests arrived, want 1", len(at))
	}
	mu.Lock()
	defer mu.Unlock()
	assertInsideItsPermit(t, at, permits)
	if got := strings.Join(first.events, ","); got != "leave,wrote,done" {
		t.Errorf("the stale permit's tracker heard %q, want leave,wrote,done", got)
	}
	if got := strings.Join(second.events, ","); got != "leave,wrote,done" {
		t.Errorf("the second permit's tracker heard %q, want leave,wrote,done", got)
	}
}
