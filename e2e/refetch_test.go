//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/connector"
	_ "github.com/sluicehq/sluice/connector/all"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/registry"
	"github.com/sluicehq/sluice/simulator"
)

// simSeed seeds every simulator of the package: a replay must answer as
// the test's simulator did.
const simSeed = 7

// requestLog is a slog handler for a simulator's debug log: it keeps, by
// dataset, when the simulator last answered a request for it (anything
// but a rate-limit or authentication rejection or an injected fault),
// which is the answer the dataset's stored object holds.
//
// It also counts every request the simulator logged, by dataset.
type requestLog struct {
	mu    *sync.Mutex
	last  map[string]time.Time
	calls map[string]int64
	// limited is when the simulator rejected a call over a limit (the
	// first hundred), by scope.
	limited []limitedCall
}

// limitedCall is one call the simulator rejected over a declared limit.
type limitedCall struct {
	at      time.Time
	dataset string
}

func newRequestLog() *requestLog {
	return &requestLog{mu: &sync.Mutex{}, last: map[string]time.Time{}, calls: map[string]int64{}}
}

func (h *requestLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *requestLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "simulator request" {
		return nil
	}
	var ds, outcome string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "dataset":
			ds = a.Value.String()
		case "outcome":
			outcome = a.Value.String()
		}
		return true
	})
	if ds != "" {
		h.mu.Lock()
		h.calls[ds]++
		h.mu.Unlock()
	}
	if outcome == "limit" {
		h.mu.Lock()
		if len(h.limited) < 100 {
			h.limited = append(h.limited, limitedCall{at: r.Time, dataset: ds})
		}
		h.mu.Unlock()
	}
	if ds == "" || outcome == "limit" || outcome == "auth" || strings.HasPrefix(outcome, "fault-") {
		return nil
	}
	h.mu.Lock()
	h.last[ds] = r.Time
	h.mu.Unlock()
	return nil
}

func (h *requestLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *requestLog) WithGroup(string) slog.Handler      { return h }

// count returns how many requests the simulator logged for a dataset.
func (h *requestLog) count(id string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

// answered returns when the simulator last answered a dataset.
func (h *requestLog) answered(id string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.last[id]
	return t, ok
}

// replay is a second simulator, with the test simulator's registry and
// seed, whose clock the test sets: asked at the moment the test's
// simulator answered a dataset, it answers with the same bytes (the
// simulator's data are a function of the seed, the request and its clock:
// publication times, the TourAPI stream of recently modified entries). Its
// rate scale is so high that replaying a batch's calls in their order
// never meets a limit, and the test simulator's statistics stay as the
// batch left them.
type replay struct {
	at    atomic.Int64 // the clock, Unix nanoseconds
	conns map[string]connector.Connector
}

func (c *cluster) replay() *replay {
	c.t.Helper()
	r := &replay{conns: map[string]connector.Connector{}}
	sim, err := simulator.New(simulator.Options{Registry: reg, RateScale: 1e9, Seed: simSeed,
		Now: func() time.Time { return time.Unix(0, r.at.Load()) }})
	if err != nil {
		c.t.Fatalf("creating the replay simulator: %v", err)
	}
	url, err := sim.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		c.t.Fatalf("starting the replay simulator: %v", err)
	}
	c.t.Cleanup(func() { _ = sim.Close() })
	store, err := tokenstore.NewFile(c.t.TempDir())
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range reg.Providers {
		conn, err := connector.New(p, connector.Options{
			BaseURL:     url,
			Credentials: connector.MapCredentials(simulator.TestCredentials(reg)),
			TokenStore:  store,
		})
		if err != nil {
			c.t.Fatalf("creating the %s connector: %v", p.ID, err)
		}
		r.conns[p.ID] = conn
	}
	return r
}

// set moves the replay's clock to t, never back (the simulator's windows
// assume time moves forward).
func (r *replay) set(t time.Time) {
	if n := t.UnixNano(); n > r.at.Load() {
		r.at.Store(n)
	}
}

// tick moves the clock a millisecond before each call of a window asked
// in several: calls at one instant would meet even the scaled-down
// minimum intervals, and a millisecond changes no publication.
func (r *replay) tick() { r.at.Add(int64(time.Millisecond)) }

// fetched is the simulator's answer to one dataset and date.
type fetched struct {
	body   []byte
	ext    string
	noData bool
}

// fetch asks for a dataset's date as the Ingest activity's daily run
// does — its look-back window, one request or one per period for a
// dataset that asks one period a call, every page of each — with the
// clock at t, and returns the pages back to back.
func (r *replay) fetch(ctx context.Context, ds *registry.Dataset, date string, t time.Time) (fetched, error) {
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return fetched{}, err
	}
	conn := r.conns[ds.Provider]
	if conn == nil {
		return fetched{}, fmt.Errorf("no connector for provider %s", ds.Provider)
	}
	r.set(t)
	var out fetched
	for _, w := range ds.Requests(reg.DailyWindow(ds, day)) {
		req := connector.Request{Dataset: ds, From: w.From, To: w.To}
		if w.IsZero() {
			req.From, req.To = day, day
		}
		for {
			r.tick()
			resp, err := conn.Fetch(ctx, req)
			if class, ok := connector.ClassOf(err); ok && class == connector.NoData {
				break
			}
			if err != nil {
				return fetched{}, fmt.Errorf("replaying %s for %s at %s: %w", ds.ID, date, t.Format(time.RFC3339Nano), err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return fetched{}, fmt.Errorf("replaying %s for %s: reading: %w", ds.ID, date, err)
			}
			if len(body) == 0 {
				return fetched{}, errors.New("empty body")
			}
			out.body, out.ext = append(out.body, body...), resp.Ext
			next, more, err := connector.NextPage(resp)
			if err != nil {
				return fetched{}, fmt.Errorf("replaying %s for %s: paging: %w", ds.ID, date, err)
			}
			if !more || ds.Request.FirstPageOnly() {
				break
			}
			req = next
		}
	}
	out.noData = out.body == nil
	return out, nil
}

// replayAll replays every dataset of ids at the time the test's simulator
// answered it, in that order (the replay's clock only moves forward),
// failing the test on any error.
func (c *cluster) replayAll(ids []string, date string) map[string]fetched {
	c.t.Helper()
	type call struct {
		id string
		at time.Time
	}
	var calls []call
	for _, id := range ids {
		at, ok := c.requests.answered(id)
		if !ok {
			c.t.Errorf("%s: the simulator never answered it", id)
			continue
		}
		calls = append(calls, call{id, at})
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].at.Before(calls[j].at) })
	r := c.replay()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[string]fetched{}
	for _, cl := range calls {
		f, err := r.fetch(ctx, reg.Dataset(cl.id), date, cl.at)
		if err != nil {
			c.t.Errorf("%v", err)
			continue
		}
		out[cl.id] = f
	}
	return out
}
